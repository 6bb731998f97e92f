// Node-slice mode: each node allocates from the IPPool of the slice its NodeSlicePool assigns it, answers with the
// whole range's mask, and in the steady state makes no read at all: one write per ADD, two with reservations.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assign } from '../../../src/ipam/assign.ts';
import { checkAvailable } from '../../../src/ipam/availability.ts';
import { collectGarbage } from '../../../src/ipam/gc.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { poolPaths } from '../../../src/store/local/paths.ts';
import { readSliceMemory } from '../../../src/store/kubernetes/slice-memory.ts';
import {
  api,
  cacheHolds,
  controlPlane,
  createCached,
  createNamespace,
  type Namespace,
} from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, memoryLogger, openNode, poolView } from './harness.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'slices');
  for (const [name, range] of [
    ['slicenet', '10.60.0.0/24'],
    ['plain', '10.61.0.0/24'],
  ] as const) {
    const base = range.slice(0, range.lastIndexOf('.'));
    await createCached(ns, 'nodeslicepools', {
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
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });

test('each node allocates from its own slice pool, named [<network_name>-]<node>-<slice>, with the whole range mask', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], {
    name: 'attach',
    networkName: 'slicenet',
    nodeSliceSize: 28,
  });
  const nodeA = await openNode(ns, config, 'node-a');
  const nodeB = await openNode(ns, config, 'node-b');
  try {
    const poolsA = await nodeA.resolvePools(config);
    assert.deepEqual(
      poolsA.map((p) => [p.name, p.resultPrefix]),
      [['slicenet-node-a-10.60.0.0-28', 24]],
    );
    const [a] = await assign(nodeA, config, pod('a1'), { pools: poolsA });
    const [b] = await assign(nodeB, config, pod('b1'), { pools: await nodeB.resolvePools(config) });
    assert.deepEqual(
      [a, b].map((x) => x && formatIP(x.address)),
      ['10.60.0.1', '10.60.0.17'],
    );
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
    assert.deepEqual(
      pools.map((p) => p.name),
      ['node-b-10.61.0.16-28'],
    );
  } finally {
    await store.close();
  }
});

test('exclude, range_start and range_end apply within the slice; the slice keeps its own network and broadcast out', async () => {
  const range = testRange('10.60.0.0/24', {
    start: '10.60.0.18',
    end: '10.60.0.29',
    exclude: ['10.60.0.19/32', '10.60.0.20/31'],
  });
  const config = kubeNetwork(ns, [range], { name: 'attach', networkName: 'slicenet', nodeSliceSize: 28 });
  const store = await openNode(ns, config, 'node-b');
  try {
    const [pool] = await store.resolvePools(config);
    assert.ok(pool);
    assert.deepEqual(
      [formatIP({ family: 4, value: pool.range.start }), formatIP({ family: 4, value: pool.range.end })],
      ['10.60.0.18', '10.60.0.29'],
    );
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
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], {
    name: 'attach',
    networkName: 'slicenet',
    nodeSliceSize: 28,
  });
  const store = await openNode(ns, config, 'node-c');
  try {
    await assert.rejects(
      store.resolvePools(config),
      (err: unknown) =>
        err instanceof HereaboutsError &&
        cniCodeOf(err) === 11 &&
        err.message === 'no slice assigned to node node-c in NodeSlicePool slicenet yet',
    );
  } finally {
    await store.close();
  }
});

test('STATUS on a node without a slice passes: a missing slice is not a store failure (ADD says code 11)', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], {
    name: 'attach',
    networkName: 'slicenet',
    nodeSliceSize: 28,
  });
  const store = await openNode(ns, config, 'node-c');
  try {
    assert.deepEqual(await store.resolvePools(config, { purpose: 'status' }), []);
    await assert.rejects(
      store.resolvePools(config),
      (err: unknown) =>
        err instanceof HereaboutsError && cniCodeOf(err) === 11 && /no slice assigned to node node-c/.test(err.message),
    );
  } finally {
    await store.close();
  }
});

test('for DEL and GC a node without a slice has no pool to release from (DEL succeeds)', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], {
    name: 'attach',
    networkName: 'slicenet',
    nodeSliceSize: 28,
  });
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
  const config = kubeNetwork(ns, [testRange('10.62.0.0/24')], {
    name: 'attach',
    networkName: 'nowhere',
    nodeSliceSize: 28,
  });
  const store = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(
      store.resolvePools(config),
      (err: unknown) =>
        err instanceof HereaboutsError && cniCodeOf(err) === 11 && /NodeSlicePool nowhere/.test(err.message),
    );
  } finally {
    await store.close();
  }
});

for (const reservations of [false, true]) {
  test(`steady-state ADD in node-slice mode: one GET (the NodeSlicePool), one read of Whereabouts' Lease, no LIST, ${reservations ? 'two writes and the reservation confirmed' : 'one write'}; DEL one read more (reservations ${reservations ? 'on' : 'off'})`, async () => {
    const config = kubeNetwork(ns, [testRange('10.61.0.0/24')], {
      name: 'plain',
      nodeSliceSize: 28,
      enableOverlappingRanges: reservations,
    });
    const warm = await openNode(ns, config, 'node-a');
    try {
      await assign(warm, config, pod(`warm-${reservations}`), { pools: await warm.resolvePools(config) });
    } finally {
      await warm.close();
    }
    // A new process on the same node: the pool comes from the node cache; the NodeSlicePool is read (one GET: a
    // slice may have moved or be draining since), the slice pool is not.
    const store = await openNode(ns, config, 'node-a');
    try {
      const pools = await store.resolvePools(config);
      assert.equal(store.api.requests, 1);
      store.api.requests = 0;
      // Each writing update reads Whereabouts' Lease (from the watch cache): none here, so nothing else is written.
      await assign(store, config, pod(`steady-${reservations}`), { pools });
      // With reservations, the ADD reads its reservation once more after the pool write: it reports success only
      // while the reservation it relies on still exists (DESIGN §9).
      assert.equal(store.api.requests, reservations ? 4 : 2);
      await release(store, config, pod(`steady-${reservations}`), { pools });
      // DEL reads the reservation to delete it only while it still names the released container (DESIGN §9).
      assert.equal(store.api.requests, reservations ? 8 : 4);
    } finally {
      await store.close();
    }
  });
}

test("the NodeSlicePool is read from the API server's watch cache, never older than the version this node read last", async () => {
  const config = kubeNetwork(ns, [testRange('10.61.0.0/24')], {
    name: 'plain',
    nodeSliceSize: 28,
    enableOverlappingRanges: false,
  });
  const node = 'node-cache-read';
  rmSync(join(ns.dir, 'nodes', node), { recursive: true, force: true });
  const paths: string[] = [];
  const resolve = async (): Promise<string[]> => {
    const store = await openNode(ns, config, node);
    const send = store.api.send.bind(store.api);
    store.api.send = (req, options) => {
      paths.push(req.path);
      return send(req, options);
    };
    try {
      return (await store.resolvePools(config, { purpose: 'release' })).map((p) => p.name);
    } finally {
      await store.close();
    }
  };
  // A node that never read it takes any version the cache has ...
  await resolve();
  const first = (await ns.get('nodeslicepools', 'plain'))!['metadata'] as { resourceVersion: string };
  assert.match(paths[0] ?? '', /\/nodeslicepools\/plain\?resourceVersion=0$/);
  // ... and then asks for one at least as new as what it read, which the API server answers from its cache too.
  await resolve();
  assert.ok(paths[1]?.endsWith(`/nodeslicepools/plain?resourceVersion=${first.resourceVersion}`), paths[1]);
  const memory = readSliceMemory(
    {
      node,
      cacheDir: join(ns.dir, 'nodes', node),
      scope: { server: ns.cp.url, namespace: ns.name },
      log: memoryLogger(),
    },
    'plain',
  );
  assert.equal(memory?.resourceVersion, first.resourceVersion);
});

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

// --- The slice lifecycle as the plugin sees it: the cached assignment follows the NodeSlicePool at once (no time
// to live), a draining slice is never allocated from, and DEL finds an attachment in any slice pool this node held.

const NSP = 'whereabouts.cni.cncf.io/v1alpha1';
async function putNodeSlicePool(
  name: string,
  spec: { range: string; sliceSize: string },
  status: Record<string, unknown>,
): Promise<void> {
  const current = await ns.get('nodeslicepools', name);
  const body = {
    apiVersion: NSP,
    kind: 'NodeSlicePool',
    metadata: {
      name,
      ...(current === undefined
        ? {}
        : { resourceVersion: (current['metadata'] as { resourceVersion: string }).resourceVersion }),
    },
    spec,
    status,
  };
  const written = (
    current === undefined
      ? await ns.create('nodeslicepools', body)
      : await api(ns.cp, 'PUT', ns.path('nodeslicepools', name), body)
  ) as { metadata: { resourceVersion: string } };
  // The plugin reads the NodeSlicePool from the API server's watch cache: "the next request" is the one after it.
  await cacheHolds(ns.cp, ns.path('nodeslicepools', name), written.metadata.resourceVersion);
}
const isCode11 = (pattern: RegExp) => (err: unknown) =>
  err instanceof HereaboutsError && cniCodeOf(err) === 11 && pattern.test(err.message);
async function resolveOn(
  node: string,
  config: ReturnType<typeof kubeNetwork>,
  purpose: 'allocate' | 'release' = 'allocate',
) {
  const store = await openNode(ns, config, node);
  try {
    return (await store.resolvePools(config, { purpose })).map((p) => p.name);
  } finally {
    await store.close();
  }
}

test('a new slice size reaches the plugin with the next request: the cached assignment is keyed to the NodeSlicePool, not to a time', async () => {
  await putNodeSlicePool(
    'resize',
    { range: '10.63.0.0/24', sliceSize: '/28' },
    { allocations: [{ nodeName: 'node-a', sliceRange: '10.63.0.0/28' }] },
  );
  const by28 = kubeNetwork(ns, [testRange('10.63.0.0/24')], {
    name: 'attach',
    networkName: 'resize',
    nodeSliceSize: 28,
  });
  const by27 = kubeNetwork(ns, [testRange('10.63.0.0/24')], {
    name: 'attach',
    networkName: 'resize',
    nodeSliceSize: 27,
  });
  assert.deepEqual(await resolveOn('node-a', by28), ['resize-node-a-10.63.0.0-28']);
  // The controller reslices by /27: node-a's old slice drains, it gets a new one.
  await putNodeSlicePool(
    'resize',
    { range: '10.63.0.0/24', sliceSize: '/27' },
    {
      allocations: [{ nodeName: 'node-a', sliceRange: '10.63.0.32/27' }],
      draining: [{ nodeName: 'node-a', sliceRange: '10.63.0.0/28', reason: 'Resliced' }],
    },
  );
  assert.deepEqual(await resolveOn('node-a', by27), ['resize-node-a-10.63.0.32-27']);
  await assert.rejects(
    resolveOn('node-a', by28),
    isCode11(/^NodeSlicePool resize slices 10\.63\.0\.0\/24 by \/27, not 10\.63\.0\.0\/24 by \/28 as configured$/),
  );
});

test('the plugin never allocates from a slice the controller moved or marked draining', async () => {
  await putNodeSlicePool(
    'moving',
    { range: '10.65.0.0/24', sliceSize: '/28' },
    { allocations: [{ nodeName: 'node-a', sliceRange: '10.65.0.0/28' }] },
  );
  const config = kubeNetwork(ns, [testRange('10.65.0.0/24')], {
    name: 'attach',
    networkName: 'moving',
    nodeSliceSize: 28,
  });
  assert.deepEqual(await resolveOn('node-a', config), ['moving-node-a-10.65.0.0-28']);
  await putNodeSlicePool(
    'moving',
    { range: '10.65.0.0/24', sliceSize: '/28' },
    {
      allocations: [
        { nodeName: '', sliceRange: '10.65.0.0/28' },
        { nodeName: 'node-a', sliceRange: '10.65.0.16/28' },
      ],
    },
  );
  assert.deepEqual(await resolveOn('node-a', config), ['moving-node-a-10.65.0.16-28']);
  await putNodeSlicePool(
    'moving',
    { range: '10.65.0.0/24', sliceSize: '/28' },
    {
      allocations: [
        { nodeName: '', sliceRange: '10.65.0.0/28' },
        { nodeName: 'node-a', sliceRange: '10.65.0.16/28' },
      ],
      draining: [{ nodeName: 'node-a', sliceRange: '10.65.0.16/28', reason: 'NodeLeft' }],
    },
  );
  await assert.rejects(
    resolveOn('node-a', config),
    isCode11(/slice 10\.65\.0\.16\/28 of node node-a in NodeSlicePool moving is draining/),
  );
});

for (const controllerKept of [true, false]) {
  test(`DEL releases an attachment left in an old slice pool after a reslice (${controllerKept ? 'listed as draining' : 'known only to the node'})`, async () => {
    const network = controllerKept ? 'olddel' : 'forgot';
    const range = controllerKept ? '10.66.0.0/24' : '10.67.0.0/24';
    const base = range.slice(0, range.lastIndexOf('.'));
    await putNodeSlicePool(
      network,
      { range, sliceSize: '/28' },
      { allocations: [{ nodeName: 'node-a', sliceRange: `${base}.0/28` }] },
    );
    const by28 = kubeNetwork(ns, [testRange(range)], { name: 'attach', networkName: network, nodeSliceSize: 28 });
    const by27 = kubeNetwork(ns, [testRange(range)], { name: 'attach', networkName: network, nodeSliceSize: 27 });
    const store = await openNode(ns, by28, 'node-a');
    try {
      const [got] = await assign(store, by28, pod(`old-${network}`), { pools: await store.resolvePools(by28) });
      assert.equal(got && formatIP(got.address), `${base}.1`);
    } finally {
      await store.close();
    }
    await putNodeSlicePool(
      network,
      { range, sliceSize: '/27' },
      {
        allocations: [{ nodeName: 'node-a', sliceRange: `${base}.32/27` }],
        ...(controllerKept
          ? { draining: [{ nodeName: 'node-a', sliceRange: `${base}.0/28`, reason: 'Resliced' }] }
          : {}),
      },
    );
    if (controllerKept) {
      // A node that lost its cache (a reboot): the NodeSlicePool alone must lead DEL to the old pool.
      rmSync(poolPaths(join(ns.dir, 'nodes', 'node-a'), { network, name: '~nodeslice' }).data, { force: true });
    } else {
      // Pods keep coming: the node allocates from its new slice, and still remembers the old one.
      const next = await openNode(ns, by27, 'node-a');
      try {
        const [got] = await assign(next, by27, pod(`new-${network}`), { pools: await next.resolvePools(by27) });
        assert.equal(got && formatIP(got.address), `${base}.33`);
      } finally {
        await next.close();
      }
    }
    const del = await openNode(ns, by27, 'node-a');
    try {
      const pools = await del.resolvePools(by27, { purpose: 'release' });
      const released = await release(del, by27, pod(`old-${network}`), { pools });
      assert.deepEqual(released.map(formatIP), [`${base}.1`]);
    } finally {
      await del.close();
    }
    assert.equal((await poolView(ns, `${network}-node-a-${base}.0-28`))?.allocations.size, 0);
  });
}

test('GC collects an attachment left in an old slice pool after a reslice', async () => {
  await putNodeSlicePool(
    'oldgc',
    { range: '10.68.0.0/24', sliceSize: '/28' },
    { allocations: [{ nodeName: 'node-a', sliceRange: '10.68.0.0/28' }] },
  );
  const by28 = kubeNetwork(ns, [testRange('10.68.0.0/24')], {
    name: 'attach',
    networkName: 'oldgc',
    nodeSliceSize: 28,
  });
  const by27 = kubeNetwork(ns, [testRange('10.68.0.0/24')], {
    name: 'attach',
    networkName: 'oldgc',
    nodeSliceSize: 27,
  });
  const store = await openNode(ns, by28, 'node-a');
  try {
    await assign(store, by28, pod('gc-old'), { pools: await store.resolvePools(by28) });
  } finally {
    await store.close();
  }
  await putNodeSlicePool(
    'oldgc',
    { range: '10.68.0.0/24', sliceSize: '/27' },
    {
      allocations: [{ nodeName: 'node-a', sliceRange: '10.68.0.32/27' }],
      draining: [{ nodeName: 'node-a', sliceRange: '10.68.0.0/28', reason: 'Resliced' }],
    },
  );
  // The runtime's cache is gone too (a reboot): only the NodeSlicePool leads GC to the old pool.
  rmSync(poolPaths(join(ns.dir, 'nodes', 'node-a'), { network: 'oldgc', name: '~nodeslice' }).data, { force: true });
  const gc = await openNode(ns, by27, 'node-a');
  try {
    const report = await collectGarbage(gc, by27, [], { pools: await gc.resolvePools(by27, { purpose: 'release' }) });
    assert.deepEqual(
      report.released.map((r) => formatIP(r.address)),
      ['10.68.0.1'],
    );
  } finally {
    await gc.close();
  }
});

test('DEL finds an attachment in a slice pool known only from the node pool cache (no slice memory, no draining list)', async () => {
  await putNodeSlicePool(
    'upgraded',
    { range: '10.69.0.0/24', sliceSize: '/28' },
    { allocations: [{ nodeName: 'node-a', sliceRange: '10.69.0.0/28' }] },
  );
  const by28 = kubeNetwork(ns, [testRange('10.69.0.0/24')], {
    name: 'attach',
    networkName: 'upgraded',
    nodeSliceSize: 28,
  });
  const by27 = kubeNetwork(ns, [testRange('10.69.0.0/24')], {
    name: 'attach',
    networkName: 'upgraded',
    nodeSliceSize: 27,
  });
  const store = await openNode(ns, by28, 'node-a');
  try {
    await assign(store, by28, pod('cached-only'), { pools: await store.resolvePools(by28) });
  } finally {
    await store.close();
  }
  // Resliced by a controller that keeps no draining list, on a node whose slice memory is gone (or never was).
  await putNodeSlicePool(
    'upgraded',
    { range: '10.69.0.0/24', sliceSize: '/27' },
    { allocations: [{ nodeName: 'node-a', sliceRange: '10.69.0.32/27' }], draining: [] },
  );
  rmSync(poolPaths(join(ns.dir, 'nodes', 'node-a'), { network: 'upgraded', name: '~nodeslice' }).data, { force: true });
  const del = await openNode(ns, by27, 'node-a');
  try {
    const released = await release(del, by27, pod('cached-only'), {
      pools: await del.resolvePools(by27, { purpose: 'release' }),
    });
    assert.deepEqual(released.map(formatIP), ['10.69.0.1']);
  } finally {
    await del.close();
  }
});
