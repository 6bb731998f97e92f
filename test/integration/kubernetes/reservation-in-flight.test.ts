// In-flight work is visible (DESIGN §9): a reservation a commit created or adopted carries the time it was last
// taken, and the controller's grace runs from that time, not from the object's creation; and before a commit
// reports success it checks that the reservation of the address it committed still exists as it left it: one
// deleted meanwhile (Whereabouts' DEL deletes reservations by name, unconditionally) is re-created, one that now
// names another attachment makes the commit give the address back and plan again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { heldAddresses } from '../../../src/controller/orphans/cleanup-pass.ts';
import { DEFAULT_POLICY } from '../../../src/controller/orphans/orphans.ts';
import { podView } from '../../../src/controller/orphans/pod-view.ts';
import { poolView as controllerPoolView, type PoolView } from '../../../src/controller/pools/view.ts';
import { judgeReservation, type ReservationReason } from '../../../src/controller/reservations/orphaned.ts';
import { reservationView } from '../../../src/controller/runtime/views.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { ApiUnreachableError, type ApiRequest } from '../../../src/kube/api.ts';
import { PoolWriter } from '../../../src/store/kubernetes/writer.ts';
import type { KubernetesStore } from '../../../src/store/kubernetes/kubernetes-store.ts';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, memoryLogger, openNode, poolView } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'inflight');
});

after(async () => {
  await apiRequest(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/web-0?gracePeriodSeconds=0`);
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

/** The controller's default --reservation-grace. */
const GRACE_MS = 60_000;

const attachment = (name: string, container: string) => ({
  containerId: container,
  ifname: 'eth0',
  podRef: `default/${name}`,
});

async function reservationSpec(name: string): Promise<Record<string, unknown> | undefined> {
  const object = await ns.get('overlappingrangeipreservations', name);
  return object?.['spec'] as Record<string, unknown> | undefined;
}

const isPoolWrite = (req: ApiRequest) => req.method !== 'GET' && req.path.includes('/ippools');

/** Runs `before` ahead of the store's n-th pool write (1-based); the API server itself is real. */
function beforePoolWrite(store: KubernetesStore, before: (n: number) => Promise<void>): void {
  const send = store.api.send.bind(store.api);
  let writes = 0;
  store.api.send = async (req, options) => {
    if (isPoolWrite(req)) await before(++writes);
    return send(req, options);
  };
}

async function createEmptyPool(name: string, range: string): Promise<void> {
  await ns.create('ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name },
    spec: { range, allocations: {} },
  });
}

test("a reservation adopted by a pod's retry is in flight for the controller from its adoption, not from its creation", async () => {
  const config = kubeNetwork(ns, [testRange('10.71.0.0/24')], { name: 'in-flight' });
  await createEmptyPool('10.71.0.0-24', '10.71.0.0/24');
  // A running pod whose sandbox is being re-created (its age and phase do not protect it).
  await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-0' },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  });
  await api(
    ns.cp,
    'PATCH',
    `/api/v1/namespaces/${ns.name}/pods/web-0/status`,
    { status: { phase: 'Running' } },
    'application/merge-patch+json',
  );

  // The pod's first ADD: its pool write's answer is lost and the API stays out of its reach from then on (it cannot
  // find out, or clean up), so its reservation of .1 stays; no record.
  const first = await openNode(ns, config, 'node-a');
  try {
    const send = first.api.send.bind(first.api);
    let cut = false;
    first.api.send = async (req, options) => {
      if (cut || isPoolWrite(req)) {
        cut = true;
        throw new ApiUnreachableError('answer lost (injected)', { ambiguous: true });
      }
      return send(req, options);
    };
    await assert.rejects(assign(first, config, { ...attachment('web-0', 'c-1'), podRef: `${ns.name}/web-0` }));
  } finally {
    await first.close();
  }
  assert.equal((await reservationSpec('10.71.0.1'))?.['containerid'], 'c-1');

  // Its retry adopts the reservation; its first pool write is refused (another node wrote the pool meanwhile);
  // before its second write lands, the controller runs a pass just under the grace after the adoption began.
  const retry = await openNode(ns, config, 'node-a');
  const other = await openNode(ns, config, 'node-b');
  let adoptionBegan: number | undefined;
  let verdict: ReservationReason | undefined | 'not judged' = 'not judged';
  try {
    const send = retry.api.send.bind(retry.api);
    retry.api.send = async (req, options) => {
      if (req.method === 'GET' && req.path.endsWith('/overlappingrangeipreservations/10.71.0.1'))
        adoptionBegan ??= Date.now();
      return send(req, options);
    };
    beforePoolWrite(retry, async (n) => {
      if (n === 1) await assign(other, config, attachment('q', 'c-q'));
      if (n !== 2 || adoptionBegan === undefined) return;
      const object = await ns.get('overlappingrangeipreservations', '10.71.0.1');
      const view = reservationView(object);
      const pools = (await ns.list('ippools')).map(controllerPoolView).filter((p): p is PoolView => p !== undefined);
      const pod = podView(await api(ns.cp, 'GET', `/api/v1/namespaces/${ns.name}/pods/web-0`));
      verdict = judgeReservation(view, pod, heldAddresses(pools), {
        networkNames: new Set(),
        policy: DEFAULT_POLICY,
        graceMs: GRACE_MS,
        now: adoptionBegan + GRACE_MS - 1,
      });
      if (verdict !== undefined) await new PoolWriter(other.api).deleteReservation(view);
    });
    const [again] = await assign(retry, config, { ...attachment('web-0', 'c-2'), podRef: `${ns.name}/web-0` });
    assert.equal(again && formatIP(again.address), '10.71.0.1');
  } finally {
    await retry.close();
    await other.close();
  }
  assert.equal(verdict, undefined, 'the controller judged the adopted reservation by its creation time and deleted it');
  const spec = await reservationSpec('10.71.0.1');
  assert.ok(spec !== undefined, 'the pool holds 10.71.0.1 but its reservation is gone');
  assert.equal(spec['containerid'], 'c-2');
});

test('an adoption by a retry of the same container gives the reservation a new version: a delete judged before it fails', async () => {
  const config = kubeNetwork(ns, [testRange('10.71.3.0/24')], { name: 'same-container' });
  await createEmptyPool('10.71.3.0-24', '10.71.3.0/24');
  const first = await openNode(ns, config, 'node-a');
  try {
    const send = first.api.send.bind(first.api);
    first.api.send = async (req, options) => {
      if (isPoolWrite(req)) throw new ApiUnreachableError('answer lost (injected)', { ambiguous: true });
      return send(req, options);
    };
    await assert.rejects(assign(first, config, attachment('p', 'c-1')));
  } finally {
    await first.close();
  }
  const judged = reservationView(await ns.get('overlappingrangeipreservations', '10.71.3.1'));
  const retry = await openNode(ns, config, 'node-a');
  try {
    const [again] = await assign(retry, config, attachment('p', 'c-1'));
    assert.equal(again && formatIP(again.address), '10.71.3.1');
    assert.equal(await new PoolWriter(retry.api).deleteReservation(judged), 'conflict');
  } finally {
    await retry.close();
  }
  assert.ok((await reservationSpec('10.71.3.1')) !== undefined);
});

test("a reservation deleted by name between its creation and the pool write (Whereabouts' DEL) is re-created before the ADD succeeds", async () => {
  const config = kubeNetwork(ns, [testRange('10.71.1.0/24')], { name: 'deleted-by-name' });
  const log = memoryLogger();
  const node = await openNode(ns, config, 'node-a', { log });
  try {
    beforePoolWrite(node, async (n) => {
      if (n === 1) await api(ns.cp, 'DELETE', ns.path('overlappingrangeipreservations', '10.71.1.1'));
    });
    const [mine] = await assign(node, config, attachment('p', 'c-p'));
    assert.equal(mine && formatIP(mine.address), '10.71.1.1');
  } finally {
    await node.close();
  }
  assert.equal((await poolView(ns, '10.71.1.0-24'))?.allocations.get('10.71.1.1')?.['id'], 'c-p');
  const spec = await reservationSpec('10.71.1.1');
  assert.ok(spec !== undefined, 'the ADD succeeded with 10.71.1.1 held and unreserved');
  assert.deepEqual([spec['podref'], spec['ifname'], spec['containerid']], ['default/p', 'eth0', 'c-p']);
  assert.ok(
    log.lines.some(
      (l) => l.startsWith('[warning]') && l.includes('10.71.1.1 was deleted while this request relied on it'),
    ),
    log.lines.join('\n'),
  );
});

test('a commit whose reservation was taken over by an overlapping range before its pool write landed gives the address back and takes another', async () => {
  const wide = kubeNetwork(ns, [testRange('10.71.2.0/24')], { name: 'lost-wide' });
  const node = await openNode(ns, wide, 'node-a');
  try {
    beforePoolWrite(node, async (n) => {
      if (n !== 1) return;
      // Whereabouts' DEL deletes the reservation by name; then its ADD on an overlapping range commits .1 in its
      // pool and reserves it.
      await api(ns.cp, 'DELETE', ns.path('overlappingrangeipreservations', '10.71.2.1'));
      await ns.create('ippools', {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: '10.71.2.0-28' },
        spec: { range: '10.71.2.0/28', allocations: { '1': { id: 'c-q', podref: 'default/q', ifname: 'net1' } } },
      });
      await ns.create('overlappingrangeipreservations', {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'OverlappingRangeIPReservation',
        metadata: { name: '10.71.2.1' },
        spec: { podref: 'default/q', ifname: 'net1', containerid: 'c-q' },
      });
    });
    const [mine] = await assign(node, wide, attachment('p', 'c-p'));
    assert.equal(mine && formatIP(mine.address), '10.71.2.2', 'the ADD kept an address another pool holds');
  } finally {
    await node.close();
  }
  const pool = await poolView(ns, '10.71.2.0-24');
  assert.deepEqual([...(pool?.allocations.keys() ?? [])], ['10.71.2.2']);
  assert.equal((await reservationSpec('10.71.2.1'))?.['podref'], 'default/q');
  assert.equal((await reservationSpec('10.71.2.2'))?.['podref'], 'default/p');
});
