// Objects written by Whereabouts (the shape of its examples) are honoured: their allocations are never handed out
// again, their releases work, fields we do not model survive our writes, and GC leaves records without a node
// (which it cannot place) to the controller.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assign } from '../../../src/ipam/assign.ts';
import { collectGarbage } from '../../../src/ipam/gc.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'compat');
  // As Whereabouts 0.6 (no ifname) and 0.9 (ifname, ipamclaimref) write them.
  await ns.create('ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: '10.50.0.0-24' },
    spec: {
      range: '10.50.0.0/24',
      allocations: {
        '1': { id: 'wb-old-container', podref: 'default/old-pod' },
        '2': { id: 'wb-container', podref: 'default/wb-pod', ifname: 'net1', ipamclaimref: 'default/claim-1' },
        '4': { id: 'wb-other', podref: 'default/other', ifname: 'net1' },
      },
    },
  });
  await ns.create('overlappingrangeipreservations', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name: '10.50.0.3' },
    spec: { podref: 'default/in-another-range', ifname: 'net1' },
  });
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const config = () => kubeNetwork(ns, [testRange('10.50.0.0/24')], { name: 'wb' });
const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'net1', podRef: `default/${name}` });

test('ADD skips the addresses a Whereabouts pool holds and the ones its reservations hold', async () => {
  const store = await openNode(ns, config(), 'node-a');
  try {
    const [first] = await assign(store, config(), pod('new-1'));
    const [second] = await assign(store, config(), pod('new-2'));
    assert.deepEqual(
      [first, second].map((a) => a && formatIP(a.address)),
      ['10.50.0.5', '10.50.0.6'],
    );
  } finally {
    await store.close();
  }
});

test('our writes keep the fields Whereabouts wrote on entries we did not touch', async () => {
  const view = await poolView(ns, '10.50.0.0-24');
  assert.deepEqual(view?.allocations.get('10.50.0.2'), {
    id: 'wb-container',
    podref: 'default/wb-pod',
    ifname: 'net1',
    ipamclaimref: 'default/claim-1',
  });
  assert.deepEqual(view.allocations.get('10.50.0.1'), { id: 'wb-old-container', podref: 'default/old-pod' });
});

test('ADD for a pod Whereabouts already served returns its address (idempotent by pod and interface)', async () => {
  const store = await openNode(ns, config(), 'node-a');
  try {
    const [again] = await assign(store, config(), {
      containerId: 'new-sandbox',
      ifname: 'net1',
      podRef: 'default/wb-pod',
    });
    assert.equal(again && formatIP(again.address), '10.50.0.2');
    assert.equal(again?.claimed, false);
  } finally {
    await store.close();
  }
  const entry = (await poolView(ns, '10.50.0.0-24'))?.allocations.get('10.50.0.2');
  assert.equal(entry?.['id'], 'new-sandbox');
  assert.equal(entry['ipamclaimref'], 'default/claim-1');
});

test('GC on a node leaves allocations without a node (written by Whereabouts) alone', async () => {
  const store = await openNode(ns, config(), 'node-a');
  try {
    const report = await collectGarbage(store, config(), []);
    // Only our own records of node-a go: new-1, new-2 and the re-recorded wb-pod.
    assert.deepEqual(report.released.map((r) => r.record.containerId).sort(), ['c-new-1', 'c-new-2', 'new-sandbox']);
  } finally {
    await store.close();
  }
  const view = await poolView(ns, '10.50.0.0-24');
  assert.deepEqual([...(view?.allocations.keys() ?? [])].sort(), ['10.50.0.1', '10.50.0.4']);
});

test('DEL releases an allocation Whereabouts made, matching container id and interface', async () => {
  const store = await openNode(ns, config(), 'node-b');
  try {
    const released = await release(store, config(), { containerId: 'wb-other', ifname: 'net1' });
    assert.deepEqual(released.map(formatIP), ['10.50.0.4']);
  } finally {
    await store.close();
  }
  assert.deepEqual([...((await poolView(ns, '10.50.0.0-24'))?.allocations.keys() ?? [])], ['10.50.0.1']);
});
