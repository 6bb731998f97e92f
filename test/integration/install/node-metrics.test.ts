// Node-side CNI metrics end to end: 1 000 real plugin processes (mixed ADD/DEL, some failing) record their calls
// while a real long-running installer folds the call-stats file, rotating it several times meanwhile; its /metrics
// then counts every call exactly once, by verb, outcome and network, as each process really answered.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { freePort } from '../../support/free-port.ts';
import { requireBinary } from '../../support/paths.ts';
import { fakeNode, installArgs, startInstaller, waitFor, type FakeNode, type RunningInstaller } from './host.ts';

const bin = requireBinary();
const CALLS = Number(process.env['HEREABOUTS_METRICS_CALLS'] ?? 1000);
const IN_FLIGHT = 48;

/** Samples of a /metrics text: `name{labels}` -> value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m !== null) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Sum of the samples of `name` whose labels include every `want` pair. */
export function total(s: Map<string, number>, name: string, want: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, value] of s) {
    if (key !== name && !key.startsWith(`${name}{`)) continue;
    if (Object.entries(want).every(([k, v]) => key.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

interface Planned {
  readonly verb: 'ADD' | 'DEL';
  readonly network: string;
  readonly conf: Record<string, unknown>;
}

describe('node-side CNI metrics', { timeout: 900_000 }, () => {
  let node: FakeNode;
  let installer: RunningInstaller;
  let statsDir: string;
  let dataDir: string;
  let url: string;
  const env = (): Record<string, string> => ({ HEREABOUTS_STATS_DIR: statsDir });
  const scrape = async (): Promise<Map<string, number>> => samples(await (await fetch(url)).text());

  before(async () => {
    node = fakeNode({ token: 't', ca: 'not a real CA', namespace: 'kube-system' });
    statsDir = join(node.root, 'stats');
    mkdirSync(statsDir); // the DaemonSet's hostPath volume creates it on a node
    dataDir = mkdtempSync(join(tmpdir(), 'hab-nm-data-'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}/metrics`;
    installer = startInstaller(
      installArgs(node, {
        extra: [
          '--poll-interval',
          '0.2',
          '--metrics-addr',
          `127.0.0.1:${port}`,
          '--stats-dir',
          statsDir,
          '--stats-max-bytes',
          '6000',
          '--log-file',
          '',
        ],
      }),
      { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', NODENAME: 'node-m' },
    );
    await waitFor(() => installer.stderr().includes('serving /metrics'), 'the installer serves /metrics', installer);
  });
  after(() => {
    installer.child.kill('SIGKILL');
    rmSync(node.root, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('/healthz answers', async () => {
    const res = await fetch(url.replace('/metrics', '/healthz'));
    assert.equal(res.status, 200);
  });

  test(`${CALLS} concurrent plugin calls are each counted exactly once, across rotations of the stats file`, async () => {
    // A torn record from a killed writer: it must be skipped, never counted.
    appendFileSync(join(statsDir, 'calls'), '#1 ADD ok 12');
    const plan = (i: number): Planned => {
      if (i % 10 === 9)
        return {
          verb: 'ADD',
          network: 'broken',
          conf: {
            cniVersion: '1.0.0',
            name: 'broken',
            type: 'bridge',
            ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.0.0.0/33' },
          },
        };
      // tiny: a /30 with 2 addresses, so most of its ADDs fail with code 100 (exhausted).
      const network = i % 10 === 8 ? 'tiny' : 'wide';
      const range = network === 'tiny' ? '10.61.0.0/30' : '10.60.0.0/16';
      return {
        verb: i % 3 === 0 ? 'DEL' : 'ADD',
        network,
        conf: {
          cniVersion: '1.0.0',
          name: network,
          type: 'bridge',
          ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range },
        },
      };
    };
    const outcomes: Array<{ planned: Planned; out: CniOutcome }> = [];
    let next = 0;
    let scrapes = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < CALLS; i = next++) {
        const planned = plan(i);
        const out = await runCni(
          bin,
          {
            command: planned.verb,
            containerId: `m-${i}`,
            netns: '/var/run/netns/x',
            ifname: 'eth0',
            path: '/usr/lib/cni',
            args: `K8S_POD_NAMESPACE=m;K8S_POD_NAME=p${i}`,
          },
          planned.conf,
          { timeoutMs: 120_000, extraEnv: env() },
        );
        outcomes.push({ planned, out });
        if (i % 97 === 0) {
          await scrape(); // scrapes fold too, concurrently with the writers
          scrapes++;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.equal(outcomes.length, CALLS);
    assert.ok(scrapes > 0);

    const expected = new Map<string, number>();
    for (const { planned, out } of outcomes) {
      const code = out.code === 0 ? 'ok' : String(out.json?.['code']);
      assert.notEqual(code, 'undefined', out.stdout + out.stderr);
      const key = `${planned.verb} ${code} ${planned.network}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    // The mix is what the test claims: successes and two kinds of failure.
    assert.ok((expected.get('ADD 7 broken') ?? 0) > 0, [...expected].join(' '));
    assert.ok((expected.get('ADD 100 tiny') ?? 0) > 0, [...expected].join(' '));
    assert.ok((expected.get('DEL ok wide') ?? 0) > 0 && (expected.get('ADD ok wide') ?? 0) > 0);

    const counted = (s: Map<string, number>): Map<string, number> => {
      const got = new Map<string, number>();
      for (const key of expected.keys()) {
        const [verb, code, network] = key.split(' ') as [string, string, string];
        got.set(key, total(s, 'hereabouts_cni_requests_total', { verb, code, network }));
      }
      return got;
    };
    let last = new Map<string, number>();
    for (let i = 0; i < 100; i++) {
      last = await scrape();
      if (total(last, 'hereabouts_cni_requests_total') >= CALLS) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(counted(last), expected);
    assert.equal(total(last, 'hereabouts_cni_requests_total'), CALLS);
    assert.ok(
      total(last, 'hereabouts_node_file_rotations_total', { file: 'stats' }) >= 2,
      'the stats file was rotated during the run',
    );
    assert.ok(total(last, 'hereabouts_cni_stats_skipped_lines_total') <= 1);
    // Every call has one duration observation, under its verb and network.
    assert.equal(total(last, 'hereabouts_cni_request_duration_seconds_count'), CALLS);
    assert.equal(
      total(last, 'hereabouts_cni_request_duration_seconds_count', { verb: 'ADD', network: 'broken' }),
      expected.get('ADD 7 broken'),
    );

    // Once the rotated file has been drained and removed, nothing was counted twice.
    await waitFor(() => !existsSync(join(statsDir, 'calls.1')), 'calls.1 is drained and removed', installer);
    const settled = await scrape();
    assert.deepEqual(counted(settled), expected);
    assert.equal(total(settled, 'hereabouts_cni_requests_total'), CALLS);
    assert.ok(readFileSync(join(statsDir, 'fold-state.json'), 'utf8').includes('"offset"'));
  });
});
