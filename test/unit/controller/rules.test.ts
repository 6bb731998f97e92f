import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withConditions } from '../../../src/controller/runtime/conditions.ts';
import { parseControllerFlags } from '../../../src/cli/controller.ts';
import { parseAddr } from '../../../src/controller/runtime/http.ts';
import { NETWORK_STATUS, parseNetworkStatus, podView } from '../../../src/controller/orphans/pod-view.ts';
import { judgeReservation, reservedAddresses } from '../../../src/controller/reservations/orphaned.ts';
import { groupByNetwork, networkNamesOf, sliceSpecOf } from '../../../src/controller/slices/spec.ts';
import { reservationView } from '../../../src/controller/runtime/views.ts';

const policy = {
  cleanupTerminating: false,
  cleanupDisrupted: true,
  verifyNetworkStatus: true,
  pendingGraceMs: 300_000,
  terminalGraceMs: 60_000,
};
const now = Date.parse('2026-11-22T10:00:00Z');
const judge = { networkNames: new Set<string>(), policy, graceMs: 60_000, now };
const view = (name: string) => ({
  name,
  namespace: 'kube-system',
  uid: 'u',
  resourceVersion: '1',
  podRef: 'ns/web',
  createdAtMs: now - 3_600_000,
});
const running = {
  uid: 'u1',
  whereabouts: false,
  phase: 'Running',
  createdAtMs: now - 3_600_000,
  terminating: false,
  containersRunning: true,
  sandboxGone: false,
  lastChangeMs: 0,
};
const nad = (name: string, ipam: Record<string, unknown>) => ({
  metadata: { namespace: 'default', name },
  spec: { config: JSON.stringify({ cniVersion: '1.0.0', name: `${name}-conf`, type: 'macvlan', ipam }) },
});

test('reservedAddresses() reads IPv4 and IPv6 names with and without network_name', () => {
  assert.deepEqual(reservedAddresses('10.0.0.5', new Set()), ['10.0.0.5']);
  assert.deepEqual(reservedAddresses('blue-10.0.0.5', new Set()), ['10.0.0.5']);
  assert.deepEqual(reservedAddresses('fd00--5', new Set()), ['fd00::5']);
  assert.deepEqual(reservedAddresses('blue-fd00--5', new Set()), ['fd00::5']);
  assert.deepEqual(reservedAddresses('fd00--0', new Set()), ['fd00::']);
});

test('reservedAddresses() returns every reading of a name that splits two ways, one when a network name decides', () => {
  assert.deepEqual(reservedAddresses('tenant-ab-cd--5', new Set()).sort(), ['ab:cd::5', 'cd::5']);
  assert.deepEqual(reservedAddresses('tenant-ab-cd--5', new Set(['tenant-ab'])), ['cd::5']);
});

test('reservedAddresses() names nothing for a name that is no canonical address', () => {
  assert.deepEqual(reservedAddresses('fd00-0-0-0-0-0-0-1', new Set()), []);
  assert.deepEqual(reservedAddresses('not-an-address', new Set()), []);
});

test('judgeReservation() keeps a held address whatever the pod; deletes one not held for a gone pod or a pod elsewhere', () => {
  assert.equal(judgeReservation(view('10.0.0.5'), null, new Set(), judge), 'pod-gone');
  assert.equal(
    judgeReservation(view('10.0.0.5'), null, new Set(['10.0.0.5']), judge),
    undefined,
    'a pool still holds it',
  );
  assert.equal(judgeReservation(view('10.0.0.5'), running, new Set(['10.0.0.5']), judge), undefined);
  assert.equal(judgeReservation(view('10.0.0.5'), running, new Set(['10.0.0.6']), judge), 'address-not-held');
});

test('judgeReservation() leaves young reservations, unread pods and young Pending pods alone', () => {
  assert.equal(judgeReservation({ ...view('10.0.0.5'), createdAtMs: now - 1000 }, null, new Set(), judge), undefined);
  assert.equal(judgeReservation(view('10.0.0.5'), undefined, new Set(), judge), undefined);
  assert.equal(
    judgeReservation(view('10.0.0.5'), { ...running, phase: 'Pending', createdAtMs: now - 1000 }, new Set(), judge),
    undefined,
  );
});

test('judgeReservation() runs the grace from the last time the reservation was taken, not from its creation', () => {
  const adopted = { ...view('10.0.0.5'), takenAtMs: now - 1000 };
  assert.equal(judgeReservation(adopted, running, new Set(), judge), undefined, 'adopted a second ago');
  assert.equal(judgeReservation(adopted, running, new Set(), { ...judge, now: now + 59_000 }), 'address-not-held');
});

test('reservationView() takes the latest of its creation, its taken-at annotation and its last update', () => {
  const object = (annotations: Record<string, string>, updates: string[]) => ({
    metadata: {
      name: '10.0.0.5',
      creationTimestamp: '2026-11-22T09:00:00Z',
      annotations,
      managedFields: updates.map((time) => ({ manager: 'hereabouts', operation: 'Update', time })),
    },
    spec: { podref: 'ns/web' },
  });
  const at = (text: string) => Date.parse(text);
  assert.equal(reservationView(object({}, [])).takenAtMs, at('2026-11-22T09:00:00Z'));
  assert.equal(
    reservationView(object({ 'hereabouts.cni.cncf.io/taken-at': '2026-11-22T09:30:00.250Z' }, ['2026-11-22T09:00:00Z']))
      .takenAtMs,
    at('2026-11-22T09:30:00.250Z'),
  );
  // An annotation pruned or never written (a node with a lagging clock): the API server's time of the last update.
  assert.equal(
    reservationView(object({}, ['2026-11-22T09:00:00Z', '2026-11-22T09:45:00Z'])).takenAtMs,
    at('2026-11-22T09:45:00Z'),
  );
});

test('podView() takes a mirror pod UID from its config.mirror annotation', () => {
  const pod = podView({
    metadata: {
      name: 'etcd-n1',
      namespace: 'kube-system',
      uid: 'api-uid',
      annotations: { 'kubernetes.io/config.mirror': 'static-uid' },
    },
    status: { phase: 'Running' },
  });
  assert.equal(pod?.uid, 'static-uid');
});

test('podView() answers for exactly the network-status addresses (not a prefix or a part of one)', () => {
  const annotation = JSON.stringify([
    { name: 'cbr0', ips: ['10.244.0.10'] },
    { name: 'd/macvlan', ips: ['10.0.0.10/24', 'FD00::5'] },
  ]);
  const pod = podView({
    metadata: { name: 'web-0', namespace: 'd', annotations: { [NETWORK_STATUS]: annotation } },
    status: { phase: 'Running' },
  });
  for (const ip of ['10.244.0.10', '10.0.0.10', 'fd00::5']) assert.equal(pod?.networkStatusIPs?.has(ip), true, ip);
  for (const ip of ['10.0.0.1', '0.0.0.10', '10.0.0.10 10.244.0.10', '', ' ', 'FD00::5'])
    assert.equal(pod?.networkStatusIPs?.has(ip), false, JSON.stringify(ip));
  const none = podView({ metadata: { name: 'web-1', namespace: 'd' }, status: { phase: 'Running' } });
  assert.equal(none?.networkStatusIPs, undefined);
});

test('parseNetworkStatus() canonicalises IPv6 spellings and drops prefix lengths', () => {
  assert.deepEqual(
    parseNetworkStatus(JSON.stringify([{ ips: ['FD00:0::5', '10.0.0.1/24'] }])),
    new Set(['fd00::5', '10.0.0.1']),
  );
});

test('sliceSpecOf() reads a conflist NAD, and names a NAD with ipRanges and node_slice_size', () => {
  const conflist = {
    metadata: { namespace: 'd', name: 'l' },
    spec: {
      config: JSON.stringify({
        cniVersion: '1.0.0',
        name: 'net',
        plugins: [
          { type: 'macvlan', ipam: { type: 'whereabouts', range: 'fd00::/48', node_slice_size: '/64' } },
          { type: 'tuning' },
        ],
      }),
    },
  };
  assert.deepEqual(sliceSpecOf(conflist)?.network, 'net');
  assert.throws(
    () =>
      sliceSpecOf(
        nad('two', {
          type: 'hereabouts',
          range: '10.0.0.0/16',
          ipRanges: [{ range: '10.1.0.0/16' }],
          node_slice_size: '/24',
        }),
      ),
    /default\/two: node_slice_size needs exactly one range \(got 2\)/,
  );
});

test('networkNamesOf() lists the network_name of every hereabouts or whereabouts section', () => {
  assert.deepEqual(networkNamesOf(nad('a', { type: 'whereabouts', range: '10.0.0.0/24', network_name: 'blue' })), [
    'blue',
  ]);
  assert.deepEqual(networkNamesOf(nad('b', { type: 'host-local', range: '10.0.0.0/24' })), []);
});

test('groupByNetwork() keeps the NADs of an agreed network together', () => {
  const a = sliceSpecOf(
    nad('a', { type: 'hereabouts', range: '10.0.0.0/16', node_slice_size: 24, network_name: 'n' }),
  )!;
  const b = sliceSpecOf(
    nad('b', { type: 'hereabouts', range: '10.0.0.0/16', node_slice_size: '/24', network_name: 'n' }),
  )!;
  assert.deepEqual(groupByNetwork([a, b]).agreed.get('n')?.sources, ['default/a', 'default/b']);
});

test('withConditions() keeps the transition time while the status stays, and moves it when it changes', () => {
  const first = withConditions(
    [],
    [{ type: 'Exhausted', status: 'False', reason: 'AddressesFree', message: '' }],
    new Date('2026-11-22T10:00:00Z'),
  );
  const same = withConditions(
    first,
    [{ type: 'Exhausted', status: 'False', reason: 'AddressesFree', message: '' }],
    new Date('2026-11-22T11:00:00Z'),
  );
  const flipped = withConditions(
    first,
    [{ type: 'Exhausted', status: 'True', reason: 'NoFreeAddress', message: 'full' }],
    new Date('2026-11-22T12:00:00Z'),
  );
  assert.equal(same[0]?.lastTransitionTime, '2026-11-22T10:00:00Z');
  assert.equal(flipped[0]?.lastTransitionTime, '2026-11-22T12:00:00Z');
});

test('parseAddr() reads :port, host:port and [v6]:port, and refuses the rest', () => {
  assert.deepEqual(parseAddr(':9090'), { port: 9090 });
  assert.deepEqual(parseAddr('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseAddr('[::1]:8080'), { host: '::1', port: 8080 });
  assert.throws(() => parseAddr('9090'), /must look like :9090/);
});

test('parseControllerFlags() reads Go-style booleans and durations, with the documented defaults', () => {
  const flags = parseControllerFlags(['--cleanup-terminating', '--cleanup-disrupted=false', '--pending-grace', '90s']);
  assert.deepEqual(flags.policy, {
    cleanupTerminating: true,
    cleanupDisrupted: false,
    verifyNetworkStatus: true,
    pendingGraceMs: 90_000,
    terminalGraceMs: 60_000,
  });
  assert.equal(flags.reconcileIntervalMs, 30_000);
  assert.deepEqual(
    [flags.leader.leaseDurationMs, flags.leader.renewDeadlineMs, flags.leader.retryPeriodMs],
    [15_000, 10_000, 2_000],
  );
});

test('parseControllerFlags() times requests out before the renew deadline, and wants lease > renew deadline > retry period > 0', () => {
  const defaults = parseControllerFlags([]);
  assert.equal(defaults.requestTimeoutMs, 8000, 'renew deadline 10s - retry period 2s');
  const quick = parseControllerFlags(['--lease-duration', '3s', '--renew-deadline', '2s', '--retry-period', '300ms']);
  assert.ok(quick.requestTimeoutMs < quick.leader.renewDeadlineMs);
  assert.throws(
    () => parseControllerFlags(['--lease-duration', '10s', '--renew-deadline', '12s']),
    /--renew-deadline 12s must be shorter than --lease-duration 10s/,
  );
  assert.throws(
    () => parseControllerFlags(['--renew-deadline', '2s', '--retry-period', '2s']),
    /--retry-period 2s must be well below --renew-deadline 2s/,
  );
  assert.throws(() => parseControllerFlags(['--retry-period', '0s']), /--retry-period 0s must be above 0/);
});
