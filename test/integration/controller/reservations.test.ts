// Reservation cleanup by `hereabouts controller --once`: OverlappingRangeIPReservations of gone pods, or of
// addresses their pod does not hold, are deleted; names are read with and without network_name, IPv4 and IPv6.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  ago,
  allocation,
  createNad,
  createPod,
  createPool,
  createReservation,
  deleteAllPods,
  events,
  reservationNames,
  reservations,
  runOnce,
} from './harness.ts';

describe('controller reservation cleanup', () => {
  let ns: Namespace;
  let alive: string;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'resv');
    alive = await createPod(ns, 'alive', { phase: 'Running' });
  });
  after(async () => {
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  const once = (...flags: string[]) => {
    const run = runOnce(ns, ...flags);
    assert.equal(run.code, 0, run.stderr);
    return run;
  };
  const present = async (...names: string[]) => {
    const all = await reservationNames(ns);
    return names.filter((n) => all.includes(n));
  };

  test('IPv4 without network_name: the reservation of a gone pod is deleted', async () => {
    await createReservation(ns, '10.82.0.1', `${ns.name}/gone-a`);
    const run = once();
    assert.deepEqual(await present('10.82.0.1'), []);
    assert.ok(
      run.lines.some((l) => l.msg === `deleted OverlappingRangeIPReservation 10.82.0.1 of ${ns.name}/gone-a: pod-gone`),
      run.stderr,
    );
  });

  test('IPv6 without network_name: the reservation of a gone pod is deleted', async () => {
    await createReservation(ns, 'fd00-82--1', `${ns.name}/gone-b`);
    once();
    assert.deepEqual(await present('fd00-82--1'), []);
  });

  test('IPv4 with network_name: the reservation of a gone pod is deleted', async () => {
    await createReservation(ns, 'blue-10.82.0.1', `${ns.name}/gone-c`);
    once();
    assert.deepEqual(await present('blue-10.82.0.1'), []);
  });

  test('IPv6 with network_name: the reservation of a gone pod is deleted', async () => {
    await createReservation(ns, 'blue-fd00-82--5', `${ns.name}/gone-d`);
    once();
    assert.deepEqual(await present('blue-fd00-82--5'), []);
  });

  test('reservations of addresses the live pod holds are kept, with and without network_name, IPv4 and IPv6', async () => {
    await createPool(ns, '10.82.1.0-24', '10.82.1.0/24', { '7': allocation(ns, 'alive', alive) });
    await createPool(ns, 'blue-fd00-82-1---64', 'fd00:82:1::/64', { '7': allocation(ns, 'alive', alive) });
    for (const name of ['10.82.1.7', 'blue-10.82.1.7', 'fd00-82-1--7', 'blue-fd00-82-1--7'])
      await createReservation(ns, name, `${ns.name}/alive`);
    once();
    assert.deepEqual(await present('10.82.1.7', 'blue-10.82.1.7', 'fd00-82-1--7', 'blue-fd00-82-1--7'), [
      '10.82.1.7',
      'blue-10.82.1.7',
      'fd00-82-1--7',
      'blue-fd00-82-1--7',
    ]);
  });

  test('a reservation of an address the live pod does not hold is deleted', async () => {
    await createReservation(ns, '10.82.2.9', `${ns.name}/alive`);
    await createReservation(ns, 'blue-fd00-82-2--9', `${ns.name}/alive`);
    const run = once();
    assert.deepEqual(await present('10.82.2.9', 'blue-fd00-82-2--9'), []);
    assert.ok(
      run.lines.some(
        (l) => l.msg === `deleted OverlappingRangeIPReservation 10.82.2.9 of ${ns.name}/alive: address-not-held`,
      ),
      run.stderr,
    );
  });

  test('an IPv6 name that splits two ways is read with the network names of the NADs', async () => {
    // "tenant-ab-cd--6" is tenant + ab:cd::6 or tenant-ab + cd::6; the NAD says network_name is tenant-ab, so the
    // pod holding ab:cd::6 does not make it held.
    await createNad(ns, 'tenant', { type: 'hereabouts', range: 'cd::/64', network_name: 'tenant-ab' });
    await createPool(ns, 'ab-cd---64', 'ab:cd::/64', { '6': allocation(ns, 'alive', alive) });
    await createPool(ns, 'tenant-ab-cd---64', 'cd::/64', { '5': allocation(ns, 'alive', alive) });
    await createReservation(ns, 'tenant-ab-cd--5', `${ns.name}/alive`);
    await createReservation(ns, 'tenant-ab-cd--6', `${ns.name}/alive`);
    once();
    assert.deepEqual(await present('tenant-ab-cd--5', 'tenant-ab-cd--6'), ['tenant-ab-cd--5']);
  });

  test('an IPv6 name that splits two ways, with no NAD to decide, is kept while any reading is held', async () => {
    await createReservation(ns, 'team-ab-cd--6', `${ns.name}/alive`); // team + ab:cd::6 (held) or team-ab + cd::6
    await createReservation(ns, 'team-ab-cd--7', `${ns.name}/alive`); // neither reading is held
    once();
    assert.deepEqual(await present('team-ab-cd--6', 'team-ab-cd--7'), ['team-ab-cd--6']);
  });

  test('a reservation younger than --reservation-grace is left alone, whatever its pod', async () => {
    await createReservation(ns, '10.82.3.1', `${ns.name}/gone-e`);
    once('--reservation-grace', '60s');
    assert.deepEqual(await present('10.82.3.1'), ['10.82.3.1']);
  });

  test('names that are no address hereabouts or Whereabouts would write are not judged', async () => {
    await createReservation(ns, 'not-an-address', `${ns.name}/gone-f`);
    await createReservation(ns, 'fd00-0-0-0-0-0-0-1', `${ns.name}/gone-f`); // not the canonical spelling of fd00::1
    once();
    assert.deepEqual(await present('fd00-0-0-0-0-0-0-1', 'not-an-address'), ['fd00-0-0-0-0-0-0-1', 'not-an-address']);
  });

  test('the reservation of a gone pod stays while a pool still holds its address, and goes in the pass that frees it', async () => {
    // The pool still holds .1 for the gone pod: its allocation is too young to judge (an ADD may be in flight), so
    // this pass does not release it; .2 is old and is released. Only .2's reservation may go.
    await createPool(ns, '10.82.4.0-24', '10.82.4.0/24', {
      '1': { ...allocation(ns, 'gone-g'), createdAt: ago(1000) },
      '2': { ...allocation(ns, 'gone-h'), createdAt: ago(3_600_000) },
    });
    await createReservation(ns, '10.82.4.1', `${ns.name}/gone-g`);
    await createReservation(ns, '10.82.4.2', `${ns.name}/gone-h`);
    once();
    assert.deepEqual(await present('10.82.4.1', '10.82.4.2'), ['10.82.4.1']);
  });

  test('a reservation stays while any pool record holds its address, whoever the pod', async () => {
    await createPool(ns, '10.82.5.0-24', '10.82.5.0/24', { '3': allocation(ns, 'alive', alive) });
    await createReservation(ns, '10.82.5.3', `${ns.name}/gone-i`); // names a gone pod, but the address is held
    once();
    assert.deepEqual(await present('10.82.5.3'), ['10.82.5.3']);
  });

  test("a missing reservation of a held address is re-created (evidence: the pool's other reservations), with an event", async () => {
    const old = ago(3_600_000);
    await createPool(ns, '10.82.6.0-24', '10.82.6.0/24', {
      '1': { ...allocation(ns, 'alive', alive), createdAt: old },
      '2': { ...allocation(ns, 'alive', alive), id: 'ctr-b', ifname: 'net2', createdAt: old },
    });
    await createPool(ns, 'red-10.82.7.0-24', '10.82.7.0/24', {
      '1': { ...allocation(ns, 'alive', alive), createdAt: old },
      '2': { ...allocation(ns, 'alive', alive), createdAt: old },
    });
    await createReservation(ns, '10.82.6.1', `${ns.name}/alive`);
    await createReservation(ns, 'red-10.82.7.1', `${ns.name}/alive`);
    // No reservation at all: nothing says this pool's writers use them.
    await createPool(ns, '10.82.8.0-24', '10.82.8.0/24', {
      '1': { ...allocation(ns, 'alive', alive), createdAt: old },
    });
    // Young: a Whereabouts ADD writes the pool first and its reservation just after.
    await createPool(ns, '10.82.9.0-24', '10.82.9.0/24', {
      '1': { ...allocation(ns, 'alive', alive), createdAt: old },
      '2': { ...allocation(ns, 'alive', alive), createdAt: ago(1000) },
    });
    await createReservation(ns, '10.82.9.1', `${ns.name}/alive`);
    const run = once('--reservation-grace', '60s');
    const all = await reservations(ns);
    assert.deepEqual(
      all.find((r) => r.name === '10.82.6.2')?.spec,
      { podref: `${ns.name}/alive`, ifname: 'net2', containerid: 'ctr-b' },
      run.stderr,
    );
    assert.deepEqual(all.find((r) => r.name === 'red-10.82.7.2')?.spec, {
      podref: `${ns.name}/alive`,
      ifname: 'net1',
      containerid: 'ctr-alive',
    });
    assert.deepEqual(await present('10.82.8.1', '10.82.9.2'), []);
    assert.ok(
      run.lines.some(
        (l) =>
          l.msg ===
          `re-created missing OverlappingRangeIPReservation 10.82.6.2 for 10.82.6.2 of ${ns.name}/alive held in IPPool 10.82.6.0-24`,
      ),
      run.stderr,
    );
    const event = (await events(ns)).find(
      (e) => e.reason === 'ReservationRecreated' && e.involvedObject.name === '10.82.6.0-24',
    );
    assert.equal(event?.type, 'Warning');
  });
});
