// The operator commands' pure parts: JSON numbers, ages, the networks of pool names, and the text each prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exactNumber, toJson } from '../../../src/cli/connect.ts';
import { checkReport, formatCheck } from '../../../src/cli/check-report.ts';
import { DEFAULT_POLICY } from '../../../src/controller/orphans/orphans.ts';
import { age, buildInventory, columns, inTime } from '../../../src/cli/inventory.ts';
import { formatIpReport, ipReport } from '../../../src/cli/ip-report.ts';
import { formatOrphans } from '../../../src/cli/orphans-report.ts';
import { formatRelease } from '../../../src/cli/release.ts';
import { parseIP } from '../../../src/ip/address.ts';

const now = Date.parse('2026-11-22T10:00:00Z');

test('toJson(): bigints are numbers up to 2^53 - 1 and decimal strings above', () => {
  assert.equal(exactNumber(9007199254740991n), 9007199254740991);
  assert.equal(exactNumber(9007199254740992n), '9007199254740992');
  assert.deepEqual(JSON.parse(toJson({ a: 254n, b: [2n ** 64n], c: 'x', d: 3 })), {
    a: 254,
    b: ['18446744073709551616'],
    c: 'x',
    d: 3,
  });
});

test('age() and inTime()', () => {
  assert.equal(age(undefined, now), '-');
  assert.equal(age(now - 59_000, now), '59s');
  assert.equal(age(now - 5 * 60_000, now), '5m');
  assert.equal(age(now - 125 * 60_000, now), '2h5m');
  assert.equal(age(now - 3 * 3_600_000, now), '3h');
  assert.equal(age(now - 4 * 86_400_000, now), '4d');
  assert.equal(age(now + 10_000, now), '0s');
  assert.equal(inTime(now + 4 * 60_000, now), 'in 4m');
});

test('columns() aligns every column but the last', () => {
  assert.equal(
    columns([
      ['A', 'BB', 'C'],
      ['aaa', 'b', 'c'],
    ]),
    'A    BB  C\naaa  b   c\n',
  );
});

const pool = (name: string, range: string, allocations: Record<string, unknown> = {}) => ({
  metadata: { name, uid: name, resourceVersion: '1' },
  spec: { range, allocations },
});

test("buildInventory(): a pool's network from its name, a node slice's node from its NodeSlicePool", () => {
  const inv = buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools: [
      pool('10.0.0.0-24', '10.0.0.0/24'),
      pool('blue-10.0.0.0-24', '10.0.0.0/24'),
      pool('my-a-b-fd00---64', 'fd00::/64'),
      pool('custom', '10.1.0.0/24'),
      pool('net-node1-10.2.0.16-28', '10.2.0.16/28'),
    ],
    reservations: [],
    nodeSlicePools: [
      {
        metadata: { name: 'net' },
        spec: { range: '10.2.0.0/24', sliceSize: '/28' },
        status: { allocations: [{ nodeName: 'node1', sliceRange: '10.2.0.16/28' }] },
      },
    ],
    pods: new Map(),
    nadNetworkNames: [],
  });
  assert.deepEqual(
    inv.pools.map((p) => [p.view.name, p.network, p.node]),
    [
      ['10.0.0.0-24', '', undefined],
      ['blue-10.0.0.0-24', 'blue', undefined],
      ['custom', undefined, undefined],
      ['my-a-b-fd00---64', 'my-a-b', undefined],
      ['net-node1-10.2.0.16-28', 'net', 'node1'],
    ],
  );
  assert.deepEqual([...inv.networkNames].sort(), ['blue', 'my-a-b', 'net']);
});

test('checkReport(): a warm record is a problem only once its node is gone, and only when nodes were listed', () => {
  const warm = (node: string) => ({ id: `hereabouts-warm:${node}/10.3.0.0-24`, podref: '', ifname: 'warm' });
  const listed = {
    namespace: 'ns',
    nowMs: now,
    ippools: [pool('10.3.0.0-24', '10.3.0.0/24', { '1': warm('node-live'), '2': warm('node-gone') })],
    reservations: [
      { metadata: { name: '10.3.0.1' }, spec: { podref: '', containerid: warm('node-live').id, ifname: 'warm' } },
      { metadata: { name: '10.3.0.2' }, spec: { podref: '', containerid: warm('node-gone').id, ifname: 'warm' } },
    ],
    nodeSlicePools: [],
    pods: new Map(),
    nadNetworkNames: [],
  };
  const judging = { policy: DEFAULT_POLICY, reservationGraceMs: 0 };
  const withNodes = checkReport(buildInventory({ ...listed, nodes: ['node-live'] }), judging);
  assert.deepEqual(
    withNodes.problems.map((p) => [p.kind, p.address]),
    [['warm-of-gone-node', '10.3.0.2']],
  );
  assert.match(withNodes.problems[0]?.message ?? '', /node-gone, a node that no longer exists/);
  assert.deepEqual(checkReport(buildInventory(listed), judging).problems, []);
});

test("formatIpReport(): an address nobody holds, and a holder's block", () => {
  const inv = buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools: [
      pool('10.0.0.0-24', '10.0.0.0/24', {
        '5': { id: 'c1', podref: 'ns/gone', ifname: 'net1', createdAt: '2026-11-22T09:00:00Z' },
      }),
    ],
    reservations: [],
    nodeSlicePools: [],
    pods: new Map(),
    nadNetworkNames: [],
  });
  assert.equal(
    formatIpReport(ipReport(inv, parseIP('10.0.0.6')), now),
    '10.0.0.6 is not allocated in any IPPool in namespace ns\n',
  );
  assert.equal(
    formatIpReport(ipReport(inv, parseIP('10.0.0.6'), 'blue'), now),
    '10.0.0.6 is not allocated in any IPPool of network blue in namespace ns\n',
  );
  assert.equal(
    formatIpReport(ipReport(inv, parseIP('10.0.0.5')), now),
    [
      '10.0.0.5 is held by ns/gone in IPPool 10.0.0.0-24',
      '  network      (unnamed)',
      '  pod          gone',
      '  node         -',
      '  container    c1, interface net1',
      '  since        2026-11-22T09:00:00.000Z (1h ago)',
      '  reservation  10.0.0.5: MISSING',
      '',
    ].join('\n'),
  );
});

test('formatRelease(): refused, released, and nothing held', () => {
  const base = { address: '10.0.0.5', network: '' };
  assert.equal(
    formatRelease({
      ...base,
      released: [],
      skipped: [],
      reservation: { name: '10.0.0.5', outcome: 'kept' },
      refused: 'pod ns/web is Running: --force releases it anyway',
    }),
    'refused to release 10.0.0.5 of network (unnamed): pod ns/web is Running: --force releases it anyway\n',
  );
  assert.equal(
    formatRelease({
      ...base,
      network: 'blue',
      released: [{ pool: 'blue-10.0.0.0-24', podRef: 'ns/a', containerId: 'c', ifname: 'net1' }],
      skipped: [],
      reservation: { name: 'blue-10.0.0.5', outcome: 'deleted' },
    }),
    'released 10.0.0.5 from IPPool blue-10.0.0.0-24 (was ns/a, container c, interface net1)\nreservation blue-10.0.0.5: deleted\n',
  );
  assert.equal(
    formatRelease({ ...base, released: [], skipped: [], reservation: { name: '10.0.0.5', outcome: 'gone' } }),
    '10.0.0.5 is not allocated in any IPPool of network (unnamed)\nreservation 10.0.0.5: not found\n',
  );
});

test('formatCheck() and formatOrphans(): counts first, then one row each', () => {
  assert.equal(
    formatCheck({ namespace: 'ns', pools: 2, allocations: 3, reservations: 1, problems: [] }),
    'namespace ns: 2 pool(s), 3 allocation(s), 1 reservation(s): consistent\n',
  );
  assert.equal(
    formatCheck({
      namespace: 'ns',
      pools: 1,
      allocations: 1,
      reservations: 0,
      problems: [{ kind: 'orphan', message: 'm' }],
    }),
    'namespace ns: 1 pool(s), 1 allocation(s), 0 reservation(s): 1 problem(s)\nPROBLEM  DETAILS\norphan   m\n',
  );
  const policy = {
    cleanupTerminating: false,
    cleanupDisrupted: true,
    verifyNetworkStatus: true,
    pendingGraceMs: 1,
    terminalGraceMs: 1,
    reservationGraceMs: 1,
  };
  const text = formatOrphans(
    {
      namespace: 'ns',
      policy,
      allocations: [{ pool: 'p', address: '10.0.0.1', podRef: 'ns/a', containerId: 'c', reason: 'pod-gone' }],
      waiting: [
        {
          pool: 'p',
          address: '10.0.0.2',
          podRef: 'ns/b',
          containerId: 'c',
          reason: 'pod-terminal',
          releasableAt: new Date(now + 30_000).toISOString(),
        },
      ],
      reservations: [],
      reservationsWaiting: [],
    },
    now,
  );
  assert.equal(
    text,
    [
      'namespace ns: 1 allocation(s) to release now, 1 in a grace period',
      'POOL  ADDRESS   POD   REASON        RELEASED',
      'p     10.0.0.1  ns/a  pod-gone      now',
      'p     10.0.0.2  ns/b  pod-terminal  in 30s (2026-11-22T10:00:30.000Z)',
      '0 reservation(s) to delete now, 0 in a grace period',
      '',
    ].join('\n'),
  );
});
