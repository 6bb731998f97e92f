import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLOCK_SLACK_MS, orphanReason, type CleanupPolicy } from '../../../src/controller/orphans/orphans.ts';
import { parseNetworkStatus, type PodView } from '../../../src/controller/orphans/pod-view.ts';
import { duration } from '../../../src/cli/flags.ts';

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
const stopped: PodView = { ...running, containersRunning: false };

test('orphanReason() keeps an allocation of a running pod', () => {
  assert.equal(orphanReason(record, '10.0.0.5', running, policy, now), undefined);
});
test('orphanReason() releases when the pod is gone', () => {
  assert.equal(orphanReason(record, '10.0.0.5', undefined, policy, now), 'pod-gone');
});
test('orphanReason() releases when a same-name pod was re-created with another UID', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, uid: 'u2' }, policy, now), 'pod-recreated');
});
test('orphanReason() releases a record without podUid whose reservation was taken before its pod was created', () => {
  const whereabouts = { containerId: 'c', ifname: 'net1', podRef: 'ns/web' }; // no podUid
  const pending: PodView = { ...running, uid: 'u2', phase: 'Pending', createdAtMs: now - 600_000 };
  // reserved an hour before the pod of that name was created: an earlier pod's
  assert.equal(
    orphanReason(whereabouts, '10.0.0.5', pending, policy, now, undefined, now - 4_200_000),
    'pod-recreated',
  );
  // reserved after the pod was created, or within the clock slack of it: could be this pod's ADD
  assert.equal(orphanReason(whereabouts, '10.0.0.5', pending, policy, now, undefined, now - 590_000), undefined);
  assert.equal(
    orphanReason(whereabouts, '10.0.0.5', pending, policy, now, undefined, pending.createdAtMs - CLOCK_SLACK_MS),
    undefined,
  );
  // the pod's ADD may have taken the record over: not once the pod runs, nor while its network-status shows the address
  const taken = now - 4_200_000;
  assert.equal(
    orphanReason(whereabouts, '10.0.0.5', { ...pending, phase: 'Running' }, policy, now, undefined, taken),
    undefined,
  );
  const shown = { ...pending, networkStatusIPs: new Set(['10.0.0.5']) };
  assert.equal(orphanReason(whereabouts, '10.0.0.5', shown, policy, now, undefined, taken), undefined);
  // no reservation: nothing to tell by
  assert.equal(orphanReason(whereabouts, '10.0.0.5', pending, policy, now), undefined);
  // a record with the pod's uid is judged by the uid alone
  assert.equal(
    orphanReason({ ...whereabouts, podUid: 'u2' }, '10.0.0.5', pending, policy, now, undefined, 0),
    undefined,
  );
  // a young Pending pod is never touched
  const young = { ...pending, createdAtMs: now - 1000 };
  assert.equal(orphanReason(whereabouts, '10.0.0.5', young, policy, now, undefined, now - 4_200_000), undefined);
});
test('orphanReason() never touches a young Pending pod, even with another UID', () => {
  assert.equal(
    orphanReason(record, '10.0.0.5', { ...running, uid: 'u2', phase: 'Pending', createdAtMs: now - 1000 }, policy, now),
    undefined,
  );
});
test('orphanReason() releases a terminating pod only when the flag says so, and once it stopped', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...stopped, terminating: true }, policy, now), undefined);
  assert.equal(
    orphanReason(record, '10.0.0.5', { ...stopped, terminating: true }, { ...policy, cleanupTerminating: true }, now),
    'pod-terminating',
  );
  const inGrace = { ...running, terminating: true, deletionAtMs: now + 10_000 };
  assert.equal(
    orphanReason(record, '10.0.0.5', inGrace, { ...policy, cleanupTerminating: true }, now),
    undefined,
    'still running',
  );
  assert.equal(
    orphanReason(record, '10.0.0.5', inGrace, { ...policy, cleanupTerminating: true }, now + 10_000),
    'pod-terminating',
    'grace period over',
  );
});
test('orphanReason() releases a pod the taint manager deleted once it stopped, unless the flag is off', () => {
  const tainted = { ...stopped, disruption: 'DeletionByTaintManager' };
  assert.equal(orphanReason(record, '10.0.0.5', tainted, policy, now), 'pod-disrupted');
  assert.equal(orphanReason(record, '10.0.0.5', tainted, { ...policy, cleanupDisrupted: false }, now), undefined);
  assert.equal(
    orphanReason(record, '10.0.0.5', { ...tainted, containersRunning: true }, policy, now),
    undefined,
    'still running',
  );
  assert.equal(
    orphanReason(
      record,
      '10.0.0.5',
      { ...tainted, containersRunning: true, terminating: true, deletionAtMs: now - 1 },
      policy,
      now,
    ),
    'pod-disrupted',
    'past its deletion time',
  );
});
test('orphanReason() never releases a running pod for DisruptionTarget=True of an eviction, a preemption or the kubelet', () => {
  for (const disruption of ['EvictionByEvictionAPI', 'PreemptionByScheduler', 'TerminationByKubelet', '']) {
    assert.equal(
      orphanReason(
        record,
        '10.0.0.5',
        { ...running, disruption, terminating: true, deletionAtMs: now + 30_000 },
        policy,
        now,
      ),
      undefined,
      disruption,
    );
  }
});
test('orphanReason() releases a terminal pod once its sandbox is gone or the terminal grace passed', () => {
  const done = { ...stopped, phase: 'Succeeded', lastChangeMs: now - 1000 };
  assert.equal(orphanReason(record, '10.0.0.5', done, policy, now), undefined);
  assert.equal(orphanReason(record, '10.0.0.5', { ...done, sandboxGone: true }, policy, now), 'pod-terminal');
  assert.equal(orphanReason(record, '10.0.0.5', { ...done, phase: 'Failed' }, policy, now + 59_000), 'pod-terminal');
  assert.equal(orphanReason(record, '10.0.0.5', { ...done, phase: 'Failed' }, policy, now + 58_000), undefined);
});
test('orphanReason() never judges an allocation younger than the pending grace', () => {
  assert.equal(orphanReason(record, '10.0.0.5', undefined, policy, now, now - 1000), undefined);
  assert.equal(orphanReason(record, '10.0.0.5', undefined, policy, now, now - 300_000), 'pod-gone');
});
test('orphanReason() releases an address missing from a running pod network-status', () => {
  const pod = { ...running, networkStatusIPs: new Set(['10.0.0.9']) };
  assert.equal(orphanReason(record, '10.0.0.5', pod, policy, now), 'not-in-network-status');
  assert.equal(orphanReason(record, '10.0.0.9', pod, policy, now), undefined);
  assert.equal(orphanReason(record, '10.0.0.5', pod, { ...policy, verifyNetworkStatus: false }, now), undefined);
});
test('orphanReason() leaves allocations without a pod reference alone', () => {
  assert.equal(orphanReason({ ...record, podRef: '' }, '10.0.0.5', undefined, policy, now), undefined);
});
test('parseNetworkStatus() collects the IPs of every network and ignores garbage', () => {
  assert.deepEqual(
    parseNetworkStatus(
      JSON.stringify([
        { name: 'a', ips: ['10.0.0.1'] },
        { name: 'b', ips: ['fd00::1'] },
      ]),
    ),
    new Set(['10.0.0.1', 'fd00::1']),
  );
  assert.equal(parseNetworkStatus('{not json'), undefined);
  assert.equal(parseNetworkStatus(undefined), undefined);
});
test('duration() reads ms, s, m, h and bare seconds, and names a bad flag', () => {
  assert.deepEqual(
    ['500ms', '15s', '5m', '1h', '2'].map((d) => duration(d, 'x')),
    [500, 15_000, 300_000, 3_600_000, 2000],
  );
  assert.throws(() => duration('soon', 'reconcile-interval'), /--reconcile-interval "soon" is not a duration/);
});

test('desiredStatus() reports capacity, used, free and exhaustion, and nothing when the pool already shows it', async () => {
  const { desiredStatus } = await import('../../../src/controller/pools/status.ts');
  const { parseCidr } = await import('../../../src/ip/cidr.ts');
  const at = new Date('2026-11-22T10:00:00Z');
  const full = desiredStatus(parseCidr('10.0.0.0/30'), 2, undefined, at) as {
    free: string;
    conditions: Array<{ status: string; lastTransitionTime: string }>;
  };
  assert.equal(full.free, '0');
  assert.equal(full.conditions[0]?.status, 'True');
  assert.equal(desiredStatus(parseCidr('10.0.0.0/30'), 2, full, new Date('2026-11-22T11:00:00Z')), undefined);
});
