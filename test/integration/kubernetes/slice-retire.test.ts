// A node-slice pool is retired before its slice goes back to the free list: an ADD that read the slice as its own
// before it drained and then stalled past the controller's drain grace cannot claim there any more (without
// overlapping reservations nothing else would stop it), while the same slice assigned again later is usable.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DrainConfirmer } from '../../../src/controller/slices/drain.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { RETIRED_ANNOTATION } from '../../../src/store/kubernetes/pool-object.ts';
import { api, cacheHolds, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { createNodeSlicePool, kubeNetwork, openNode } from './harness.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

let ns: Namespace;
let controller: ApiClient;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'retire');
  controller = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  (controller as ApiClient | undefined)?.close();
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });

/** Rewrites the NodeSlicePool's status as the controller would (a new generation). */
async function setStatus(status: Record<string, unknown>): Promise<{ uid: string; generation: number }> {
  const current = await ns.get('nodeslicepools', 'stall');
  assert.ok(current !== undefined);
  const written = (await api(ns.cp, 'PUT', ns.path('nodeslicepools', 'stall'), { ...current, status })) as {
    metadata: { uid: string; generation: number; resourceVersion: string };
  };
  await cacheHolds(ns.cp, ns.path('nodeslicepools', 'stall'), written.metadata.resourceVersion); // what the plugin reads
  return { uid: written.metadata.uid, generation: written.metadata.generation };
}

test('an ADD that stalled past the drain of its slice is refused in the retired pool; the slice given back is usable', async () => {
  const config = kubeNetwork(ns, [testRange('10.130.0.0/24')], {
    name: 'stall',
    nodeSliceSize: 28,
    enableOverlappingRanges: false,
  });
  await createNodeSlicePool(ns, 'stall', '10.130.0.0/24', 28, ['node-a']);
  const store = await openNode(ns, config, 'node-a');
  try {
    const stalled = await store.resolvePools(config); // the ADD reads its slice ... and stalls here
    // Meanwhile the node's slice drains (a reslice, or the node was thought gone) and is confirmed empty.
    const draining = { nodeName: 'node-a', sliceRange: '10.130.0.0/28', reason: 'Resliced' as const };
    const version = await setStatus({
      allocations: [{ nodeName: '', sliceRange: '10.130.0.0/28' }],
      draining: [draining],
    });
    const spec = {
      network: 'stall',
      networkNamed: false,
      range: parseCidr('10.130.0.0/24'),
      sliceSize: 28,
      source: `${ns.name}/stall`,
    };
    const confirmed = await new DrainConfirmer(controller, 0).confirmEmpty(spec, [draining], {
      pools: new Map(),
      log: jsonLog({ level: 'error' }),
      version,
    });
    assert.equal(confirmed.size, 1, 'the empty slice was not confirmed');
    const retired = await ns.get('ippools', 'node-a-10.130.0.0-28');
    assert.ok(
      (retired?.['metadata'] as { annotations?: Record<string, string> }).annotations?.[RETIRED_ANNOTATION] !==
        undefined,
    );
    // The stalled ADD wakes up.
    await assert.rejects(
      assign(store, config, pod('late'), { pools: stalled }),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11,
    );
    const spec0 = (await ns.get('ippools', 'node-a-10.130.0.0-28'))?.['spec'] as {
      allocations?: Record<string, unknown>;
    };
    assert.deepEqual(spec0.allocations ?? {}, {}, 'the stalled ADD claimed an address in a released slice');
    // Later the controller gives the same slice to node-a again: a newer NodeSlicePool version, the pool works again.
    await setStatus({ allocations: [{ nodeName: 'node-a', sliceRange: '10.130.0.0/28' }], draining: [] });
    const [again] = await assign(store, config, pod('later'), { pools: await store.resolvePools(config) });
    assert.equal(again && formatIP(again.address), '10.130.0.1');
    const after = await ns.get('ippools', 'node-a-10.130.0.0-28');
    assert.equal(
      (after?.['metadata'] as { annotations?: Record<string, string> }).annotations?.[RETIRED_ANNOTATION],
      undefined,
    );
  } finally {
    await store.close();
  }
});

test('an ADD that read a NodeSlicePool that was deleted and re-created since is refused in the pool the new one retired', async () => {
  const config = kubeNetwork(ns, [testRange('10.131.0.0/24')], {
    name: 'again',
    nodeSliceSize: 28,
    enableOverlappingRanges: false,
  });
  await createNodeSlicePool(ns, 'again', '10.131.0.0/24', 28, ['node-a']);
  const store = await openNode(ns, config, 'node-a');
  try {
    const stalled = await store.resolvePools(config); // the ADD reads its slice ... and stalls here
    // Meanwhile the NodeSlicePool is deleted and re-created: the new one lists node-a's slice as draining, the
    // controller confirms its pool empty and retires it under the new NodeSlicePool's version, and frees the slice.
    await api(ns.cp, 'DELETE', ns.path('nodeslicepools', 'again'));
    const draining = { nodeName: 'node-a', sliceRange: '10.131.0.0/28', reason: 'NodeLeft' as const };
    const created = (await api(ns.cp, 'POST', ns.path('nodeslicepools'), {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'NodeSlicePool',
      metadata: { name: 'again' },
      spec: { range: '10.131.0.0/24', sliceSize: '/28' },
      status: { allocations: [{ nodeName: 'node-a', sliceRange: '10.131.0.0/28' }], draining: [draining] },
    })) as { metadata: { uid: string; generation: number; resourceVersion: string } };
    const spec = {
      network: 'again',
      networkNamed: false,
      range: parseCidr('10.131.0.0/24'),
      sliceSize: 28,
      source: `${ns.name}/again`,
    };
    const confirmed = await new DrainConfirmer(controller, 0).confirmEmpty(spec, [draining], {
      pools: new Map(),
      log: jsonLog({ level: 'error' }),
      version: { uid: created.metadata.uid, generation: created.metadata.generation },
    });
    assert.equal(confirmed.size, 1, 'the empty slice was not confirmed');
    const current = await ns.get('nodeslicepools', 'again');
    const written = (await api(ns.cp, 'PUT', ns.path('nodeslicepools', 'again'), {
      ...current,
      status: { allocations: [{ nodeName: 'node-b', sliceRange: '10.131.0.0/28' }], draining: [] },
    })) as { metadata: { resourceVersion: string } };
    await cacheHolds(ns.cp, ns.path('nodeslicepools', 'again'), written.metadata.resourceVersion);
    // The stalled ADD wakes up.
    await assert.rejects(
      assign(store, config, pod('late-again'), { pools: stalled }),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11,
    );
    const spec0 = (await ns.get('ippools', 'node-a-10.131.0.0-28'))?.['spec'] as {
      allocations?: Record<string, unknown>;
    };
    assert.deepEqual(spec0.allocations ?? {}, {}, 'the stalled ADD claimed an address in a slice given to node-b');
  } finally {
    await store.close();
  }
});
