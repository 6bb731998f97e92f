// The CNI hot path must cost no more Node start-up than `node -e 0`: ADD and DEL on the local store, and VERSION,
// load no built-in module beyond what a bare Node loads (no streams, net, assert, readline, os...). Runs the bundle
// on the embedded Node with a preload that records process.moduleLoadList at exit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';
import { startAgentProcess } from '../support/agent.ts';

const bundle = join(repoRoot, 'dist', 'hereabouts.cjs');

function loadedModules(
  args: string[],
  env: Record<string, string>,
  input: string,
  stderr?: (text: string) => void,
): Set<string> {
  const dir = mkdtempSync(join(tmpdir(), 'hab-modules-'));
  try {
    const preload = join(dir, 'record.cjs');
    const out = join(dir, 'modules.txt');
    writeFileSync(
      preload,
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));`,
    );
    const run = spawnSync(embeddedNode, ['-r', preload, ...args], { env, input, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    stderr?.(run.stderr);
    return new Set(readFileSync(out, 'utf8').split('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const baseline = loadedModules(['-e', '0'], {}, '');
const dataDir = mkdtempSync(join(tmpdir(), 'hab-hot-'));
const conf = JSON.stringify({
  cniVersion: '1.0.0',
  name: 'hot',
  type: 'bridge',
  ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.60.0.0/24' },
});
// The temp data_dir is allowed as a node's runtime would allow it (docs/security.md).
// No node agent on this "node" (a socket path that does not exist), whatever this host has in /run/hereabouts.
const noAgent = join(dataDir, 'no-agent', 'agent.sock');
const cniEnv = (command: string) => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: 'hot',
  CNI_NETNS: '/x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/x',
  HEREABOUTS_ALLOWED_DIRS: tmpdir(),
  HEREABOUTS_AGENT_SOCKET: noAgent,
});

for (const command of ['VERSION', 'ADD', 'CHECK', 'DEL']) {
  test(`CNI ${command} on the local store loads no built-in module that node -e 0 does not`, () => {
    const input =
      command === 'CHECK'
        ? JSON.stringify({
            ...JSON.parse(conf),
            prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.60.0.1/24' }] },
          })
        : conf;
    const extra = [...loadedModules([bundle], cniEnv(command), input)].filter((m) => !baseline.has(m));
    assert.deepEqual(extra, []);
  });
}

test('CNI ADD through the node agent loads node:net but no TLS, HTTP, crypto or perf_hooks module', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-hot-agent-'));
  const agent = await startAgentProcess(requireBinary(), join(dir, 'run', 'agent.sock'));
  t.after(() => {
    agent.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  let stderr = '';
  const env = {
    ...cniEnv('ADD'),
    CNI_CONTAINERID: 'via-agent',
    HEREABOUTS_AGENT_SOCKET: join(dir, 'run', 'agent.sock'),
    HEREABOUTS_TIMINGS: '1',
  };
  const extra = [...loadedModules([bundle], env, conf, (text) => (stderr = text))].filter((m) => !baseline.has(m));
  assert.match(stderr, /"in the node agent/, 'the call was served by the agent');
  assert.ok(extra.includes('NativeModule net'), `expected node:net among ${extra.join(', ')}`);
  assert.deepEqual(
    extra.filter((m) => /\b(tls|_tls_\w+|https?|_http_\w+|crypto|perf_hooks)\b/.test(m)),
    [],
  );
});

test.after(() => rmSync(dataDir, { recursive: true, force: true }));
