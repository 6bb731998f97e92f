// When a sticky address's binding holds (src/controller/sticky/verdict.ts) and what a StatefulSet declares for its
// ordinals (address-lists.ts): pure rules, every branch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bindingReleaseReason,
  statefulSetView,
  type StatefulSetView,
  type StickyWorld,
} from '../../../src/controller/sticky/verdict.ts';
import { declaredAddresses, planPrebind } from '../../../src/controller/sticky/address-lists.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';
import { parseIP, formatIP } from '../../../src/ip/address.ts';
import { PREBOUND_ID } from '../../../src/store/sticky-binding.ts';
import type { AllocationRecord, PoolRef } from '../../../src/store/store.ts';

function world(parts: {
  sets?: Record<string, StatefulSetView>;
  pods?: string[];
  vms?: string[];
  vmis?: string[];
}): StickyWorld {
  return {
    statefulSet: (key) => parts.sets?.[key],
    pod: (key) => parts.pods?.includes(key) ?? false,
    virtualMachine: (key) => parts.vms?.includes(key) ?? false,
    virtualMachineInstance: (key) => parts.vmis?.includes(key) ?? false,
  };
}
const set = (replicas: number, start = 0): StatefulSetView => ({ uid: 'u', replicas, start });

test('a StatefulSet binding holds while its replica pod exists, whatever the set says', () => {
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/3', world({ pods: ['ns/web-3'] })), undefined);
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/3', world({ pods: ['other/web-3'] })), 'statefulset-gone');
});

test('without its pod, a StatefulSet binding holds while the ordinal is within [start, start + replicas)', () => {
  const w = world({ sets: { 'ns/web': set(2) } });
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/0', w), undefined);
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/1', w), undefined);
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/2', w), 'scaled-down');
  const shifted = world({ sets: { 'ns/web': set(2, 5) } });
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/4', shifted), 'scaled-down');
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/5', shifted), undefined);
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/6', shifted), undefined);
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/7', shifted), 'scaled-down');
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/0', world({ sets: { 'ns/web': set(0) } })), 'scaled-down');
  assert.equal(bindingReleaseReason('ns', 'StatefulSet/web/0', world({})), 'statefulset-gone');
});

test('a VM binding holds while its VirtualMachine or its VirtualMachineInstance exists', () => {
  assert.equal(bindingReleaseReason('ns', 'VirtualMachine/vm', world({ vms: ['ns/vm'] })), undefined);
  assert.equal(bindingReleaseReason('ns', 'VirtualMachine/vm', world({ vmis: ['ns/vm'] })), undefined);
  assert.equal(bindingReleaseReason('ns', 'VirtualMachine/vm', world({ vms: ['other/vm'] })), 'vm-gone');
});

test('a binding this version cannot read, or one without a namespace, is never released', () => {
  for (const binding of ['Deployment/x', 'StatefulSet/web', 'StatefulSet/web/x', 'VirtualMachine/', '']) {
    assert.equal(bindingReleaseReason('ns', binding, world({})), undefined, binding);
  }
  assert.equal(bindingReleaseReason('', 'StatefulSet/web/0', world({})), undefined);
});

test('statefulSetView: replicas 1 and start 0 when unset; the declared addresses kept as written', () => {
  assert.deepEqual(statefulSetView({ metadata: { uid: 'u' }, spec: {} }), { uid: 'u', replicas: 1, start: 0 });
  assert.deepEqual(
    statefulSetView({
      metadata: { uid: 'u', annotations: { 'hereabouts.cni.cncf.io/sticky-addresses': '{}' } },
      spec: { replicas: 0, ordinals: { start: 3 } },
    }),
    { uid: 'u', replicas: 0, start: 3, addresses: '{}' },
  );
  assert.deepEqual(statefulSetView({ metadata: { uid: 'u' }, spec: { replicas: -1 } }), {
    uid: 'u',
    replicas: 1,
    start: 0,
  });
  assert.equal(statefulSetView({ metadata: {} }), undefined);
});

test('declaredAddresses: one entry per ordinal from start, lists for dual-stack, only ordinals within the replicas', () => {
  const text = JSON.stringify({ net: ['10.0.0.5', ['10.0.0.6', 'fd00::6'], '10.0.0.7'], 'ns/other': ['10.1.0.1'] });
  const { declared, problems } = declaredAddresses('ns', set(2, 1), text);
  assert.deepEqual(problems, []);
  assert.deepEqual(
    declared.map((d) => `${d.nad.namespace}/${d.nad.name} ${d.ordinal} ${formatIP(d.address)}`),
    ['ns/net 1 10.0.0.5', 'ns/net 2 10.0.0.6', 'ns/net 2 fd00::6', 'ns/other 1 10.1.0.1'],
  );
});

test('declaredAddresses: a second address of one family for an ordinal is refused (the replica would swap between them)', () => {
  const { declared, problems } = declaredAddresses(
    'ns',
    set(1),
    JSON.stringify({ net: [['10.0.0.1', '10.0.0.2', 'fd00::1']] }),
  );
  assert.deepEqual(
    declared.map((d) => formatIP(d.address)),
    ['10.0.0.1', 'fd00::1'],
  );
  assert.deepEqual(problems, ['network net, ordinal 0: "10.0.0.2" is a second IPv4 address']);
});

test("declaredAddresses: what cannot be read is named, another namespace's network is refused", () => {
  assert.match(declaredAddresses('ns', set(1), 'nope').problems[0] ?? '', /not JSON/);
  assert.match(declaredAddresses('ns', set(1), '[]').problems[0] ?? '', /not a JSON object/);
  const { declared, problems } = declaredAddresses(
    'ns',
    set(2),
    JSON.stringify({ 'x/net': ['10.0.0.1'], 'a/b/c': [], net: 'x', ok: ['10.0.0.2', 'bad'] }),
  );
  assert.deepEqual(
    declared.map((d) => formatIP(d.address)),
    ['10.0.0.2'],
  );
  assert.equal(problems.length, 4, problems.join('\n'));
  assert.match(problems.join('\n'), /x\/net is not in the StatefulSet's namespace ns/);
  assert.match(problems.join('\n'), /ordinal 1: "bad" is not an address/);
});

const pool: PoolRef = {
  name: 'p',
  network: 'n',
  networkNamed: false,
  range: {
    cidr: parseCidr('10.0.0.0/24'),
    start: parseIP('10.0.0.1').value,
    end: parseIP('10.0.0.254').value,
    exclude: [{ first: parseIP('10.0.0.8').value, last: parseIP('10.0.0.11').value }],
    gateway: parseIP('10.0.0.1'),
  },
};
const at = (ip: string): bigint => parseIP(ip).value;
const prebound: AllocationRecord = {
  containerId: PREBOUND_ID,
  ifname: '',
  podRef: 'ns/web-0',
  binding: 'StatefulSet/web/0',
};

test('planPrebind claims a free address, leaves one its binding holds, refuses the rest with the reason', () => {
  const free = planPrebind(pool, at('10.0.0.5'), prebound)(new Map(), new Set());
  assert.deepEqual(free.value, { kind: 'prebound' });
  assert.deepEqual(free.change, { claim: { address: at('10.0.0.5'), record: prebound } });
  const running: AllocationRecord = {
    containerId: 'c1',
    ifname: 'net1',
    podRef: 'ns/web-0',
    binding: 'StatefulSet/web/0',
  };
  assert.deepEqual(planPrebind(pool, at('10.0.0.5'), prebound)(new Map([[at('10.0.0.5'), running]]), new Set()), {
    change: null,
    value: { kind: 'bound' },
  });
  const why = (address: string, current = new Map<bigint, AllocationRecord>(), refused = new Set<bigint>()): string => {
    const v = planPrebind(pool, at(address), prebound)(current, refused);
    assert.equal(v.change, null);
    return v.value.kind === 'refused' ? v.value.why : v.value.kind;
  };
  assert.match(
    why('10.0.0.5', new Map([[at('10.0.0.5'), { containerId: 'c', ifname: 'net1', podRef: 'ns/db-0' }]])),
    /held by pod ns\/db-0/,
  );
  const other: AllocationRecord = {
    containerId: 'c',
    ifname: 'net1',
    podRef: 'ns/web-1',
    binding: 'StatefulSet/web/1',
  };
  assert.match(why('10.0.0.5', new Map([[at('10.0.0.5'), other]])), /held by StatefulSet\/web\/1 of ns/);
  const elsewhere: AllocationRecord = { ...prebound, podRef: 'other/web-0' };
  assert.match(why('10.0.0.5', new Map([[at('10.0.0.5'), elsewhere]])), /held by StatefulSet\/web\/0 of other/);
  assert.match(why('10.0.0.5', new Map(), new Set([at('10.0.0.5')])), /its reservation/);
  assert.match(why('10.0.0.9'), /excluded/);
  assert.match(why('10.0.0.1'), /gateway/);
  assert.match(why('10.0.0.255'), /outside the allocatable span/);
});
