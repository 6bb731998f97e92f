// `hereabouts status` and `hereabouts orphans` judge orphans with the controller's own rule: for pods in every state
// the rule tells apart, the ORPHANS column of each pool, and the allocations `orphans` lists (with their reasons),
// equal what `hereabouts controller --once` (default flags) then releases from it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  allocation,
  createPod,
  createPool,
  deleteAllPods,
  deletePod,
  runOnce,
  terminatePod,
} from '../controller/harness.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

describe('hereabouts status and the controller agree on orphans', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'agree');
  });
  after(async () => {
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('per pool, the orphans status counts are exactly the allocations the controller releases', async () => {
    const old = new Date(Date.now() - 3_600_000).toISOString();
    const cases: Array<[string, () => Promise<string | undefined>, { createdAt?: string }?]> = [
      [
        'gone',
        async () => {
          const uid = await createPod(ns, 'gone', { phase: 'Running', container: 'running' });
          await deletePod(ns, 'gone');
          return uid;
        },
      ],
      [
        'recreated',
        async () => {
          await createPod(ns, 'recreated', { phase: 'Running', container: 'running' });
          await deletePod(ns, 'recreated');
          await createPod(ns, 'recreated', { phase: 'Running', container: 'running' });
          return 'uid-of-the-earlier-pod';
        },
      ],
      ['alive', () => createPod(ns, 'alive', { phase: 'Running', container: 'running' })],
      [
        'not-listed',
        () => createPod(ns, 'not-listed', { phase: 'Running', container: 'running', networkStatus: ['10.99.99.99'] }),
      ],
      [
        'tainted',
        () =>
          createPod(ns, 'tainted', { phase: 'Running', container: 'terminated', disrupted: 'DeletionByTaintManager' }),
      ],
      [
        'evicted',
        async () => {
          const uid = await createPod(ns, 'evicted', {
            phase: 'Running',
            container: 'running',
            disrupted: 'EvictionByEvictionAPI',
            node: 'node-x',
            finalizer: true,
          });
          await terminatePod(ns, 'evicted');
          return uid;
        },
      ],
      [
        'finished',
        () =>
          createPod(ns, 'finished', {
            phase: 'Succeeded',
            container: 'terminated',
            conditions: [{ type: 'PodReadyToStartContainers', status: 'False' }],
          }),
      ],
      ['just-failed', () => createPod(ns, 'just-failed', { phase: 'Failed', container: 'terminated' })],
      [
        'starting',
        async () => {
          await createPod(ns, 'starting', { phase: 'Pending' });
          return 'uid-of-an-earlier-pod';
        },
      ],
      ['young-gone', () => Promise.resolve(undefined), { createdAt: new Date().toISOString() }],
      ['old-gone', () => Promise.resolve(undefined), { createdAt: old }],
    ];
    const pools: string[] = [];
    for (const [i, [name, make, extra]] of cases.entries()) {
      const uid = await make();
      const pool = `10.99.${i}.0-24`;
      pools.push(pool);
      await createPool(ns, pool, `10.99.${i}.0/24`, { '1': { ...allocation(ns, name, uid), ...extra } });
    }

    const status = spawnSync(bin, ['status', '--kubeconfig', ns.kubeconfig, '-o', 'json'], {
      encoding: 'utf8',
      env: {},
      timeout: 60_000,
    });
    assert.equal(status.status, 0, status.stderr);
    const counted = new Map(
      (JSON.parse(status.stdout) as { pools: Array<{ name: string; orphans: number | null }> }).pools.map((p) => [
        p.name,
        p.orphans,
      ]),
    );
    const orphans = spawnSync(bin, ['orphans', '--kubeconfig', ns.kubeconfig, '-o', 'json'], {
      encoding: 'utf8',
      env: {},
      timeout: 60_000,
    });
    assert.equal(orphans.status, 0, orphans.stderr);
    const listed = new Map<string, string>(); // pool -> "<address> <reason>"
    for (const row of (
      JSON.parse(orphans.stdout) as { allocations: Array<{ pool: string; address: string; reason: string }> }
    ).allocations) {
      listed.set(row.pool, `${row.address} ${row.reason}`);
    }

    const run = runOnce(ns);
    assert.equal(run.code, 0, run.stderr);
    const released = new Map<string, number>(pools.map((p) => [p, 0]));
    const why = new Map<string, string>();
    for (const line of run.lines) {
      const m = /^released (\S+) of \S+ from IPPool (\S+): (\S+)$/.exec(line.msg);
      if (m?.[2] === undefined) continue;
      released.set(m[2], (released.get(m[2]) ?? 0) + 1);
      why.set(m[2], `${m[1]} ${m[3]}`);
    }
    const table = pools
      .map(
        (p, i) =>
          `${cases[i]![0]}: status ${counted.get(p)}, orphans ${listed.get(p)}, controller ${released.get(p)} ${why.get(p)}`,
      )
      .join('\n');
    for (const pool of pools) {
      assert.equal(counted.get(pool), released.get(pool), table);
      assert.equal(listed.get(pool), why.get(pool), table);
    }
    // Not vacuous: both verdicts occur.
    assert.ok([...released.values()].filter((n) => n === 1).length >= 5, table);
    assert.ok([...released.values()].filter((n) => n === 0).length >= 4, table);
  });
});
