// Claim records (DESIGN §12) in the operator commands' pure parts: `status` counts them, `pool` names their claims,
// `ip` names the claim (its Cluster and IPAddress, or the PrefixClaim whose block holds the address), `check` finds
// the records of claims that are gone, and neither `check` nor `orphans` takes them for a pod's orphans.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkReport } from '../../../src/cli/check-report.ts';
import { toJson } from '../../../src/cli/connect.ts';
import { buildInventory, type ClaimInfo, type Claims, type Inventory } from '../../../src/cli/inventory.ts';
import { formatIpReport, ipReport } from '../../../src/cli/ip-report.ts';
import { orphansReport } from '../../../src/cli/orphans-report.ts';
import { formatPool, poolReport } from '../../../src/cli/pool-report.ts';
import { claimReason, formatRelease } from '../../../src/cli/release.ts';
import { buildReport, formatTable } from '../../../src/cli/status-report.ts';
import { DEFAULT_POLICY } from '../../../src/controller/orphans/orphans.ts';
import { parseIP } from '../../../src/ip/address.ts';

const now = Date.parse('2026-11-22T10:00:00Z');
const old = '2026-11-22T09:00:00Z';
const young = new Date(now - 5_000).toISOString();
const judging = { policy: DEFAULT_POLICY, reservationGraceMs: 0 };

const pool = (name: string, range: string, allocations: Record<string, unknown>) => ({
  metadata: { name, uid: name, resourceVersion: '1' },
  spec: { range, allocations },
});
const machine = (ns: string, name: string, createdAt = old) => ({
  id: `hereabouts-claim:${ns}/${name}`,
  podref: '',
  ifname: 'claim',
  createdAt,
});
const prefix = (length: number, ns: string, name: string) => ({
  id: `hereabouts-prefix:${length}:${ns}/${name}`,
  podref: '',
  ifname: 'claim',
  createdAt: old,
});
const reservation = (name: string, containerid: string, podref = '') => ({
  metadata: { name, creationTimestamp: old },
  spec: { podref, containerid, ifname: podref === '' ? 'claim' : 'net1' },
});

/** A pool pods and machines share, and the IPPool of a claims pool that lists its own addresses. */
const OWN = 'hereabouts-claims.ns.capi.blocks-10.1.0.0-24';
const ippools = [
  pool('10.0.0.0-24', '10.0.0.0/24', {
    '5': { id: 'c1', podref: 'ns/gone', ifname: 'net1' },
    '10': machine('capi', 'm-0'),
    '11': machine('capi', 'm-gone'),
    '12': machine('capi', 'm-young', young),
  }),
  pool(OWN, '10.1.0.0/24', {
    '5': machine('capi', 'm-own'),
    '64': prefix(26, 'capi', 'p-0'),
    '128': prefix(27, 'capi', 'p-gone'),
  }),
];
const reservations = [
  reservation('10.0.0.5', 'c1', 'ns/gone'),
  reservation('10.0.0.10', 'hereabouts-claim:capi/m-0'),
  reservation('10.0.0.11', 'hereabouts-claim:capi/m-gone'),
  reservation('10.0.0.12', 'hereabouts-claim:capi/m-young'),
  reservation('hereabouts-claims-10.1.0.5', 'hereabouts-claim:capi/m-own'),
];
const listedClaims: Claims = {
  IPAddressClaim: new Map<string, ClaimInfo>([
    ['capi/m-0', { deleting: false, cluster: 'c1' }],
    ['capi/m-own', { deleting: false }],
  ]),
  PrefixClaim: new Map<string, ClaimInfo>([['capi/p-0', { deleting: false }]]),
};

/** The text holds these lines, one after another. */
function assertLines(text: string, lines: readonly string[]): void {
  assert.ok(text.includes(`${lines.join('\n')}\n`), `${JSON.stringify(lines)} not in:\n${text}`);
}

function inventory(claims: Claims | undefined = listedClaims): Inventory {
  return buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools,
    reservations,
    nodeSlicePools: [],
    pods: new Map(),
    nadNetworkNames: [],
    nodes: [],
    claims,
  });
}

test('status: claim records are counted apart (addresses of IPAddressClaims, PrefixClaims), never as orphans', () => {
  const report = buildReport('ns', ippools, [], new Map(), { policy: DEFAULT_POLICY, nowMs: now });
  const rows = (JSON.parse(toJson(report)) as { pools: Array<Record<string, unknown>> }).pools;
  assert.deepEqual(
    rows.map((p) => [p['name'], p['used'], p['warm'], p['claims'], p['prefixes'], p['free'], p['orphans']]),
    [
      ['10.0.0.0-24', 4, 0, 3, 0, 250, 1],
      [OWN, 3, 0, 1, 2, 251, 0],
    ],
  );
  const table = formatTable(report).split('\n');
  assert.match(
    table[1] ?? '',
    /^POOL\s+RANGE\s+CAPACITY\s+USED\s+WARM\s+CLAIMS\s+PREFIXES\s+STICKY\s+FREE\s+ORPHANS\s+NODE$/,
  );
  assert.match(table[2] ?? '', /^10\.0\.0\.0-24\s+10\.0\.0\.0\/24\s+254\s+4\s+0\s+3\s+0\s+0\s+250\s+1\s+-$/);
  assert.match(
    table[3] ?? '',
    /^hereabouts-claims\.ns\.capi\.blocks-10\.1\.0\.0-24\s+10\.1\.0\.0\/24\s+254\s+3\s+0\s+1\s+2\s+0\s+251\s+0\s+-$/,
  );
});

test('pool: a claim record names its claim (a PrefixClaim with its block), whether it exists, and no reservation for a block', () => {
  const inv = inventory();
  const own = inv.pools.find((p) => p.view.name === OWN);
  assert.ok(own !== undefined);
  const report = poolReport(inv, own, judging);
  assert.deepEqual([report.used, report.warm, report.claims, report.prefixes], [3, 0, 1, 2]);
  assert.deepEqual(report.allocations[1]?.claim, {
    kind: 'PrefixClaim',
    namespace: 'capi',
    name: 'p-0',
    block: '10.1.0.64/26',
    state: 'present',
  });
  assert.equal(
    formatPool(report, now),
    [
      `IPPool ${OWN}: range 10.1.0.0/24, network hereabouts-claims.ns.capi.blocks; 3 used of 254 (1 by IPAddressClaims, 2 PrefixClaim blocks), 251 free`,
      'ADDRESS     POD                                    POD STATE      NODE  AGE  CONTAINER     IFNAME  RESERVATION  ORPHAN',
      '10.1.0.5    IPAddressClaim capi/m-own              claim present  -     1h   hereabouts-c  claim   agrees       -',
      '10.1.0.64   PrefixClaim capi/p-0 10.1.0.64/26      claim present  -     1h   hereabouts-p  claim   none         -',
      '10.1.0.128  PrefixClaim capi/p-gone 10.1.0.128/27  claim gone     -     1h   hereabouts-p  claim   none         -',
      '',
    ].join('\n'),
  );
  // Claims not read (no access): the state says so.
  const unread = poolReport(inventory({}), own, judging);
  assert.equal(unread.allocations[0]?.claim?.state, 'unknown');
});

test('pool: the claim records of a pool pods share sit beside the pods', () => {
  const inv = inventory();
  const shared = inv.pools.find((p) => p.view.name === '10.0.0.0-24');
  assert.ok(shared !== undefined);
  const report = poolReport(inv, shared, judging);
  const lines = formatPool(report, now).split('\n');
  assert.equal(
    lines[0],
    'IPPool 10.0.0.0-24: range 10.0.0.0/24, network (unnamed); 4 used of 254 (3 by IPAddressClaims), 250 free',
  );
  assert.match(lines[2] ?? '', /^10\.0\.0\.5\s+ns\/gone\s+gone\s.*pod-gone \(now\)$/);
  assert.match(
    lines[3] ?? '',
    /^10\.0\.0\.10\s+IPAddressClaim capi\/m-0\s+claim present\s+-\s+1h\s+hereabouts-c\s+claim\s+agrees\s+-$/,
  );
  assert.match(lines[4] ?? '', /^10\.0\.0\.11\s+IPAddressClaim capi\/m-gone\s+claim gone\s.*\s-$/);
});

test("ip: an IPAddressClaim's address names the claim, its Cluster and its IPAddress", () => {
  const claims: Claims = {
    IPAddressClaim: new Map<string, ClaimInfo>([
      [
        'capi/m-0',
        {
          deleting: false,
          cluster: 'c1',
          ipAddress: { name: 'm-0', address: '10.0.0.10', prefix: 24, gateway: '10.0.0.1', claim: 'm-0' },
        },
      ],
    ]),
  };
  const report = ipReport(inventory(claims), parseIP('10.0.0.10'));
  assert.deepEqual(report.holders[0]?.claim, {
    kind: 'IPAddressClaim',
    namespace: 'capi',
    name: 'm-0',
    recordedAt: '10.0.0.10',
    state: 'present',
    cluster: 'c1',
    ipAddress: { name: 'm-0', address: '10.0.0.10', prefix: 24, gateway: '10.0.0.1', claim: 'm-0' },
  });
  assert.equal(
    formatIpReport(report, now),
    [
      '10.0.0.10 is held by IPAddressClaim capi/m-0 in IPPool 10.0.0.0-24',
      '  network      (unnamed)',
      '  claim        IPAddressClaim capi/m-0: exists',
      '  cluster      c1',
      '  ipaddress    capi/m-0: 10.0.0.10/24, gateway 10.0.0.1',
      '  container    hereabouts-claim:capi/m-0, interface claim',
      '  since        2026-11-22T09:00:00.000Z (1h ago)',
      '  reservation  10.0.0.10: agrees with the pool',
      '',
    ].join('\n'),
  );
  // An IPAddress that names another address disagrees.
  const moved: Claims = {
    IPAddressClaim: new Map<string, ClaimInfo>([
      ['capi/m-0', { deleting: false, ipAddress: { name: 'm-0', address: '10.0.0.99', prefix: 24 } }],
    ]),
  };
  assertLines(formatIpReport(ipReport(inventory(moved), parseIP('10.0.0.10')), now), [
    '  cluster      (none named)',
    '  ipaddress    capi/m-0: 10.0.0.99/24: DISAGREES (the pool holds 10.0.0.10 for the claim)',
  ]);
});

test('ip: a claim that is gone is said to be, with when the controller releases its address', () => {
  const read: Claims = {
    IPAddressClaim: new Map<string, ClaimInfo>([
      ['capi/m-gone', { deleting: false, gone: true, ipAddress: null }],
      ['capi/m-young', { deleting: false, gone: true, ipAddress: { name: 'm-young', address: '10.0.0.12' } }],
    ]),
  };
  const gone = formatIpReport(ipReport(inventory(read), parseIP('10.0.0.11')), now);
  assert.match(gone, /^10\.0\.0\.11 is held by IPAddressClaim capi\/m-gone in IPPool 10\.0\.0\.0-24\n/);
  assertLines(gone, [
    "  claim        IPAddressClaim capi/m-gone: GONE: the controller's record pass releases the address",
    '  cluster      -',
    '  ipaddress    capi/m-gone: none',
  ]);
  const report = ipReport(inventory(read), parseIP('10.0.0.12'));
  assert.equal(report.holders[0]?.claim?.releasableAt, new Date(now + 10_000).toISOString());
  assertLines(formatIpReport(report, now), [
    "  claim        IPAddressClaim capi/m-young: GONE: the controller's record pass deletes its IPAddress, then releases the address (not before in 10s)",
  ]);
});

test("ip: an address inside a PrefixClaim's block names the claim and the block (not only the first address)", () => {
  const claims: Claims = { PrefixClaim: new Map<string, ClaimInfo>([['capi/p-0', { deleting: false }]]) };
  const inv = inventory(claims);
  for (const address of ['10.1.0.64', '10.1.0.70', '10.1.0.127']) {
    const report = ipReport(inv, parseIP(address));
    assert.equal(report.holders.length, 1, address);
    assert.equal(report.holders[0]?.claim?.block, '10.1.0.64/26');
    assert.equal(report.holders[0].reservation.state, 'none');
  }
  assert.equal(
    formatIpReport(ipReport(inv, parseIP('10.1.0.70')), now),
    [
      `10.1.0.70 is held by PrefixClaim capi/p-0 (block 10.1.0.64/26) in IPPool ${OWN}`,
      '  network      hereabouts-claims.ns.capi.blocks',
      '  claim        PrefixClaim capi/p-0: exists',
      '  block        10.1.0.64/26, recorded at 10.1.0.64',
      '  container    hereabouts-prefix:26:capi/p-0, interface claim',
      '  since        2026-11-22T09:00:00.000Z (1h ago)',
      "  reservation  none (a PrefixClaim's block is not reserved: no other writer shares its pool)",
      '',
    ].join('\n'),
  );
  // Past the block: free.
  assert.deepEqual(ipReport(inv, parseIP('10.1.0.63')).holders, []);
  assert.equal(ipReport(inv, parseIP('10.1.0.128')).holders[0]?.claim?.state, 'gone');
  assertLines(formatIpReport(ipReport(inv, parseIP('10.1.0.159')), now), [
    `10.1.0.159 is held by PrefixClaim capi/p-gone (block 10.1.0.128/27) in IPPool ${OWN}`,
    '  network      hereabouts-claims.ns.capi.blocks',
    "  claim        PrefixClaim capi/p-gone: GONE: the controller's record pass releases the block",
  ]);
});

test('check: claim records are no pod orphans; those of claims that are gone are found (after the record grace)', () => {
  const report = checkReport(inventory(), judging);
  assert.deepEqual(
    report.problems.map((p) => [p.kind, p.address, p.claim ?? p.reason]),
    [
      ['orphan', '10.0.0.5', 'pod-gone'],
      ['claim-gone', '10.0.0.11', 'IPAddressClaim capi/m-gone'],
      ['claim-gone', '10.1.0.128', 'PrefixClaim capi/p-gone'],
    ],
  );
  const byAddress = new Map(report.problems.map((p) => [p.address, p.message]));
  assert.equal(
    byAddress.get('10.0.0.11'),
    '10.0.0.11 in IPPool 10.0.0.0-24 is held by IPAddressClaim capi/m-gone, which no longer exists: the controller releases it',
  );
  assert.equal(
    byAddress.get('10.1.0.128'),
    `the block 10.1.0.128/27 in IPPool ${OWN} is held by PrefixClaim capi/p-gone, which no longer exists: the controller releases it`,
  );
});

test('check: claims that could not be listed are said to be, once per kind', () => {
  const onlyPrefixes: Claims = { PrefixClaim: new Map<string, ClaimInfo>([['capi/p-0', { deleting: false }]]) };
  const report = checkReport(inventory(onlyPrefixes), judging);
  assert.deepEqual(
    report.problems.map((p) => [p.kind, p.address]),
    [
      ['orphan', '10.0.0.5'],
      ['claim-gone', '10.1.0.128'],
      ['claims-not-listed', undefined],
    ],
  );
  assert.equal(
    report.problems[2]?.message,
    'IPAddressClaims cannot be listed: 4 record(s) held by IPAddressClaims are not checked against their claims',
  );
});

test('orphans: claim records are never pod orphans, even with every pod listed and none there', () => {
  const report = orphansReport(inventory(), judging);
  assert.deepEqual(
    report.allocations.map((r) => r.address),
    ['10.0.0.5'],
  );
  assert.deepEqual(report.waiting, []);
  // Their reservations stay (their addresses are held); the gone pod's goes with its address.
  assert.deepEqual(
    report.reservations.map((r) => [r.name, r.reason]),
    [['10.0.0.5', 'pod-gone']],
  );
});

test('release: a claim holds its address until it is gone; the refusal says how to release it', () => {
  const holder = { kind: 'IPAddressClaim', namespace: 'capi', name: 'm-0' } as const;
  assert.equal(claimReason(holder, 'gone'), undefined);
  assert.equal(
    claimReason(holder, 'present'),
    'IPAddressClaim capi/m-0 holds it: delete the claim to release its address',
  );
  assert.match(claimReason(holder, 'deleting') ?? '', /is being deleted: its finalizer releases the address/);
  assert.match(claimReason(holder, 'unknown') ?? '', /the claim could not be read/);
  assert.equal(
    formatRelease({
      address: '10.0.0.10',
      network: '',
      released: [],
      skipped: [],
      reservation: { name: '10.0.0.10', outcome: 'kept' },
      refused: `${claimReason(holder, 'present')}: --force releases it anyway`,
    }),
    'refused to release 10.0.0.10 of network (unnamed): IPAddressClaim capi/m-0 holds it: delete the claim to release its address: --force releases it anyway\n',
  );
});
