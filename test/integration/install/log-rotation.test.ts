// The long-running installer rotates the plugin's log file by size (rename to .1) while plugin processes write to
// it: each call opens the file O_APPEND for its own lines, so a call that opened it before the rename finishes in .1
// and the next one creates a new file. No line is lost, torn or written twice.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { requireBinary } from '../../support/paths.ts';
import { fakeNode, installArgs, startInstaller, waitFor, type FakeNode, type RunningInstaller } from './host.ts';

const bin = requireBinary();
const CALLS = 240;
const MAX_BYTES = 1024 * 1024;

describe('plugin log rotation by the installer', { timeout: 300_000 }, () => {
  let node: FakeNode;
  let installer: RunningInstaller;
  let logDir: string;
  before(async () => {
    node = fakeNode({ token: 't', ca: 'not a real CA', namespace: 'kube-system' });
    logDir = join(node.root, 'var-log'); // the host's /var/log as the DaemonSet mounts it
    mkdirSync(logDir);
    installer = startInstaller(
      installArgs(node, {
        extra: [
          '--poll-interval',
          '0.1',
          '--log-dir',
          logDir,
          '--log-max-bytes',
          String(MAX_BYTES),
          '--stats-dir',
          join(node.root, 'no-stats'),
        ],
      }),
      { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', NODENAME: 'node-l' },
    );
    await waitFor(() => installer.stderr().includes('nodename'), 'the installer wrote its files', installer);
  });
  after(() => {
    installer.child.kill('SIGKILL');
    rmSync(node.root, { recursive: true, force: true });
  });

  test('the installer writes log_file /var/log/hereabouts.log into the flat config by default', () => {
    const flat = JSON.parse(readFileSync(join(node.filesDir, 'hereabouts.conf'), 'utf8')) as Record<string, unknown>;
    assert.equal(flat['log_file'], '/var/log/hereabouts.log');
  });

  test(`${CALLS} concurrent ADDs while the log is rotated: every line is whole and in hereabouts.log or .1, once`, async () => {
    const logFile = join(logDir, 'hereabouts.log');
    const conf = {
      cniVersion: '1.0.0',
      name: 'rot',
      type: 'bridge',
      ipam: {
        type: 'hereabouts',
        datastore: 'local',
        data_dir: join(node.root, 'data'),
        range: '10.66.0.0/16',
        log_file: logFile,
        log_level: 'info',
      },
    };
    let next = 0;
    let done = 0;
    let filled = false;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < CALLS; i = next++) {
        const out = await runCni(
          bin,
          {
            command: 'ADD',
            containerId: `rot-${i}`,
            netns: '/var/run/netns/x',
            ifname: 'eth0',
            path: '/usr/lib/cni',
            args: `K8S_POD_NAMESPACE=r;K8S_POD_NAME=p${i}`,
          },
          conf,
        );
        assert.equal(out.code, 0, out.stdout + out.stderr);
        done++;
        if (done === 40 && !filled) {
          // Grow the file past the limit while calls are in flight: the next tick rotates it under them.
          filled = true;
          const filler = `${JSON.stringify({ time: new Date().toISOString(), level: 'info', mode: 'cni', msg: 'filler'.padEnd(200, '.') })}\n`;
          appendFileSync(logFile, filler.repeat(Math.ceil(MAX_BYTES / filler.length) + 1));
        }
      }
    };
    await Promise.all(Array.from({ length: 12 }, worker));
    await waitFor(() => installer.stderr().includes('rotated'), 'the installer rotated the log', installer);
    assert.ok(existsSync(`${logFile}.1`));
    const lines = [
      ...readFileSync(`${logFile}.1`, 'utf8').split('\n'),
      ...readFileSync(logFile, 'utf8').split('\n'),
    ].filter((l) => l !== '');
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>); // throws on a torn line
    const assigned = entries.filter((e) => /^assigned /.test(String(e['msg'])));
    assert.equal(assigned.length, CALLS);
    assert.equal(new Set(assigned.map((e) => e['container'])).size, CALLS, 'one line per call, none twice');
    // Calls wrote on both sides of the rename.
    assert.match(readFileSync(`${logFile}.1`, 'utf8'), /"msg":"assigned /);
    assert.match(readFileSync(logFile, 'utf8'), /"msg":"assigned /);
    assert.ok(
      readFileSync(logFile, 'utf8').length < MAX_BYTES,
      'rotated exactly once: the new file is below the limit',
    );
  });
});
