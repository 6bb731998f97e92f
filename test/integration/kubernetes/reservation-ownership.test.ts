// Reservations have an owner (DESIGN §9): a reservation found existing for the same pod is adopted, never deleted
// as if this update had created it; a released address's reservation goes only when it still names the released
// attachment; an idempotent re-ADD keeps the reservation's container in step; and a writer deciding on a stale
// cache reserves only what it will commit, so another writer's reservation of a committed address is never blocked.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assign } from '../../../src/ipam/assign.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import type { ApiRequest } from '../../../src/kube/api.ts';
import type { KubernetesStore } from '../../../src/store/kubernetes/kubernetes-store.ts';
import { api, cacheHolds, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView } from './harness.ts';
import { poolRefs } from '../../../src/store/pool-refs.ts';
import { followRecord, reserve } from '../../../src/store/kubernetes/reservations.ts';
import { warmRecord } from '../../../src/store/warm-record.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'owners');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (name: string, container = `c-${name}`) => ({
  containerId: container,
  ifname: 'eth0',
  podRef: `default/${name}`,
});

async function reservationSpec(name: string): Promise<Record<string, unknown> | undefined> {
  const object = await ns.get('overlappingrangeipreservations', name);
  return object?.['spec'] as Record<string, unknown> | undefined;
}

/** Records every request the store sends (the API server itself is real). */
function recordRequests(store: KubernetesStore): ApiRequest[] {
  const seen: ApiRequest[] = [];
  const send = store.api.send.bind(store.api);
  store.api.send = (req, options) => {
    seen.push(req);
    return send(req, options);
  };
  return seen;
}

test('a re-created pod that adopts its own reservation and then loses a 409 keeps the reservation', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.0.0/24')], { name: 'adopt-409' });
  const nodeA = await openNode(ns, config, 'node-a');
  const nodeB = await openNode(ns, config, 'node-b');
  try {
    await assign(nodeB, config, pod('q')); // node-b caches the pool holding only .1
    const [first] = await assign(nodeA, config, pod('web-0', 'c-old')); // .2 for web-0, behind node-b's back
    assert.equal(first && formatIP(first.address), '10.60.0.2');
    // The StatefulSet pod is re-created on node-b: its stale cache plans .2, finds web-0's reservation (adopted),
    // loses the resourceVersion race, re-reads and takes the idempotent path.
    const [again] = await assign(nodeB, config, pod('web-0', 'c-new'));
    assert.equal(again && formatIP(again.address), '10.60.0.2');
    const view = await poolView(ns, '10.60.0.0-24');
    assert.equal(view?.allocations.get('10.60.0.2')?.['id'], 'c-new');
    const spec = await reservationSpec('10.60.0.2');
    assert.ok(spec !== undefined, 'the pool holds 10.60.0.2 but its reservation was deleted');
    assert.equal(spec['podref'], 'default/web-0');
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});

test("an idempotent re-ADD with a new container id brings the reservation's containerid in step", async () => {
  const config = kubeNetwork(ns, [testRange('10.60.1.0/24')], { name: 'in-step' });
  const node = await openNode(ns, config, 'node-a');
  try {
    await assign(node, config, pod('db-0', 'c-1'));
    await assign(node, config, pod('db-0', 'c-2'));
    assert.equal((await reservationSpec('10.60.1.1'))?.['containerid'], 'c-2');
  } finally {
    await node.close();
  }
});

test('DEL leaves a reservation that names another container of the pod (re-adopted meanwhile)', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.2.0/24')], { name: 'del-race' });
  const node = await openNode(ns, config, 'node-a');
  try {
    await assign(node, config, pod('api-0', 'c-1'));
    // The state a racing re-ADD of the same pod leaves between DEL's pool write and its reservation delete.
    const current = await ns.get('overlappingrangeipreservations', '10.60.2.1');
    assert.ok(current !== undefined);
    await api(ns.cp, 'PUT', ns.path('overlappingrangeipreservations', '10.60.2.1'), {
      ...current,
      spec: { ...(current['spec'] as object), containerid: 'c-2' },
    });
    assert.deepEqual(await release(node, config, pod('api-0', 'c-1')), [
      { family: 4, value: (10n << 24n) + (60n << 16n) + (2n << 8n) + 1n },
    ]);
    assert.equal(
      (await reservationSpec('10.60.2.1'))?.['containerid'],
      'c-2',
      'DEL deleted a reservation it did not own',
    );
  } finally {
    await node.close();
  }
});

test('DEL leaves a reservation that names another pod (an overlapping range holds the address)', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.3.0/24')], { name: 'del-foreign' });
  const node = await openNode(ns, config, 'node-a');
  try {
    await assign(node, config, pod('p', 'c-p'));
    const current = await ns.get('overlappingrangeipreservations', '10.60.3.1');
    assert.ok(current !== undefined);
    await api(ns.cp, 'PUT', ns.path('overlappingrangeipreservations', '10.60.3.1'), {
      ...current,
      spec: { podref: 'other/holder', ifname: 'net1', containerid: 'c-holder' },
    });
    await release(node, config, pod('p', 'c-p'));
    assert.equal((await reservationSpec('10.60.3.1'))?.['podref'], 'other/holder');
  } finally {
    await node.close();
  }
});

test('a writer on a stale cache never reserves an address another writer already committed', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.4.0/24')], { name: 'mixed' });
  const node = await openNode(ns, config, 'node-a');
  try {
    await assign(node, config, pod('first')); // node-a caches the pool holding .1
    // Whereabouts commits .2 to the pool and creates its reservation only afterwards.
    const pool = await ns.get('ippools', '10.60.4.0-24');
    assert.ok(pool !== undefined);
    const spec = pool['spec'] as { allocations: Record<string, unknown> };
    const put = (await api(ns.cp, 'PUT', ns.path('ippools', '10.60.4.0-24'), {
      ...pool,
      spec: {
        ...spec,
        allocations: { ...spec.allocations, '2': { id: 'c-wb', podref: 'default/wb', ifname: 'eth0' } },
      },
    })) as { metadata: { resourceVersion: string } };
    // The node reads the pool from the API server's watch cache before reserving: once that cache holds the commit.
    // (Within the watch's delay it may still reserve .2; the next test shows that reservation goes to the holder.)
    await cacheHolds(ns.cp, ns.path('ippools', '10.60.4.0-24'), put.metadata.resourceVersion);
    const seen = recordRequests(node);
    const [mine] = await assign(node, config, pod('second'));
    assert.equal(mine && formatIP(mine.address), '10.60.4.3');
    const posted = seen.filter((r) => r.method === 'POST' && r.path.endsWith('/overlappingrangeipreservations'));
    const names = posted.map((r) => (r.body as { metadata: { name: string } }).metadata.name);
    assert.deepEqual(names, ['10.60.4.3'], 'reserved an address that the pool already held for another writer');
    // Whereabouts' own reservation of its committed address goes through.
    await ns.create('overlappingrangeipreservations', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: '10.60.4.2' },
      spec: { podref: 'default/wb', ifname: 'eth0', containerid: 'c-wb' },
    });
  } finally {
    await node.close();
  }
});

test('a reservation created just as another writer committed the address is handed to that writer, not deleted', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.5.0/24')], { name: 'hand-over' });
  const node = await openNode(ns, config, 'node-a');
  try {
    await assign(node, config, pod('first'));
    // Between this node's read of the pool and its reservation of .2, Whereabouts commits .2 (it reserves after
    // its pool write, and its create now fails: the address must not end up unreserved).
    const send = node.api.send.bind(node.api);
    let raced = false;
    node.api.send = async (req, options) => {
      if (!raced && req.method === 'POST' && req.path.endsWith('/overlappingrangeipreservations')) {
        raced = true;
        await api(
          ns.cp,
          'PATCH',
          ns.path('ippools', '10.60.5.0-24'),
          { spec: { allocations: { '2': { id: 'c-wb', podref: 'default/wb', ifname: 'eth0' } } } },
          'application/merge-patch+json',
        );
      }
      return send(req, options);
    };
    const [mine] = await assign(node, config, pod('second'));
    assert.ok(raced);
    assert.equal(mine && formatIP(mine.address), '10.60.5.3');
    assert.deepEqual(
      {
        podref: (await reservationSpec('10.60.5.2'))?.['podref'],
        containerid: (await reservationSpec('10.60.5.2'))?.['containerid'],
      },
      { podref: 'default/wb', containerid: 'c-wb' },
    );
    assert.equal((await reservationSpec('10.60.5.3'))?.['podref'], 'default/second');
  } finally {
    await node.close();
  }
});

test('a pod re-created under the same name does not adopt the reservation its predecessor holds in an overlapping range', async () => {
  const wide = kubeNetwork(ns, [testRange('10.60.6.0/24')], { name: 'uid-wide' });
  const narrow = kubeNetwork(ns, [testRange('10.60.6.0/28')], { name: 'uid-narrow' });
  const node = await openNode(ns, wide, 'node-a');
  const other = await openNode(ns, narrow, 'node-b');
  try {
    const [old] = await assign(node, wide, { ...pod('sts-0', 'c-old'), podUid: 'uid-old' });
    assert.equal(old && formatIP(old.address), '10.60.6.1');
    // The old pod is force-deleted before its DEL ran; the new one (same name, new UID) lands on the narrow range.
    const [fresh] = await assign(other, narrow, { ...pod('sts-0', 'c-new'), podUid: 'uid-new' });
    assert.equal(
      fresh && formatIP(fresh.address),
      '10.60.6.2',
      'the new pod took the address its predecessor still holds',
    );
    assert.equal((await reservationSpec('10.60.6.1'))?.['podUid'], 'uid-old');
  } finally {
    await node.close();
    await other.close();
  }
});

test('a reservation that names no interface (Whereabouts 0.6) is not adopted by another interface of its pod', async () => {
  const narrow = kubeNetwork(ns, [testRange('10.60.7.0/28')], { name: 'legacy-net2' });
  // Whereabouts 0.6 gave net1 of the pod .1 in the wide range: a record and a reservation without ifname.
  await ns.create('ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: '10.60.7.0-24' },
    spec: { range: '10.60.7.0/24', allocations: { '1': { id: 'c-sandbox', podref: 'default/multi' } } },
  });
  await ns.create('overlappingrangeipreservations', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name: '10.60.7.1' },
    spec: { podref: 'default/multi', containerid: 'c-sandbox' },
  });
  const node = await openNode(ns, narrow, 'node-a');
  try {
    // net2 of the same pod, in the same sandbox (one container id for all its interfaces), on the narrow range.
    const [second] = await assign(node, narrow, { containerId: 'c-sandbox', ifname: 'net2', podRef: 'default/multi' });
    assert.equal(
      second && formatIP(second.address),
      '10.60.7.2',
      'net2 took the address that net1 holds in an overlapping range',
    );
  } finally {
    await node.close();
  }
  assert.deepEqual(await reservationSpec('10.60.7.1'), { podref: 'default/multi', containerid: 'c-sandbox' });
});

test('a re-ADD after the switch from Whereabouts keeps the address, and its reservation without ifname follows it', async () => {
  const config = kubeNetwork(ns, [testRange('10.60.8.0/24')], { name: 'legacy-readd' });
  await ns.create('ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: '10.60.8.0-24' },
    spec: {
      range: '10.60.8.0/24',
      allocations: { '1': { id: 'c-old', podref: 'default/upgraded', ifname: 'net1' } },
    },
  });
  await ns.create('overlappingrangeipreservations', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name: '10.60.8.1' },
    spec: { podref: 'default/upgraded', containerid: 'c-old' },
  });
  const node = await openNode(ns, config, 'node-a');
  try {
    const [again] = await assign(node, config, { containerId: 'c-new', ifname: 'net1', podRef: 'default/upgraded' });
    assert.equal(again && formatIP(again.address), '10.60.8.1');
    assert.equal(again?.claimed, false);
  } finally {
    await node.close();
  }
  const spec = await reservationSpec('10.60.8.1');
  assert.deepEqual([spec?.['podref'], spec?.['ifname'], spec?.['containerid']], ['default/upgraded', 'net1', 'c-new']);
});

test("a warm address's reservation follows its rename without a read, and only at the version its claim wrote", async () => {
  const config = kubeNetwork(ns, [testRange('10.60.9.0/24')], { name: 'warm-follow' });
  const node = await openNode(ns, config, 'node-a');
  try {
    const [ref] = poolRefs(config);
    assert.ok(ref !== undefined);
    const warm = warmRecord('node-a', ref.name, 's', new Date().toISOString());
    const first = { family: 4 as const, value: 0x0a3c0901n }; // 10.60.9.1
    const claimed = await reserve(node.api, ref, first, warm);
    assert.equal(claimed.kind, 'created');
    const seen = recordRequests(node);
    const owner = { ...pod('renamed'), node: 'node-a' };
    const followed = await followRecord(node.api, ref, first, owner, { previous: warm, known: claimed.held });
    assert.equal(followed, 'updated');
    assert.deepEqual(
      seen.map((r) => r.method),
      ['PUT'],
      'one conditional write, no read first',
    );
    assert.equal((await reservationSpec('10.60.9.1'))?.['podref'], 'default/renamed');

    // Known, but moved on since (another attachment holds it now): the write is refused, the follow reads it and
    // leaves it to its holder.
    const second = { family: 4 as const, value: 0x0a3c0902n }; // 10.60.9.2
    const again = await reserve(node.api, ref, second, warm);
    assert.equal(again.kind, 'created');
    const current = await ns.get('overlappingrangeipreservations', '10.60.9.2');
    assert.ok(current !== undefined);
    await api(ns.cp, 'PUT', ns.path('overlappingrangeipreservations', '10.60.9.2'), {
      ...current,
      spec: { ...(current['spec'] as object), podref: 'default/other', containerid: 'c-other', ifname: 'net9' },
    });
    seen.length = 0;
    const refused = await followRecord(node.api, ref, second, owner, { previous: warm, known: again.held });
    assert.equal(refused, 'unchanged');
    assert.deepEqual(
      seen.map((r) => r.method),
      ['PUT', 'GET'],
    );
    assert.equal((await reservationSpec('10.60.9.2'))?.['podref'], 'default/other');
  } finally {
    await node.close();
  }
});
