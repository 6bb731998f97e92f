import { test } from 'node:test';
import assert from 'node:assert/strict';
import { missingReservations, type RepairJudge } from '../../../src/controller/reservations/repair.ts';
import { poolView } from '../../../src/controller/pools/view.ts';
import type { ReservationView } from '../../../src/controller/runtime/views.ts';

const now = Date.parse('2026-11-22T10:00:00Z');
const old = new Date(now - 3_600_000).toISOString();
const pool = (name: string, range: string, allocations: Record<string, unknown>) =>
  poolView({ metadata: { name, uid: 'u', resourceVersion: '1' }, spec: { range, allocations } })!;
const rec = (pod: string, extra: Record<string, unknown> = {}) => ({
  id: `ctr-${pod}`,
  podref: `ns/${pod}`,
  ifname: 'net1',
  ...extra,
});
const resv = (name: string, pod: string): ReservationView => ({
  name,
  namespace: 'kube-system',
  uid: 'r',
  resourceVersion: '1',
  podRef: `ns/${pod}`,
  createdAtMs: now,
});
const judge = (over: Partial<RepairJudge> = {}): RepairJudge => ({
  graceMs: 60_000,
  nowMs: now,
  monotonicNowMs: 1_000_000,
  firstMissing: new Map(),
  ...over,
});

test("missingReservations() names the missing reservation with the prefix the pool's other reservations use", () => {
  const p = pool('blue-10.0.0.0-24', '10.0.0.0/24', {
    '1': rec('a', { createdAt: old }),
    '2': rec('b', { createdAt: old }),
  });
  const found = missingReservations([p], [resv('blue-10.0.0.1', 'a')], judge());
  assert.deepEqual(
    found.map((m) => [m.name, m.ip, m.record.podRef]),
    [['blue-10.0.0.2', '10.0.0.2', 'ns/b']],
  );
});

test('missingReservations() needs evidence: no reservation of the pool, one naming another pod, or prefixes that disagree', () => {
  const p = pool('10.0.0.0-24', '10.0.0.0/24', {
    '1': rec('a', { createdAt: old }),
    '2': rec('b', { createdAt: old }),
    '3': rec('c', { createdAt: old }),
  });
  assert.deepEqual(missingReservations([p], [], judge()), []);
  assert.deepEqual(missingReservations([p], [resv('10.0.0.1', 'someone-else')], judge()), []);
  const red = pool('red-10.0.0.0-24', '10.0.0.0/24', {
    '1': rec('a', { createdAt: old }),
    '2': rec('b', { createdAt: old }),
    '3': rec('c', { createdAt: old }),
  });
  assert.deepEqual(missingReservations([red], [resv('10.0.0.1', 'a'), resv('red-10.0.0.2', 'b')], judge()), []);
  assert.deepEqual(
    missingReservations([red], [resv('red-10.0.0.2', 'b')], judge()).map((m) => m.name),
    ['red-10.0.0.1', 'red-10.0.0.3'],
  );
});

test('missingReservations() repairs a young record only after the grace; one without createdAt once seen missing that long', () => {
  const young = pool('10.0.0.0-24', '10.0.0.0/24', {
    '1': rec('a', { createdAt: old }),
    '2': rec('b', { createdAt: new Date(now - 1000).toISOString() }),
  });
  assert.deepEqual(missingReservations([young], [resv('10.0.0.1', 'a')], judge()), []);
  const whereabouts = pool('10.0.0.0-24', '10.0.0.0/24', { '1': rec('a'), '2': rec('b') });
  const firstMissing = new Map<string, number>();
  assert.deepEqual(
    missingReservations([whereabouts], [resv('10.0.0.1', 'a')], judge({ firstMissing })),
    [],
    'first seen now',
  );
  assert.deepEqual(
    missingReservations([whereabouts], [resv('10.0.0.1', 'a')], judge({ firstMissing, monotonicNowMs: 1_059_999 })),
    [],
  );
  assert.deepEqual(
    missingReservations([whereabouts], [resv('10.0.0.1', 'a')], judge({ firstMissing, monotonicNowMs: 1_060_000 })).map(
      (m) => m.name,
    ),
    ['10.0.0.2'],
  );
  missingReservations([whereabouts], [resv('10.0.0.1', 'a'), resv('10.0.0.2', 'b')], judge({ firstMissing }));
  assert.equal(firstMissing.size, 0, 'forgotten once the reservation is there');
});

test("missingReservations() repairs a machine claim's reservation beside the pods' (naming the claim), never a prefix block's", () => {
  const claim = (name: string) => ({ id: `hereabouts-claim:ns/${name}`, podref: '', ifname: 'claim', createdAt: old });
  const block = { id: 'hereabouts-prefix:30:ns/pc', podref: '', ifname: 'claim', createdAt: old };
  const p = pool('10.0.0.0-24', '10.0.0.0/24', { '1': rec('a', { createdAt: old }), '2': claim('m0'), '8': block });
  const found = missingReservations([p], [resv('10.0.0.1', 'a')], judge());
  assert.deepEqual(
    found.map((m) => [m.name, m.record.containerId, m.record.podRef]),
    [['10.0.0.2', 'hereabouts-claim:ns/m0', '']],
  );
  // A claim's reservation is evidence too (its podref is the record's, ''), as a pod's is.
  const q = pool('blue-10.0.0.0-24', '10.0.0.0/24', { '1': claim('m0'), '2': claim('m1') });
  const named = { ...resv('blue-10.0.0.1', 'x'), podRef: '' };
  assert.deepEqual(
    missingReservations([q], [named], judge()).map((m) => m.name),
    ['blue-10.0.0.2'],
  );
});

test("missingReservations() names an AddressPool's own reservations hereabouts-claims-<ip> without evidence", () => {
  const claim = (name: string) => ({ id: `hereabouts-claim:ns/${name}`, podref: '', ifname: 'claim', createdAt: old });
  const own = pool('hereabouts-claims.ns.ns.1.p-10.9.0.0-24', '10.9.0.0/24', { '5': claim('m0') });
  const unrelated = resv('10.1.1.1', 'z'); // some reservation exists in the cluster
  assert.deepEqual(
    missingReservations([own], [unrelated], judge()).map((m) => m.name),
    ['hereabouts-claims-10.9.0.5'],
  );
});
