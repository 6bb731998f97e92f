// What a running controller reports: Prometheus metrics (pools, orphans, slices, leadership), /healthz and /readyz,
// and IPPool status (capacity, used, free, Exhausted).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../../support/free-port.ts';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  ago,
  allocation,
  createNad,
  createPod,
  createPool,
  createReservation,
  deleteAllPods,
  eventually,
  offsets,
  startController,
  type Running,
} from './harness.ts';

/** The value of one sample of the exposition text, undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter((x) => x !== '');
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return undefined;
}

describe('controller metrics, health and pool status', () => {
  let ns: Namespace;
  let controller: Running;
  let metricsUrl: string;
  let healthUrl: string;
  const node = () => `${ns.name}-m`;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'met');
    const [m, h] = [await freePort(), await freePort()];
    metricsUrl = `http://127.0.0.1:${m}`;
    healthUrl = `http://127.0.0.1:${h}`;
    await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node() } });
    await createNad(ns, 'metnet', {
      type: 'hereabouts',
      range: '10.89.0.0/16',
      node_slice_size: '/24',
      network_name: `${ns.name}-net`,
    });
    const uid = await createPod(ns, 'alive', { phase: 'Running' });
    await createPool(ns, '10.89.255.0-30', '10.89.255.0/30', {
      '1': allocation(ns, 'alive', uid),
      '2': allocation(ns, 'ghost'),
    });
    // .2's reservation is missing while .1's exists: the first pass re-creates it.
    const old = ago(3_600_000);
    await createPool(ns, '10.89.253.0-30', '10.89.253.0/30', {
      '1': { ...allocation(ns, 'alive', uid), createdAt: old },
      '2': { ...allocation(ns, 'alive', uid), createdAt: old },
    });
    await createReservation(ns, '10.89.253.1', `${ns.name}/alive`);
    await createPool(ns, `${ns.name}-net6-fd89---64`, 'fd89::/64', { '1': allocation(ns, 'alive', uid) });
    await createReservation(ns, `${ns.name}-net6-fd89--1`, `${ns.name}/alive`);
    controller = startController(
      ns,
      '--metrics-addr',
      `127.0.0.1:${m}`,
      '--health-addr',
      `127.0.0.1:${h}`,
      '--retry-period',
      '300ms',
      '--reconcile-interval',
      '1s',
    );
    await controller.waitForLine((l) => / pass done/.test(l.msg) && l['released'] === 1, 15_000);
  });
  after(async () => {
    await controller.stop();
    await apiRequest(ns.cp, 'DELETE', `/api/v1/nodes/${node()}`);
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('/metrics reports allocations, capacity and free per pool, orphans cleaned, slices and leadership', async () => {
    assert.deepEqual(await offsets(ns, '10.89.255.0-30'), ['1']);
    const small = { pool: '10.89.255.0-30', network: '', range: '10.89.255.0/30' };
    // The gauges are read from the controller's caches, which see the first pass's own writes (the release, the
    // NodeSlicePool) through their watches, a moment after the pass wrote them: scrape until they have.
    let text = '';
    const cachesCaughtUp = async (): Promise<boolean> => {
      text = await (await fetch(`${metricsUrl}/metrics`)).text();
      return (
        sample(text, 'hereabouts_pool_allocations', small) === 1 &&
        (sample(text, 'hereabouts_node_slices', { network: `${ns.name}-net`, state: 'assigned' }) ?? 0) >= 1
      );
    };
    assert.ok(await eventually(cachesCaughtUp, 10_000), text);
    assert.equal(sample(text, 'hereabouts_pool_allocations', small), 1);
    assert.equal(sample(text, 'hereabouts_pool_capacity', small), 2);
    assert.equal(sample(text, 'hereabouts_pool_free', small), 1);
    assert.equal(sample(text, 'hereabouts_pool_usage_ratio', small), 0.5);
    // A /64 holds 2^64 - 2 addresses: the gauges stay exact integers by capping at 2^53 - 1, the ratio carries the use.
    const big = { pool: `${ns.name}-net6-fd89---64`, network: `${ns.name}-net6`, range: 'fd89::/64' };
    assert.match(
      text,
      new RegExp(`^hereabouts_pool_capacity\\{[^}]*pool="${big.pool}"[^}]*\\} 9007199254740991$`, 'm'),
      'capacity is printed as an exact integer, capped',
    );
    assert.equal(sample(text, 'hereabouts_pool_capacity', big), Number.MAX_SAFE_INTEGER);
    assert.equal(sample(text, 'hereabouts_pool_free', big), Number.MAX_SAFE_INTEGER);
    assert.equal(sample(text, 'hereabouts_pool_allocations', big), 1);
    assert.ok(
      (sample(text, 'hereabouts_pool_usage_ratio', big) ?? 0) > 0 &&
        (sample(text, 'hereabouts_pool_usage_ratio', big) ?? 1) < 1e-18,
    );
    assert.doesNotMatch(text, /^hereabouts_pool_\w+\{[^}]*\} [0-9.]+e\+/m, 'no pool gauge in exponent notation');
    assert.equal(sample(text, 'hereabouts_orphans_cleaned_total', { reason: 'pod-gone' }), 1);
    assert.equal(sample(text, 'hereabouts_reservations_recreated_total'), 1);
    assert.ok((sample(text, 'hereabouts_node_slices', { network: `${ns.name}-net`, state: 'assigned' }) ?? 0) >= 1);
    assert.ok(
      (sample(text, 'hereabouts_node_slices', { network: `${ns.name}-net`, state: 'free' }) ?? 0) >= 200,
      'a /16 has 256 /24 slices',
    );
    assert.equal(sample(text, 'hereabouts_leader'), 1);
    assert.ok((sample(text, 'hereabouts_reconcile_passes_total', { kind: 'full', result: 'ok' }) ?? 0) >= 1);
    assert.equal(sample(text, 'hereabouts_informer_synced', { resource: 'pods' }), 1);
    assert.ok((sample(text, 'process_resident_memory_bytes') ?? 0) > 0);
  });

  test('/healthz and /readyz answer 200 once the caches are synced; other paths 404', async () => {
    assert.equal((await fetch(`${healthUrl}/healthz`)).status, 200);
    const ready = await fetch(`${healthUrl}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    assert.equal((await fetch(`${healthUrl}/metrics`)).status, 404, 'metrics are served on --metrics-addr only');
  });

  test('IPPool status shows capacity, used, free and the Exhausted condition', async () => {
    await createPool(ns, '10.89.254.0-30', '10.89.254.0/30', {
      '1': allocation(ns, 'alive'),
      '2': allocation(ns, 'alive'),
    });
    type Status = {
      capacity?: string;
      used?: number;
      free?: string;
      conditions?: Array<{ type: string; status: string; reason: string }>;
    };
    const status = async (name: string) => ((await ns.get('ippools', name))?.['status'] ?? {}) as Status;
    // Two full passes that began after the pool was created: the first may find it not yet cached and describe it
    // in the next one.
    const from = Math.max(0, ...controller.lines().map((l) => (typeof l['n'] === 'number' ? l['n'] : 0)));
    await controller.waitForLines(
      (l) => l['pass'] === 'full' && / pass done/.test(l.msg) && typeof l['n'] === 'number' && l['n'] > from + 1,
      1,
      30_000,
    );
    const full = await status('10.89.254.0-30');
    assert.deepEqual([full.capacity, full.used, full.free], ['2', 2, '0']);
    assert.deepEqual(
      full.conditions?.map((c) => [c.type, c.status, c.reason]),
      [['Exhausted', 'True', 'NoFreeAddress']],
    );
    const half = await status('10.89.255.0-30');
    assert.deepEqual([half.capacity, half.used, half.free, half.conditions?.[0]?.status], ['2', 1, '1', 'False']);
  });
});
