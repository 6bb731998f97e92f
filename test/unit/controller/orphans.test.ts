import { test } from 'node:test';
import assert from 'node:assert/strict';
import { orphanReason, type CleanupPolicy } from '../../../src/controller/orphans.ts';
import { parseNetworkStatus, type PodView } from '../../../src/controller/pod-view.ts';
import { duration } from '../../../src/controller/main.ts';

const policy: CleanupPolicy = { cleanupTerminating: false, cleanupDisrupted: true, verifyNetworkStatus: true, pendingGraceMs: 300_000 };
const now = Date.parse('2026-11-22T10:00:00Z');
const record = { containerId: 'c', ifname: 'net1', podRef: 'ns/web', podUid: 'u1' };
const running: PodView = { uid: 'u1', phase: 'Running', createdAtMs: now - 3_600_000, terminating: false, disrupted: false };

test('orphanReason() keeps an allocation of a running pod', () => {
  assert.equal(orphanReason(record, '10.0.0.5', running, policy, now), undefined);
});
test('orphanReason() releases when the pod is gone', () => {
  assert.equal(orphanReason(record, '10.0.0.5', undefined, policy, now), 'pod-gone');
});
test('orphanReason() releases when a same-name pod was re-created with another UID', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, uid: 'u2' }, policy, now), 'pod-recreated');
});
test('orphanReason() never touches a young Pending pod, even with another UID', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, uid: 'u2', phase: 'Pending', createdAtMs: now - 1000 }, policy, now), undefined);
});
test('orphanReason() releases a terminating pod only when the flag says so', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, terminating: true }, policy, now), undefined);
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, terminating: true }, { ...policy, cleanupTerminating: true }, now), 'pod-terminating');
});
test('orphanReason() releases a disrupted pod unless the flag is off', () => {
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, disrupted: true }, policy, now), 'pod-disrupted');
  assert.equal(orphanReason(record, '10.0.0.5', { ...running, disrupted: true }, { ...policy, cleanupDisrupted: false }, now), undefined);
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
  assert.deepEqual(parseNetworkStatus(JSON.stringify([{ name: 'a', ips: ['10.0.0.1'] }, { name: 'b', ips: ['fd00::1'] }])), new Set(['10.0.0.1', 'fd00::1']));
  assert.equal(parseNetworkStatus('{not json'), undefined);
  assert.equal(parseNetworkStatus(undefined), undefined);
});
test('duration() reads ms, s, m, h and bare seconds, and names a bad flag', () => {
  assert.deepEqual(['500ms', '15s', '5m', '1h', '2'].map((d) => duration(d, 'x')), [500, 15_000, 300_000, 3_600_000, 2000]);
  assert.throws(() => duration('soon', 'reconcile-interval'), /--reconcile-interval "soon" is not a duration/);
});

test('desiredStatus() reports capacity, used, free and exhaustion, and nothing when the pool already shows it', async () => {
  const { desiredStatus } = await import('../../../src/controller/pool-status.ts');
  const { parseCidr } = await import('../../../src/ip/cidr.ts');
  const at = new Date('2026-11-22T10:00:00Z');
  const full = desiredStatus(parseCidr('10.0.0.0/30'), 2, undefined, at) as { free: string; conditions: Array<{ status: string; lastTransitionTime: string }> };
  assert.equal(full.free, '0');
  assert.equal(full.conditions[0]?.status, 'True');
  assert.equal(desiredStatus(parseCidr('10.0.0.0/30'), 2, full, new Date('2026-11-22T11:00:00Z')), undefined);
});
