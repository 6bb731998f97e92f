// Node-slice mode: each node allocates from the IPPool of the slice its NodeSlicePool assigns it, answers with the
// whole range's mask, and in the steady state makes no read at all: one write per ADD, two with reservations.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from '../../../src/cni/errors.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { checkAvailable } from '../../../src/ipam/availability.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'slices');
  for (const [name, range] of [
    ['slicenet', '10.60.0.0/24'],
    ['plain', '10.61.0.0/24'],
  ] as const) {
    const base = range.slice(0, range.lastIndexOf('.'));
    await ns.create('nodeslicepools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'NodeSlicePool',
      metadata: { name },
      spec: { range, sliceSize: '/28' },
      status: {
        allocations: [
          { nodeName: 'node-a', sliceRange: `${base}.0/28` },
          { nodeName: 'node-b', sliceRange: `${base}.16/28` },
          { nodeName: '', sliceRange: `${base}.32/28` },
        ],
      },
    });
  }
});

after(async () => {
  await ns?.cleanup();
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });

test('each node allocates from its own slice pool, named [<network_name>-]<node>-<slice>, with the whole range mask', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const nodeA = await openNode(ns, config, 'node-a');
  const nodeB = await openNode(ns, config, 'node-b');
  try {
    const poolsA = await nodeA.resolvePools(config);
    assert.deepEqual(poolsA.map((p) => [p.name, p.resultPrefix]), [['slicenet-node-a-10.60.0.0-28', 24]]);
    const [a] = await assign(nodeA, config, pod('a1'), { pools: poolsA });
    const [b] = await assign(nodeB, config, pod('b1'), { pools: await nodeB.resolvePools(config) });
    assert.deepEqual([a, b].map((x) => x && formatIP(x.address)), ['10.60.0.1', '10.60.0.17']);
    assert.ok(await poolView(ns, 'slicenet-node-b-10.60.0.16-28'));
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});

test('an unnamed network looks up the NodeSlicePool by the CNI network name', async () => {
  const config = kubeNetwork(ns, [testRange('10.61.0.0/24')], { name: 'plain', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-b');
  try {
    const pools = await store.resolvePools(config);
    assert.deepEqual(pools.map((p) => p.name), ['node-b-10.61.0.16-28']);
  } finally {
    await store.close();
  }
});

test('exclude, range_start and range_end apply within the slice; the slice keeps its own network and broadcast out', async () => {
  const range = testRange('10.60.0.0/24', { start: '10.60.0.18', end: '10.60.0.29', exclude: ['10.60.0.19/32', '10.60.0.20/31'] });
  const config = kubeNetwork(ns, [range], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-b');
  try {
    const [pool] = await store.resolvePools(config);
    assert.ok(pool);
    assert.deepEqual([formatIP({ family: 4, value: pool.range.start }), formatIP({ family: 4, value: pool.range.end })], ['10.60.0.18', '10.60.0.29']);
    // .17 is taken by b1 above; .18 is the range start; .19-.21 are excluded.
    const got: string[] = [];
    for (const name of ['b2', 'b3']) {
      const [a] = await assign(store, config, pod(name), { pools: [pool] });
      got.push(a ? formatIP(a.address) : 'none');
    }
    assert.deepEqual(got, ['10.60.0.18', '10.60.0.22']);
  } finally {
    await store.close();
  }
});

test('a node without a slice fails with code 11 and says so', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-c');
  try {
    await assert.rejects(
      store.resolvePools(config),
      (err: unknown) => err instanceof CniError && err.code === 11 && err.message === 'no slice assigned to node node-c in NodeSlicePool slicenet yet',
    );
  } finally {
    await store.close();
  }
});

test('STATUS on a node without a slice fails with code 50', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-c');
  try {
    await assert.rejects(
      store.resolvePools(config, { purpose: 'status' }),
      (err: unknown) => err instanceof CniError && err.code === 50 && /no slice assigned to node node-c/.test(err.message),
    );
  } finally {
    await store.close();
  }
});

test('for DEL and GC a node without a slice has no pool to release from (DEL succeeds)', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-c');
  try {
    const pools = await store.resolvePools(config, { purpose: 'release' });
    assert.deepEqual(pools, []);
    assert.deepEqual(await release(store, config, pod('never-here'), { pools }), []);
  } finally {
    await store.close();
  }
});

test('a network whose NodeSlicePool does not exist yet fails with code 11', async () => {
  const config = kubeNetwork(ns, [testRange('10.62.0.0/24')], { name: 'attach', networkName: 'nowhere', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(store.resolvePools(config), (err: unknown) => err instanceof CniError && err.code === 11 && /NodeSlicePool nowhere/.test(err.message));
  } finally {
    await store.close();
  }
});

for (const reservations of [false, true]) {
  test(`steady-state ADD in node-slice mode: no GET, no LIST, ${reservations ? 'two writes' : 'one write'} (reservations ${reservations ? 'on' : 'off'})`, async () => {
    const config = kubeNetwork(ns, [testRange('10.61.0.0/24')], { name: 'plain', nodeSliceSize: 28, enableOverlappingRanges: reservations });
    const warm = await openNode(ns, config, 'node-a');
    try {
      await assign(warm, config, pod(`warm-${reservations}`), { pools: await warm.resolvePools(config) });
    } finally {
      await warm.close();
    }
    // A new process on the same node: the slice assignment and the pool come from the node cache.
    const store = await openNode(ns, config, 'node-a');
    try {
      const pools = await store.resolvePools(config);
      assert.equal(store.api.requests, 0);
      await assign(store, config, pod(`steady-${reservations}`), { pools });
      assert.equal(store.api.requests, reservations ? 2 : 1);
      await release(store, config, pod(`steady-${reservations}`), { pools });
      assert.equal(store.api.requests, reservations ? 4 : 2);
    } finally {
      await store.close();
    }
  });
}

test('STATUS with a slice pool passes on an exhausted slice (exhaustion is not a STATUS failure)', async () => {
  const range = testRange('10.61.0.0/24', { start: '10.61.0.1', end: '10.61.0.2' });
  const config = kubeNetwork(ns, [range], { name: 'plain', nodeSliceSize: 28, enableOverlappingRanges: false });
  const store = await openNode(ns, config, 'node-a');
  try {
    const pools = await store.resolvePools(config);
    // warm-false and warm-true already hold .1 and .2 (and the steady pods were released)
    await checkAvailable(store, config, { pools });
  } finally {
    await store.close();
  }
});
