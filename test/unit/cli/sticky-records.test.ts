// Sticky addresses (docs/sticky.md) in the operator commands' pure parts: `status` counts bound records (never as
// orphans), `pool` names each binding and whether a pod holds the address now ("parked"), `ip` names the binding, its
// namespace, whether its workload still holds it (the controller's rule, bindingReleaseReason) and until when it is
// kept, `check` reports a binding its workload released as an informational notice (never an orphan, never a
// problem), `release` refuses a bound address while its binding holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindingVerdict, type StickyObjects } from '../../../src/cli/bindings.ts';
import { checkReport, formatCheck } from '../../../src/cli/check-report.ts';
import { toJson } from '../../../src/cli/connect.ts';
import { buildInventory, type Inventory, type PodInfo } from '../../../src/cli/inventory.ts';
import { formatIpReport, ipReport } from '../../../src/cli/ip-report.ts';
import { orphansReport } from '../../../src/cli/orphans-report.ts';
import { formatPool, poolReport } from '../../../src/cli/pool-report.ts';
import { bindingReason } from '../../../src/cli/release.ts';
import { buildReport, formatTable } from '../../../src/cli/status-report.ts';
import { DEFAULT_POLICY } from '../../../src/controller/orphans/orphans.ts';
import { podView } from '../../../src/controller/orphans/pod-view.ts';
import { parseIP } from '../../../src/ip/address.ts';

const now = Date.parse('2026-11-22T10:00:00Z');
const old = '2026-11-22T09:00:00Z';
const judging = { policy: DEFAULT_POLICY, reservationGraceMs: 0 };

const bound = (podref: string, binding: string, id: string) => ({
  id,
  podref,
  ifname: 'net1',
  podUid: `uid-${id}`,
  createdAt: old,
  binding,
});
const ippools = [
  {
    metadata: { name: '10.0.0.0-24', uid: 'p', resourceVersion: '1' },
    spec: {
      range: '10.0.0.0/24',
      allocations: {
        '5': bound('ns/web-0', 'StatefulSet/web/0', 'c5'), // its pod runs: in use
        '6': bound('ns/web-1', 'StatefulSet/web/1', 'c6'), // no pod, ordinal within the set: parked, kept
        '7': bound('ns/web-2', 'StatefulSet/web/2', 'c7'), // scaled below it: released
        '8': bound('ns/db-0', 'StatefulSet/db/0', 'c8'), // its set is gone: released
        '9': bound('vms/virt-launcher-vm1-x', 'VirtualMachine/vm1', 'c9'), // the VMI is left: kept
        '10': bound('ns/cache-0', 'StatefulSet/cache/0', 'c10'), // its set could not be read: unknown
        '11': { id: 'c11', podref: 'ns/gone', ifname: 'net1', createdAt: old }, // an ordinary orphan beside them
      },
    },
  },
];
const pod = (ns: string, name: string, uid: string): PodInfo => {
  const view = podView({ metadata: { namespace: ns, name, uid }, status: { phase: 'Running' } });
  assert.ok(view !== undefined);
  return { view, node: 'node-a' };
};
const pods = new Map([['ns/web-0', pod('ns', 'web-0', 'uid-c5')]]);
const sticky: StickyObjects = {
  statefulSets: new Map([
    ['ns/web', { uid: 's', replicas: 2, start: 0 }],
    ['ns/db', null],
  ]),
  pods: new Map([
    ['ns/web-0', true],
    ['ns/web-1', false],
    ['ns/web-2', false],
    ['ns/db-0', false],
    ['ns/cache-0', false],
  ]),
  virtualMachines: new Map([['vms/vm1', false]]),
  virtualMachineInstances: new Map([['vms/vm1', true]]),
};

/** The inventory, with what was read of the workloads (null: not read). */
function inventory(objects: StickyObjects | null = sticky): Inventory {
  return buildInventory({
    namespace: 'kube-system',
    nowMs: now,
    ippools,
    reservations: [],
    nodeSlicePools: [],
    pods,
    nadNetworkNames: [],
    nodes: ['node-a'],
    ...(objects === null ? {} : { sticky: objects }),
  });
}

test('status: a STICKY column counts the bound records; none of them is an orphan, even with its pod gone', () => {
  const views = new Map([...pods].map(([ref, info]) => [ref, info.view]));
  const report = buildReport('kube-system', ippools, [], views, { policy: DEFAULT_POLICY, nowMs: now });
  const row = (JSON.parse(toJson(report)) as { pools: Array<Record<string, unknown>> }).pools[0];
  assert.deepEqual([row?.['used'], row?.['sticky'], row?.['orphans']], [7, 6, 1]);
  const lines = formatTable(report).split('\n');
  assert.match(
    lines[1] ?? '',
    /^POOL\s+RANGE\s+CAPACITY\s+USED\s+WARM\s+CLAIMS\s+PREFIXES\s+STICKY\s+FREE\s+ORPHANS\s+NODE$/,
  );
  assert.match(lines[2] ?? '', /^10\.0\.0\.0-24\s+10\.0\.0\.0\/24\s+254\s+7\s+0\s+0\s+0\s+6\s+247\s+1\s+-$/);
  const header = lines[1] ?? '';
  assert.equal(lines[2]?.indexOf('6', header.indexOf('STICKY')), header.indexOf('STICKY'), 'STICKY is aligned');
});

test('pool: each bound record names its binding, "parked" when no pod holds it, and the reason once released', () => {
  const inv = inventory();
  const [pool] = inv.pools;
  assert.ok(pool !== undefined);
  const report = poolReport(inv, pool, judging);
  assert.deepEqual([report.used, report.sticky, report.parked], [7, 6, 5]);
  assert.equal(
    formatPool(report, now),
    [
      'IPPool 10.0.0.0-24: range 10.0.0.0/24, network (unnamed); 7 used of 254 (6 sticky, 5 of them parked), 247 free',
      'ADDRESS    POD                                                  POD STATE  NODE    AGE  CONTAINER  IFNAME  RESERVATION  ORPHAN',
      '10.0.0.5   ns/web-0 bound to StatefulSet/web/0                  Running    node-a  1h   c5         net1    missing      -',
      '10.0.0.6   ns/web-1 bound to StatefulSet/web/1                  parked     -       1h   c6         net1    missing      -',
      '10.0.0.7   ns/web-2 bound to StatefulSet/web/2                  parked     -       1h   c7         net1    missing      scaled-down (after sticky grace)',
      '10.0.0.8   ns/db-0 bound to StatefulSet/db/0                    parked     -       1h   c8         net1    missing      statefulset-gone (after sticky grace)',
      '10.0.0.9   vms/virt-launcher-vm1-x bound to VirtualMachine/vm1  parked     -       1h   c9         net1    missing      -',
      '10.0.0.10  ns/cache-0 bound to StatefulSet/cache/0              parked     -       1h   c10        net1    missing      ?',
      '10.0.0.11  ns/gone                                              gone       -       1h   c11        net1    missing      pod-gone (now)',
      '',
    ].join('\n'),
  );
  // -o json: the binding, its namespace, the pod's use of it and the verdict.
  const rows = (JSON.parse(toJson(report)) as { allocations: Array<{ address: string; binding?: unknown }> })
    .allocations;
  assert.deepEqual(rows.find((r) => r.address === '10.0.0.7')?.binding, {
    binding: 'StatefulSet/web/2',
    namespace: 'ns',
    pod: 'parked',
    state: 'released',
    reason: 'scaled-down',
    seen: 'StatefulSet web has 2 replicas (ordinals 0-1); pod web-2 is gone',
    keptUntil:
      'pod web-2 is gone and StatefulSet web no longer includes ordinal 2 (deleted, or scaled below 3 replicas)',
  });
  assert.equal(rows.find((r) => r.address === '10.0.0.11')?.binding, undefined);
  // Nothing read of the workloads: every verdict is unknown, the bindings still show.
  const unread = poolReport(inventory({ ...sticky, statefulSets: new Map() }), pool, judging);
  assert.deepEqual(
    unread.allocations.map((r) => r.binding?.state),
    ['holds', 'unknown', 'unknown', 'unknown', 'holds', 'unknown', undefined],
    'a replica pod that exists holds its binding whatever its set; a VMI left holds its VM',
  );
});

test('ip: a bound address names its binding, namespace, whether its workload holds it, and until when it is kept', () => {
  const inv = inventory();
  const text = (address: string): string => formatIpReport(ipReport(inv, parseIP(address)), now);
  assert.equal(
    text('10.0.0.5'),
    [
      '10.0.0.5 is held by ns/web-0 in IPPool 10.0.0.0-24',
      '  network      (unnamed)',
      '  pod          Running, uid uid-c5, on node-a',
      '  node         node-a',
      '  binding      StatefulSet/web/0 in namespace ns: held by its workload (StatefulSet web has 2 replicas (ordinals 0-1); pod web-0 exists)',
      "  kept until   pod web-0 is gone and StatefulSet web no longer includes ordinal 0 (deleted, or scaled to 0 replicas), then for the controller's --sticky-grace (default 5m)",
      '  container    c5, interface net1',
      '  since        2026-11-22T09:00:00.000Z (1h ago)',
      '  reservation  10.0.0.5: MISSING',
      '',
    ].join('\n'),
  );
  const parked = text('10.0.0.6').split('\n');
  assert.equal(parked[2], '  pod          parked: no pod holds it now (ns/web-1 is gone)');
  assert.equal(
    parked[4],
    '  binding      StatefulSet/web/1 in namespace ns: held by its workload (StatefulSet web has 2 replicas (ordinals 0-1); pod web-1 is gone)',
  );
  assert.equal(
    parked[5],
    "  kept until   pod web-1 is gone and StatefulSet web no longer includes ordinal 1 (deleted, or scaled below 2 replicas), then for the controller's --sticky-grace (default 5m)",
  );
  const released = text('10.0.0.8').split('\n');
  assert.deepEqual(released.slice(4, 6), [
    '  binding      StatefulSet/db/0 in namespace ns: NO LONGER HELD (statefulset-gone): StatefulSet db is gone; pod db-0 is gone',
    '  released     by the controller once it has seen this for its --sticky-grace (default 5m), unless the workload takes it back first',
  ]);
  const vm = text('10.0.0.9').split('\n');
  assert.deepEqual(vm.slice(4, 6), [
    '  binding      VirtualMachine/vm1 in namespace vms: held by its workload (VirtualMachine vm1 is gone, its VirtualMachineInstance exists)',
    "  kept until   VirtualMachine vm1 and its VirtualMachineInstance are both deleted, then for the controller's --sticky-grace (default 5m)",
  ]);
  assert.match(
    text('10.0.0.10'),
    /\n {2}binding {6}StatefulSet\/cache\/0 in namespace ns: unknown \(StatefulSet cache could not be read; pod cache-0 is gone\)\n/,
  );
  // An ordinary address has no binding lines.
  assert.doesNotMatch(text('10.0.0.11'), /binding|kept until/);
  const json = JSON.parse(toJson(ipReport(inv, parseIP('10.0.0.7')))) as {
    holders: Array<{ binding?: { binding: string; namespace: string; pod: string; state: string; reason?: string } }>;
  };
  const b = json.holders[0]?.binding;
  assert.deepEqual(
    [b?.binding, b?.namespace, b?.pod, b?.state, b?.reason],
    ['StatefulSet/web/2', 'ns', 'parked', 'released', 'scaled-down'],
  );
});

test('check: a released binding is a binding-released notice (never an orphan, never a problem); unread ones are noted', () => {
  const report = checkReport(inventory(), judging);
  assert.deepEqual(
    report.problems.map((p) => [p.kind, p.address]),
    [['orphan', '10.0.0.11']],
    'only the ordinary record is an orphan',
  );
  assert.deepEqual(
    report.notices?.map((n) => [n.kind, n.address, n.binding, n.reason]),
    [
      ['binding-released', '10.0.0.7', 'StatefulSet/web/2', 'scaled-down'],
      ['binding-released', '10.0.0.8', 'StatefulSet/db/0', 'statefulset-gone'],
      ['bindings-not-read', undefined, undefined, undefined],
    ],
  );
  const text = formatCheck(report).split('\n');
  assert.equal(
    text[0],
    'namespace kube-system: 1 pool(s), 7 allocation(s), 0 reservation(s): 1 problem(s), 3 notice(s)',
  );
  assert.match(text[3] ?? '', /^NOTICE\s+DETAILS$/);
  assert.equal(
    text[4],
    'binding-released   10.0.0.7 in IPPool 10.0.0.0-24 is bound to StatefulSet/web/2 in namespace ns, whose workload no longer holds it (scaled-down: StatefulSet web has 2 replicas (ordinals 0-1); pod web-2 is gone): the controller releases it after its --sticky-grace (default 5m)',
  );
  assert.equal(
    text[6],
    'bindings-not-read  1 sticky address(es) are not checked against their workload: their StatefulSet, replica pod, VirtualMachine or VirtualMachineInstance could not be read',
  );
  // Notices alone: the check is consistent.
  const onlyBound = buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools: [
      {
        ...ippools[0],
        spec: { range: '10.0.0.0/24', allocations: { '7': bound('ns/web-2', 'StatefulSet/web/2', 'c7') } },
      },
    ],
    reservations: [],
    nodeSlicePools: [],
    pods,
    nadNetworkNames: [],
    sticky,
  });
  const quiet = checkReport(onlyBound, judging);
  assert.deepEqual(quiet.problems, []);
  assert.equal(
    formatCheck(quiet).split('\n')[0],
    'namespace ns: 1 pool(s), 1 allocation(s), 0 reservation(s): consistent, 1 notice(s)',
  );
  // Workloads not read (not asked for): no notice at all, and still no orphan.
  const unread = checkReport(inventory(null), judging);
  assert.deepEqual(unread.notices, []);
  assert.deepEqual(
    unread.problems.map((p) => p.kind),
    ['orphan'],
  );
});

test('orphans: a bound record is never listed, whatever its pod and its workload', () => {
  const report = orphansReport(inventory(), judging);
  assert.deepEqual(
    [...report.allocations, ...report.waiting].map((r) => r.address),
    ['10.0.0.11'],
  );
});

test('release: a bound address is refused while its binding holds (or may), naming the binding; allowed once released', () => {
  const inv = inventory();
  const holder = (address: string) => ipReport(inv, parseIP(address)).holders[0]?.binding;
  const held = holder('10.0.0.6');
  assert.ok(held !== undefined);
  assert.equal(
    bindingReason(held),
    'sticky address bound to StatefulSet/web/1 in namespace ns, which still holds it (StatefulSet web has 2 replicas (ordinals 0-1); pod web-1 is gone): kept until pod web-1 is gone and StatefulSet web no longer includes ordinal 1 (deleted, or scaled below 2 replicas)',
  );
  const unknown = holder('10.0.0.10');
  assert.ok(unknown !== undefined);
  assert.equal(
    bindingReason(unknown),
    'sticky address bound to StatefulSet/cache/0 in namespace ns, which may still hold it (StatefulSet cache could not be read; pod cache-0 is gone)',
  );
  const released = holder('10.0.0.7');
  assert.ok(released !== undefined);
  assert.equal(bindingReason(released), undefined);
});

test("bindingVerdict: the controller's rule, with spec.ordinals.start, a pod that outlives its set, and bindings it cannot read", () => {
  const objects = (set: { replicas: number; start: number } | null, podExists: boolean): StickyObjects => ({
    statefulSets: new Map([['ns/web', set === null ? null : { uid: 's', ...set }]]),
    pods: new Map([['ns/web-5', podExists]]),
    virtualMachines: new Map(),
    virtualMachineInstances: new Map(),
  });
  const verdict = (set: { replicas: number; start: number } | null, podExists: boolean) =>
    bindingVerdict('ns', 'StatefulSet/web/5', objects(set, podExists));
  assert.equal(verdict({ replicas: 2, start: 4 }, false).state, 'holds');
  assert.equal(
    verdict({ replicas: 2, start: 4 }, false).keptUntil,
    'pod web-5 is gone and StatefulSet web no longer includes ordinal 5 (deleted, or scaled below 2 replicas)',
  );
  assert.equal(
    verdict({ replicas: 2, start: 4 }, false).seen,
    'StatefulSet web has 2 replicas (ordinals 4-5); pod web-5 is gone',
  );
  assert.deepEqual(
    [verdict({ replicas: 1, start: 4 }, false).state, verdict({ replicas: 1, start: 4 }, false).reason],
    ['released', 'scaled-down'],
  );
  assert.equal(verdict({ replicas: 0, start: 0 }, false).seen, 'StatefulSet web has 0 replicas; pod web-5 is gone');
  assert.equal(verdict({ replicas: 3, start: 6 }, false).reason, 'scaled-down', 'ordinal below the start');
  // Deleted with --cascade=orphan: the pod still exists, the binding holds.
  assert.equal(verdict(null, true).state, 'holds');
  assert.equal(verdict(null, false).reason, 'statefulset-gone');
  // A binding this version cannot read is never released.
  assert.deepEqual(bindingVerdict('ns', 'Deployment/x', objects(null, false)), {
    state: 'holds',
    seen: 'this version cannot read the binding "Deployment/x"',
    keptUntil: 'a version that reads it releases it (this one never does)',
  });
});

test("the sticky area (the slice of hereabouts-sticky) is every node's: no outside-node-slice, and it is named so", () => {
  const area = 'net-hereabouts-sticky-10.9.0.0-28';
  const inv = buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools: [
      {
        metadata: { name: area, uid: 'a', resourceVersion: '1' },
        spec: { range: '10.9.0.0/28', allocations: { '2': bound('ns/web-0', 'StatefulSet/web/0', 'c5') } },
      },
    ],
    reservations: [],
    nodeSlicePools: [
      {
        metadata: { name: 'net' },
        spec: { range: '10.9.0.0/24', sliceSize: '/28' },
        status: { allocations: [{ nodeName: 'hereabouts-sticky', sliceRange: '10.9.0.0/28' }] },
      },
    ],
    pods, // web-0 runs on node-a
    nadNetworkNames: [],
    sticky,
  });
  const [pool] = inv.pools;
  assert.equal(pool?.node, 'hereabouts-sticky');
  assert.deepEqual(checkReport(inv, judging).problems, []);
  assert.equal(
    formatPool(poolReport(inv, pool, judging), now).split('\n')[0],
    `IPPool ${area}: range 10.9.0.0/28, network net, the sticky area (the slice of hereabouts-sticky: every node's sticky addresses); 1 used of 14 (1 sticky), 13 free`,
  );
  assert.match(
    formatIpReport(ipReport(inv, parseIP('10.9.0.2')), now),
    /\n {2}node slice {3}the sticky area \(the slice of hereabouts-sticky: every node's sticky addresses\)\n/,
  );
});

test('a pre-bound record (from a StatefulSet sticky-addresses list, no replica took it yet) says so', () => {
  const inv = buildInventory({
    namespace: 'ns',
    nowMs: now,
    ippools: [
      {
        metadata: { name: '10.8.0.0-24', uid: 'b', resourceVersion: '1' },
        spec: {
          range: '10.8.0.0/24',
          allocations: {
            '4': { id: 'hereabouts-sticky:prebound', podref: 'ns/web-1', ifname: '', binding: 'StatefulSet/web/1' },
          },
        },
      },
    ],
    reservations: [],
    nodeSlicePools: [],
    pods,
    nadNetworkNames: [],
    sticky,
  });
  const [pool] = inv.pools;
  assert.ok(pool !== undefined);
  assert.match(
    formatPool(poolReport(inv, pool, judging), now),
    /\n10\.8\.0\.4\s+ns\/web-1 pre-bound to StatefulSet\/web\/1\s+parked\s/,
  );
  assert.match(
    formatIpReport(ipReport(inv, parseIP('10.8.0.4')), now),
    /\n {2}binding {6}StatefulSet\/web\/1 in namespace ns \(pre-bound from the StatefulSet's sticky-addresses: its replica's first ADD takes it\): held by its workload \(/,
  );
});
