// Plays the tenant: someone who may only write a NetworkAttachmentDefinition, i.e. the inline IPAM config of a
// plugin that runs as root. Each test is one way in that worked before the trust boundary (docs/security.md).
// Runs the packaged executable (HEREABOUTS_BIN may name another build, e.g. an older one to compare).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { tempSuffix } from '../../src/fs/stale-temps.ts';
import { add, conf, everything, SECRET, tenantNode } from './tenant-fixture.ts';

const execKubeconfig = (marker: string): string =>
  [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
    `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /usr/bin/touch, args: ["${marker}"], interactiveMode: Never}}}]`,
    'contexts: [{name: x, context: {cluster: c, user: u}}]',
    'current-context: x',
    '',
  ].join('\n');

test('two configs cannot run a command: log_file may not write a kubeconfig outside the allowed dirs, nor kubeconfig name it', async () => {
  const node = tenantNode();
  const marker = join(node.host, 'pwned');
  const evil = join(node.host, 'evil.kubeconfig');
  // Config 1 smuggles a kubeconfig through log lines (a newline in a logged value) into a file of its choosing.
  const payload = `\n${execKubeconfig(marker)}`;
  const first = await add(
    node,
    conf(node, { log_file: evil, log_level: 'debug', data_dir: `${node.dataDir}${payload}` }),
  );
  assert.equal(first.json?.['code'], 7, first.stdout);
  assert.match(String(first.json['msg']), /ipam\.(log_file|data_dir)/);
  assert.equal(existsSync(evil), false, 'log_file was followed outside the allowed dirs');
  // Config 2 names that file (or any planted one) as its kubeconfig.
  writeFileSync(evil, execKubeconfig(marker));
  const second = await add(
    node,
    conf(node, { datastore: 'kubernetes', data_dir: undefined, kubernetes: { kubeconfig: evil } }),
  );
  assert.equal(second.json?.['code'], 7, second.stdout);
  assert.match(String(second.json['msg']), /ipam\.kubernetes\.kubeconfig .* outside the directories/);
  assert.equal(existsSync(marker), false, 'the exec credential plugin ran');
});

test('a kubeconfig named inline inside an allowed directory may not run an exec credential plugin', async () => {
  const node = tenantNode();
  const marker = join(node.host, 'pwned');
  const kubeconfig = join(node.allowed, 'exec.kubeconfig');
  writeFileSync(kubeconfig, execKubeconfig(marker));
  const out = await add(node, conf(node, { datastore: 'kubernetes', kubernetes: { kubeconfig } }));
  assert.equal(out.json?.['code'], 7, out.stdout);
  assert.match(String(out.json['msg']), /exec credential plugin/);
  assert.equal(existsSync(marker), false, 'the exec credential plugin ran');
});

/** The lines of the plugin's stderr that say it ignored the network configuration's log_file. */
const ignoredLines = (out: { stderr: string }): string[] =>
  out.stderr.split('\n').filter((l) => l.includes("ignoring the network configuration's log_file"));

test('log_file outside the allowed dirs is ignored: the ADD succeeds, says why once, and appends nothing to a host file', async () => {
  const node = tenantNode();
  const keys = join(node.host, 'authorized_keys');
  const before = readFileSync(keys, 'utf8');
  const out = await add(
    node,
    conf(node, {
      log_file: keys,
      log_level: 'debug',
      network_name: 'x',
      range: '10.77.1.0/24\nssh-ed25519 AAAA attacker',
    }),
  );
  assert.equal(out.json?.['code'], 7, out.stdout);
  assert.match(String(out.json['msg']), /ipam\.range/);
  const ok = await add(node, conf(node, { log_file: keys, log_level: 'debug' }));
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.ok(Array.isArray(ok.json?.['ips']), ok.stdout);
  const [line, ...more] = ignoredLines(ok);
  assert.deepEqual(more, [], 'said once');
  const logged = JSON.parse(line ?? 'null') as Record<string, string>;
  assert.equal(logged['level'], 'warning');
  assert.match(
    logged['msg']!,
    /ipam\.log_file ".*\/host\/authorized_keys" is outside the directories .*; logging to stderr instead/,
  );
  assert.equal(readFileSync(keys, 'utf8'), before);
});

test('a Whereabouts NAD with "log_file": "/tmp/whereabouts.log" allocates, and nothing is created at that path', async () => {
  const node = tenantNode();
  const nadPath = '/tmp/whereabouts.log';
  const there = existsSync(nadPath) ? statSync(nadPath) : undefined;
  const planted = join(node.host, 'whereabouts.log');
  // As Whereabouts' README writes it (log_level debug: every line a plugin writes goes somewhere visible).
  const whereabouts = { type: 'whereabouts', range: '192.168.2.225/28', log_file: nadPath, log_level: 'debug' };
  for (const [ipam, path] of [
    [whereabouts, nadPath],
    [{ ...whereabouts, log_file: planted }, planted],
  ] as const) {
    // The default log level, too: the reason is said whatever log_level says.
    for (const level of ['debug', undefined]) {
      const out = await add(node, conf(node, { ...ipam, log_level: level }));
      assert.equal(out.code, 0, out.stdout + out.stderr);
      const ips = out.json?.['ips'] as Array<{ address: string }>;
      assert.match(ips[0]!.address, /^192\.168\.2\.2(2[5-9]|3\d)\/28$/);
      assert.equal(ignoredLines(out).length, 1, out.stderr);
      assert.ok(ignoredLines(out)[0]!.includes(JSON.stringify(path).slice(1, -1)), out.stderr);
    }
  }
  assert.equal(existsSync(planted), false, `${planted} was created`);
  if (there === undefined) assert.equal(existsSync(nadPath), false, `${nadPath} was created`);
  else assert.deepEqual(statSync(nadPath).mtimeMs, there.mtimeMs, `${nadPath} was written`);
});

test('errors never echo a file a tenant points configuration_path or kubernetes.kubeconfig at', async () => {
  const node = tenantNode();
  const secret = join(node.allowed, 'secret');
  writeFileSync(secret, `root:$6$${SECRET}:19000:0:99999:7:::\nwheel:x:10:${SECRET}\n`);
  for (const ipam of [
    { configuration_path: secret },
    { datastore: 'kubernetes', kubernetes: { kubeconfig: secret } },
  ]) {
    const out = await add(node, conf(node, ipam));
    assert.equal(out.json?.['code'], 7, out.stdout);
    assert.ok(!everything(out).includes(SECRET.slice(0, 6)), `leaked: ${out.stdout}`);
    assert.match(String(out.json['msg']), /not valid|not a valid kubeconfig/);
  }
});

test('outside the allowed dirs, an existing and a missing host file give the same answer (no existence oracle)', async () => {
  const node = tenantNode();
  const answer = async (path: string) => {
    const out = await add(node, conf(node, { configuration_path: path }));
    return String(out.json?.['msg']).replace(path, '<path>');
  };
  assert.equal(await answer(join(node.host, 'shadow')), await answer(join(node.host, 'nonexistent')));
});

test('/dev/zero, /dev/urandom and a FIFO as configuration_path or kubeconfig answer at once with code 7', async () => {
  const node = tenantNode();
  const fifo = join(node.allowed, 'fifo');
  execFileSync('mkfifo', [fifo]);
  symlinkSync('/dev/zero', join(node.allowed, 'zero'));
  const targets = ['/dev/zero', '/dev/urandom', fifo, join(node.allowed, 'zero')];
  const env = { HEREABOUTS_ALLOWED_DIRS: `${node.allowed}:/dev` }; // even an operator who allowed /dev
  for (const target of targets) {
    for (const ipam of [
      { configuration_path: target },
      { datastore: 'kubernetes', kubernetes: { kubeconfig: target } },
    ]) {
      const started = Date.now();
      const out = await add({ ...node, env }, conf(node, ipam), {}, 5000);
      assert.equal(out.signal, null, `${target}: killed after ${Date.now() - started} ms (hung or ran away)`);
      assert.equal(out.json?.['code'], 7, `${target}: ${out.stdout}`);
      assert.match(String(out.json['msg']), /not a regular file|symbolic link/);
    }
  }
});

test('names Kubernetes would reject are code 7 at parse time, naming the key', async () => {
  const node = tenantNode();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ network_name: 'a..b' }, /ipam\.network_name/],
    [{ network_name: 'a.-b' }, /ipam\.network_name/],
    [{ range: '::/0' }, /ipam\.range ::\/0/],
    [{ range: '::/128' }, /ipam\.range ::\/128/],
    [{ range: '::1/120' }, /ipam\.range/],
    [{ range: undefined, ipRanges: [{ range: 'fd00::/120' }, { range: '::/128' }] }, /ipam\.ipRanges\[1\]\.range/],
  ];
  for (const [ipam, msg] of cases) {
    const out = await add(node, conf(node, ipam));
    assert.equal(out.json?.['code'], 7, `${JSON.stringify(ipam)}: ${out.stdout}`);
    assert.match(String(out.json['msg']), msg);
  }
  assert.equal(existsSync(node.dataDir), false, 'nothing may be written for a config error');
});

test('GC with cni.dev/valid-attachments nested 20 000 deep is not an internal error', async () => {
  const node = tenantNode();
  const deep = `${'['.repeat(20_000)}1${']'.repeat(20_000)}`;
  const text = JSON.stringify(
    conf(node, {}, { cniVersion: '1.1.0', 'cni.dev/valid-attachments': ['__DEEP__'] }),
  ).replace('"__DEEP__"', deep);
  const out = await add(node, text, { command: 'GC', path: '/usr/lib/cni' });
  assert.notEqual(out.json?.['code'], 999, out.stdout);
  assert.ok(!everything(out).includes('Maximum call stack'), out.stdout);
});

test('the local store refuses a planted network-directory symlink and writes nothing through it', async () => {
  const node = tenantNode();
  const elsewhere = join(node.host, 'elsewhere');
  mkdirSync(elsewhere);
  mkdirSync(node.dataDir, { mode: 0o700 });
  symlinkSync(elsewhere, join(node.dataDir, 'tenant-net'));
  const out = await add(node, conf(node));
  assert.equal(out.json?.['code'], 5, out.stdout);
  assert.match(String(out.json['msg']), /symbolic link/);
  assert.deepEqual(readdirSync(elsewhere), []);
});

test('the local store refuses a foreign-owned, world-writable network directory', async () => {
  const node = tenantNode();
  const dir = join(node.dataDir, 'tenant-net');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chownSync(dir, 65534, 65534);
  execFileSync('chmod', ['0777', dir]);
  const out = await add(node, conf(node));
  assert.equal(out.json?.['code'], 5, out.stdout);
  assert.match(String(out.json['msg']), /owned by uid 65534|writable by group or others/);
  assert.deepEqual(readdirSync(dir), []);
});

test('a planted pool-file symlink is refused without leaking its target', async () => {
  const node = tenantNode();
  const dir = join(node.dataDir, 'tenant-net');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const target = join(node.host, 'token');
  writeFileSync(target, `${SECRET}\n`);
  symlinkSync(target, join(dir, '10.77.0.0-24.json'));
  const out = await add(node, conf(node));
  assert.equal(out.json?.['code'], 5, out.stdout);
  assert.match(String(out.json['msg']), /symbolic link/);
  assert.ok(!everything(out).includes(SECRET.slice(0, 6)), out.stdout);
});

test('temp files of a killed writer are swept by the next write', async () => {
  const node = tenantNode();
  const dir = join(node.dataDir, 'tenant-net');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stale = join(dir, `.10.77.0.0-24.json.tmp-${tempSuffix(4194303)}`); // pid_max here: no such process
  writeFileSync(stale, '{"range":');
  const out = await add(node, conf(node));
  assert.equal(out.code, 0, out.stdout);
  assert.equal(existsSync(stale), false);
});

test('a symlinked directory inside an allowed directory does not lead log_file (ignored) or data_dir (code 7) out of it', async () => {
  const node = tenantNode();
  symlinkSync(node.host, join(node.allowed, 'host-link'));
  const keys = join(node.host, 'authorized_keys');
  const before = readFileSync(keys, 'utf8');
  const viaLink = await add(node, conf(node, { log_file: join(node.allowed, 'host-link', 'authorized_keys') }));
  assert.equal(viaLink.code, 0, viaLink.stdout);
  assert.match(ignoredLines(viaLink)[0] ?? '', /host-link is a symbolic link/);
  const out = await add(node, conf(node, { data_dir: join(node.allowed, 'host-link', 'data') }));
  assert.equal(out.json?.['code'], 7, out.stdout);
  assert.match(String(out.json['msg']), /symbolic link/);
  assert.equal(readFileSync(keys, 'utf8'), before);
  assert.equal(existsSync(join(node.host, 'data')), false);
});
