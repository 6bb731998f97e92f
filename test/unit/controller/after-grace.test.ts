// orphanAfterGrace() and reservationAfterGrace(): when the rule releases what a grace period holds back. They ask
// the rule itself at each grace end, so the instant is exact: kept a millisecond before, released at it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { orphanAfterGrace, orphanReason, type CleanupPolicy } from '../../../src/controller/orphans/orphans.ts';
import { reservationAfterGrace, judgeReservation } from '../../../src/controller/reservations/orphaned.ts';
import type { PodView } from '../../../src/controller/orphans/pod-view.ts';

const policy: CleanupPolicy = {
  cleanupTerminating: false,
  cleanupDisrupted: true,
  verifyNetworkStatus: true,
  pendingGraceMs: 300_000,
  terminalGraceMs: 60_000,
};
const now = Date.parse('2026-11-22T10:00:00Z');
const record = { containerId: 'c', ifname: 'net1', podRef: 'ns/web', podUid: 'u1' };
const running: PodView = {
  uid: 'u1',
  whereabouts: false,
  phase: 'Running',
  createdAtMs: now - 3_600_000,
  terminating: false,
  containersRunning: true,
  sandboxGone: false,
  lastChangeMs: now - 3_600_000,
};

/** The rule keeps it until `at` and releases it from `at` on. */
function exact(pod: PodView | undefined, at: number, reason: string, allocatedAt?: number): void {
  assert.deepEqual(orphanAfterGrace(record, '10.0.0.5', pod, policy, now, allocatedAt), { reason, atMs: at });
  assert.equal(orphanReason(record, '10.0.0.5', pod, policy, at - 1, allocatedAt), undefined);
  assert.equal(orphanReason(record, '10.0.0.5', pod, policy, at, allocatedAt), reason);
}

test('a young allocation of a gone pod: released when the pending grace ends', () => {
  exact(undefined, now - 1000 + 300_000, 'pod-gone', now - 1000);
});
test('a young Pending pod of another UID: released when its pending grace ends', () => {
  exact(
    { ...running, uid: 'u2', phase: 'Pending', createdAtMs: now - 60_000 },
    now - 60_000 + 300_000,
    'pod-recreated',
  );
});
test('a terminal pod whose sandbox is not reported gone: released when the terminal grace ends', () => {
  exact(
    { ...running, phase: 'Failed', containersRunning: false, lastChangeMs: now - 10_000 },
    now - 10_000 + 60_000,
    'pod-terminal',
  );
});
test('a pod the taint manager deleted that still runs: released when its grace period ends', () => {
  exact(
    { ...running, disruption: 'DeletionByTaintManager', terminating: true, deletionAtMs: now + 30_000 },
    now + 30_000,
    'pod-disrupted',
  );
});
test('a running pod, and a young allocation of a running pod, are never waiting', () => {
  assert.equal(orphanAfterGrace(record, '10.0.0.5', running, policy, now), undefined);
  assert.equal(orphanAfterGrace(record, '10.0.0.5', running, policy, now, now - 1000), undefined);
});
test('an orphan now is not reported as waiting (no grace end lies ahead)', () => {
  assert.equal(orphanAfterGrace(record, '10.0.0.5', undefined, policy, now), undefined);
});

test('reservationAfterGrace(): a young reservation of a gone pod goes when the reservation grace ends', () => {
  const view = {
    name: '10.0.0.9',
    namespace: 'ns',
    uid: 'r',
    resourceVersion: '1',
    podRef: 'ns/web',
    createdAtMs: now - 5_000,
  };
  const judge = { networkNames: new Set<string>(), policy, graceMs: 60_000, now };
  assert.deepEqual(reservationAfterGrace(view, null, new Set(), judge), { reason: 'pod-gone', atMs: now + 55_000 });
  assert.equal(judgeReservation(view, null, new Set(), { ...judge, now: now + 54_999 }), undefined);
  assert.equal(reservationAfterGrace(view, null, new Set(['10.0.0.9']), judge), undefined, 'a held address keeps it');
});
