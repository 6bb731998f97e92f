// hereabouts_sticky_bindings{state}: the sticky addresses (docs/sticky.md) of every pool the cache holds, in-use while
// the pod their record names is in the pod cache, parked while it is not; nothing until that cache has synced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerMetrics, stickyCounts } from '../../../src/controller/runtime/metrics.ts';
import { poolView, type PoolView } from '../../../src/controller/pools/view.ts';

const view = (name: string, range: string, allocations: Record<string, unknown>): PoolView => {
  const pool = poolView({ metadata: { name, uid: name, resourceVersion: '1' }, spec: { range, allocations } });
  assert.ok(pool !== undefined);
  return pool;
};
const pools = [
  view('10.0.0.0-24', '10.0.0.0/24', {
    '1': { id: 'a', podref: 'ns/web-0', ifname: 'net1', binding: 'StatefulSet/web/0' },
    '2': { id: 'b', podref: 'ns/web-1', ifname: 'net1', binding: 'StatefulSet/web/1' },
    '3': { id: 'c', podref: 'ns/plain', ifname: 'net1' },
  }),
  view('10.0.1.0-24', '10.0.1.0/24', {
    '1': { id: 'd', podref: 'vms/virt-launcher-vm1-x', ifname: 'net1', binding: 'VirtualMachine/vm1' },
  }),
];
const podCache = new Map<string, unknown>([
  ['ns/web-0', {}],
  ['ns/plain', {}],
]);

test('stickyCounts: bound records only, in-use by the pod cache, parked otherwise', () => {
  assert.deepEqual(stickyCounts(pools, podCache), { inUse: 1, parked: 2 });
  assert.deepEqual(stickyCounts(pools, new Map()), { inUse: 0, parked: 3 });
  assert.deepEqual(stickyCounts([], podCache), { inUse: 0, parked: 0 });
});

async function gauge(pods: (() => ReadonlyMap<string, unknown> | undefined) | undefined): Promise<string[]> {
  const metrics = new ControllerMetrics({
    pools: () => pools,
    nodeSlicePools: () => [],
    slices: () => [],
    starved: () => new Map(),
    leading: () => true,
    informers: () => [],
    ...(pods === undefined ? {} : { pods }),
  });
  const text = await metrics.registry.metrics();
  return text.split('\n').filter((l) => l.startsWith('hereabouts_sticky_bindings'));
}

test('hereabouts_sticky_bindings is read from the pools and the pod cache at scrape time', async () => {
  assert.deepEqual(await gauge(() => podCache), [
    'hereabouts_sticky_bindings{state="in-use"} 1',
    'hereabouts_sticky_bindings{state="parked"} 2',
  ]);
  // The pod cache not synced (or not given): no sample, rather than every address counted parked.
  assert.deepEqual(await gauge(() => undefined), []);
  assert.deepEqual(await gauge(undefined), []);
});
