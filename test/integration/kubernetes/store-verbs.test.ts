// Every IPAM verb on the Kubernetes store against a real kube-apiserver: what lands in the IPPool and the
// reservations, and how many API requests a steady-state ADD and DEL cost.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assign } from '../../../src/ipam/assign.ts';
import { checkAvailable } from '../../../src/ipam/availability.ts';
import { collectGarbage } from '../../../src/ipam/gc.ts';
import { release } from '../../../src/ipam/release.ts';
import { verify } from '../../../src/ipam/verify.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView, reservationNames } from './harness.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'verbs');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (i: number) => ({ containerId: `c${i}`, ifname: 'eth0', podRef: `default/pod-${i}`, podUid: `uid-${i}` });

test('ADD allocates the first free address into an IPPool named after the range, with node and pod UID', async () => {
  const config = kubeNetwork(ns, [testRange('10.10.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    const [assigned] = await assign(store, config, pod(1), { pools: await store.resolvePools(config) });
    assert.equal(assigned?.address.value, parseIP('10.10.0.1').value);
    const view = await poolView(ns, '10.10.0.0-24');
    assert.equal(view?.range, '10.10.0.0/24');
    const entry = view.allocations.get('10.10.0.1');
    assert.deepEqual(
      { ...entry, createdAt: undefined },
      {
        id: 'c1',
        podref: 'default/pod-1',
        ifname: 'eth0',
        node: 'node-a',
        podUid: 'uid-1',
        createdAt: undefined,
      },
    );
    assert.match(String(entry?.['createdAt']), /^\d{4}-\d\d-\d\dT/);
  } finally {
    await store.close();
  }
});

test('ADD reserves the address cluster-wide with an OverlappingRangeIPReservation named after it', async () => {
  const config = kubeNetwork(ns, [testRange('10.11.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    await assign(store, config, pod(2));
    const orir = await ns.get('overlappingrangeipreservations', '10.11.0.1');
    assert.deepEqual(
      { ...(orir?.['spec'] as object), createdAt: undefined },
      {
        podref: 'default/pod-2',
        ifname: 'eth0',
        containerid: 'c2',
        node: 'node-a',
        podUid: 'uid-2',
        createdAt: undefined,
      },
    );
  } finally {
    await store.close();
  }
});

test('ADD for a re-created sandbox of the same pod returns the held address and records the new container', async () => {
  const config = kubeNetwork(ns, [testRange('10.12.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    const [first] = await assign(store, config, pod(3));
    const [again] = await assign(store, config, { ...pod(3), containerId: 'c3-recreated' });
    assert.equal(again?.address.value, first?.address.value);
    assert.equal(again?.claimed, false);
    const view = await poolView(ns, '10.12.0.0-24');
    assert.equal(view?.allocations.size, 1);
    assert.equal(view.allocations.get('10.12.0.1')?.['id'], 'c3-recreated');
  } finally {
    await store.close();
  }
});

test('ADD repeated for the same container changes nothing in the API', async () => {
  const config = kubeNetwork(ns, [testRange('10.13.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    await assign(store, config, pod(4));
    const before = await poolView(ns, '10.13.0.0-24');
    const [again] = await assign(store, config, pod(4));
    assert.equal(again?.claimed, false);
    assert.equal((await poolView(ns, '10.13.0.0-24'))?.resourceVersion, before?.resourceVersion);
  } finally {
    await store.close();
  }
});

test('DEL frees the address in the IPPool and deletes its reservation', async () => {
  const config = kubeNetwork(ns, [testRange('10.14.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    await assign(store, config, pod(5));
    await assign(store, config, pod(6));
    const released = await release(store, config, pod(5));
    assert.deepEqual(released, [parseIP('10.14.0.1')]);
    assert.deepEqual([...((await poolView(ns, '10.14.0.0-24'))?.allocations.keys() ?? [])], ['10.14.0.2']);
    const names = await reservationNames(ns);
    assert.ok(!names.includes('10.14.0.1'), `reservation 10.14.0.1 still exists: ${names.join(', ')}`);
    assert.ok(names.includes('10.14.0.2'));
  } finally {
    await store.close();
  }
});

test('DEL of an unknown attachment succeeds and writes nothing', async () => {
  const config = kubeNetwork(ns, [testRange('10.15.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    await assign(store, config, pod(7));
    const before = await poolView(ns, '10.15.0.0-24');
    assert.deepEqual(await release(store, config, { containerId: 'nobody', ifname: 'eth0' }), []);
    assert.equal((await poolView(ns, '10.15.0.0-24'))?.resourceVersion, before?.resourceVersion);
  } finally {
    await store.close();
  }
});

test('DEL of a pool that was never created succeeds', async () => {
  const config = kubeNetwork(ns, [testRange('10.16.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    assert.deepEqual(await release(store, config, pod(8)), []);
    assert.equal(await poolView(ns, '10.16.0.0-24'), undefined);
  } finally {
    await store.close();
  }
});

test('CHECK passes for the holder and fails with code 102 for another container', async () => {
  const config = kubeNetwork(ns, [testRange('10.17.0.0/24')]);
  const store = await openNode(ns, config, 'node-a');
  try {
    const [assigned] = await assign(store, config, pod(9));
    assert.ok(assigned);
    await verify(store, config, pod(9), [assigned.address]);
    await assert.rejects(
      verify(store, config, pod(10), [assigned.address]),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 102,
    );
  } finally {
    await store.close();
  }
});

test('CHECK reads the API, not the cache: an allocation removed elsewhere fails the check', async () => {
  const config = kubeNetwork(ns, [testRange('10.18.0.0/24')]);
  const nodeA = await openNode(ns, config, 'node-a');
  const nodeB = await openNode(ns, config, 'node-b');
  try {
    const [assigned] = await assign(nodeA, config, pod(11));
    assert.ok(assigned);
    await release(nodeB, config, pod(11)); // e.g. the controller, or a DEL routed elsewhere
    await assert.rejects(verify(nodeA, config, pod(11), [assigned.address]), /is not allocated/);
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});

test("GC releases only this node's allocations that are not in the valid list", async () => {
  const config = kubeNetwork(ns, [testRange('10.19.0.0/24')]);
  const nodeA = await openNode(ns, config, 'node-a');
  const nodeB = await openNode(ns, config, 'node-b');
  try {
    await assign(nodeA, config, pod(12)); // .1 kept (valid)
    await assign(nodeA, config, pod(13)); // .2 stale on node-a
    await assign(nodeB, config, pod(14)); // .3 another node's
    const report = await collectGarbage(nodeA, config, [{ containerId: 'c12', ifname: 'eth0' }]);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(
      report.released.map((r) => r.record.containerId),
      ['c13'],
    );
    const view = await poolView(ns, '10.19.0.0-24');
    assert.deepEqual([...(view?.allocations.keys() ?? [])].sort(), ['10.19.0.1', '10.19.0.3']);
    assert.ok(!(await reservationNames(ns)).includes('10.19.0.2'));
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});

test('STATUS passes while the API serves, also once the range is exhausted (only ADD fails, with code 100)', async () => {
  const config = kubeNetwork(ns, [testRange('10.20.0.0/30')]); // .1 and .2
  const store = await openNode(ns, config, 'node-a');
  try {
    await checkAvailable(store, config);
    await assign(store, config, pod(15));
    await assign(store, config, pod(16));
    await assert.rejects(
      assign(store, config, pod(17)),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 100,
    );
    await checkAvailable(store, config);
  } finally {
    await store.close();
  }
});

test('STATUS fails with code 50 when the API server is unreachable', async () => {
  const kubeconfig = join(ns.dir, 'unreachable.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor({ ...ns.cp, url: 'https://127.0.0.1:1' }, ns.name));
  const config = kubeNetwork(ns, [testRange('10.21.0.0/24')], { kubeconfig });
  const store = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(
      checkAvailable(store, config),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 50,
    );
  } finally {
    await store.close();
  }
});

test('ADD with the API server unreachable fails with code 11', async () => {
  const kubeconfig = join(ns.dir, 'unreachable.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor({ ...ns.cp, url: 'https://127.0.0.1:1' }, ns.name));
  const config = kubeNetwork(ns, [testRange('10.22.0.0/24')], { kubeconfig });
  const store = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(
      assign(store, config, pod(18)),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11,
    );
  } finally {
    await store.close();
  }
});

test('a steady-state ADD on a shared pool makes one API write without reservations and two with them (and two reads); DEL the same', async () => {
  for (const reservations of [false, true]) {
    const cidr = reservations ? '10.23.1.0/24' : '10.23.0.0/24';
    const config = kubeNetwork(ns, [testRange(cidr)], { enableOverlappingRanges: reservations });
    const store = await openNode(ns, config, `node-rq-${reservations}`);
    try {
      await assign(store, config, pod(100)); // warms the cache (first use creates the pool)
      const methods: string[] = [];
      const send = store.api.send.bind(store.api);
      store.api.send = (req, options) => (methods.push(req.method), send(req, options));
      await assign(store, config, pod(101));
      const add = methods.splice(0);
      await release(store, config, pod(101));
      const del = methods.splice(0);
      const writes = (list: string[]) => list.filter((m) => m !== 'GET').length;
      const reads = (list: string[]) => list.filter((m) => m === 'GET').length;
      // With reservations, a shared pool (other nodes write it too) is read before reserving, so that a claim is
      // never reserved on a stale cache, and the reservation is read after the pool write, so that the ADD reports
      // success only while it still exists; DEL reads the reservation before its conditional delete. Every writing
      // update reads Whereabouts' Lease (from the watch cache): none here, so nothing more is written.
      assert.deepEqual(
        { reservations, addWrites: writes(add), addReads: reads(add), delWrites: writes(del), delReads: reads(del) },
        {
          reservations,
          addWrites: reservations ? 2 : 1,
          addReads: reservations ? 3 : 1,
          delWrites: reservations ? 2 : 1,
          delReads: reservations ? 2 : 1,
        },
      );
    } finally {
      await store.close();
    }
  }
});

test('a kubeconfig with tokenFile reads the token on every run (a rotated token is picked up)', async () => {
  const tokenFile = join(ns.dir, 'token');
  const kubeconfig = join(ns.dir, 'token-file.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { tokenFile }));
  const config = kubeNetwork(ns, [testRange('10.24.0.0/24')], { kubeconfig });
  writeFileSync(tokenFile, 'not-the-token');
  const rejected = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(
      assign(rejected, config, pod(19)),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11 && /401/.test(err.message),
    );
  } finally {
    await rejected.close();
  }
  writeFileSync(tokenFile, `${ns.cp.token}\n`);
  const accepted = await openNode(ns, config, 'node-a');
  try {
    const [assigned] = await assign(accepted, config, pod(19));
    assert.equal(assigned?.address.value, parseIP('10.24.0.1').value);
  } finally {
    await accepted.close();
  }
});
