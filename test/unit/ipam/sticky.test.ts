// Which identity a pod's addresses bind to on a sticky network (src/ipam/sticky.ts bindingOf), and the binding
// strings records carry (src/store/sticky-binding.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StickyMode } from '../../../src/config/types.ts';
import { bindingOf } from '../../../src/ipam/sticky.ts';
import {
  bindingKey,
  formatBinding,
  isPrebound,
  namespaceOfPodRef,
  parseBinding,
  PREBOUND_ID,
  replicaName,
  type Binding,
} from '../../../src/store/sticky-binding.ts';
import type { PodFacts } from '../../../src/store/store.ts';

const statefulSet = (name = 'web', apiVersion = 'apps/v1') => ({ apiVersion, kind: 'StatefulSet', name });
const vmi = (name = 'vm1', apiVersion = 'kubevirt.io/v1') => ({ apiVersion, kind: 'VirtualMachineInstance', name });

function facts(owner: PodFacts['owner'], extra: { podIndex?: string; sticky?: string } = {}): PodFacts {
  return { uid: 'uid-1', ...(owner === undefined ? {} : { owner }), ...extra };
}

// --- mode × annotation ---------------------------------------------------------------------------------------------

const matrix: ReadonlyArray<[StickyMode, string | undefined, boolean]> = [
  ['all', 'true', true],
  ['all', 'false', false],
  ['all', undefined, true],
  ['annotated', 'true', true],
  ['annotated', 'false', false],
  ['annotated', undefined, false],
];

for (const [mode, annotation, binds] of matrix) {
  const label = annotation === undefined ? 'absent' : `"${annotation}"`;
  test(`bindingOf() mode ${mode}, annotation ${label}: a StatefulSet replica ${binds ? 'binds' : 'binds nothing'}`, () => {
    const podFacts = facts(statefulSet(), annotation === undefined ? {} : { sticky: annotation });
    assert.equal(bindingOf(mode, 'web-0', podFacts), binds ? 'StatefulSet/web/0' : undefined);
  });
  test(`bindingOf() mode ${mode}, annotation ${label}: a KubeVirt VM ${binds ? 'binds' : 'binds nothing'}`, () => {
    const podFacts = facts(vmi(), annotation === undefined ? {} : { sticky: annotation });
    assert.equal(bindingOf(mode, 'virt-launcher-vm1-x7k2p', podFacts), binds ? 'VirtualMachine/vm1' : undefined);
  });
}

test('bindingOf() compares the annotation exactly: only "false" opts out, only "true" opts in', () => {
  for (const value of ['TRUE', 'True', 'yes', '1', '']) {
    assert.equal(bindingOf('annotated', 'web-0', facts(statefulSet(), { sticky: value })), undefined, value);
    assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { sticky: value })), 'StatefulSet/web/0', value);
  }
  for (const value of ['FALSE', 'False', 'no', '0']) {
    assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { sticky: value })), 'StatefulSet/web/0', value);
  }
});

// --- StatefulSet replicas ------------------------------------------------------------------------------------------

test('bindingOf() binds a replica named "<set>-<ordinal>" to its ordinal', () => {
  assert.equal(bindingOf('all', 'web-0', facts(statefulSet())), 'StatefulSet/web/0');
  assert.equal(bindingOf('all', 'web-12', facts(statefulSet())), 'StatefulSet/web/12');
  assert.equal(bindingOf('all', 'web-999999999', facts(statefulSet())), 'StatefulSet/web/999999999');
});

test('bindingOf() binds a set whose own name ends in a dash and digits by the last ordinal only', () => {
  assert.equal(bindingOf('all', 'db-1-3', facts(statefulSet('db-1'))), 'StatefulSet/db-1/3');
  assert.equal(bindingOf('all', 'db-1', facts(statefulSet('db'))), 'StatefulSet/db/1');
  assert.equal(bindingOf('all', 'db-1-3', facts(statefulSet('db'))), undefined);
});

test('bindingOf() binds nothing for a pod the set owns that is not named as its replica', () => {
  for (const podName of ['web-01', 'web-00', 'web-x', 'web-', 'web', 'other-0', 'web0', 'webx-0', 'web--1', 'web-+1']) {
    assert.equal(bindingOf('all', podName, facts(statefulSet())), undefined, podName);
  }
});

test('bindingOf() binds nothing for an ordinal of ten digits or more', () => {
  assert.equal(bindingOf('all', 'web-1234567890', facts(statefulSet())), undefined);
});

test('bindingOf() accepts a pod-index label that agrees with the name', () => {
  assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { podIndex: '0' })), 'StatefulSet/web/0');
  assert.equal(bindingOf('all', 'web-12', facts(statefulSet(), { podIndex: '12' })), 'StatefulSet/web/12');
});

test('bindingOf() binds nothing when the pod-index label disagrees with the name', () => {
  assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { podIndex: '1' })), undefined);
  assert.equal(bindingOf('all', 'web-12', facts(statefulSet(), { podIndex: '21' })), undefined);
  assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { podIndex: '00' })), undefined);
  assert.equal(bindingOf('all', 'web-0', facts(statefulSet(), { podIndex: '' })), undefined);
});

test('bindingOf() takes any version of the apps group for a StatefulSet', () => {
  assert.equal(bindingOf('all', 'web-3', facts(statefulSet('web', 'apps/v1beta2'))), 'StatefulSet/web/3');
});

test('bindingOf() binds nothing for a StatefulSet owner of another API group', () => {
  for (const apiVersion of ['example.com/v1', 'apps.example.com/v1', 'v1', 'kubevirt.io/v1', 'Apps/v1']) {
    assert.equal(bindingOf('all', 'web-0', facts(statefulSet('web', apiVersion))), undefined, apiVersion);
    assert.equal(
      bindingOf('annotated', 'web-0', facts(statefulSet('web', apiVersion), { sticky: 'true' })),
      undefined,
      apiVersion,
    );
  }
});

// --- KubeVirt ------------------------------------------------------------------------------------------------------

test('bindingOf() binds a virt-launcher pod to the VirtualMachine its VirtualMachineInstance is named for', () => {
  assert.equal(bindingOf('all', 'virt-launcher-vm1-abcde', facts(vmi('vm1'))), 'VirtualMachine/vm1');
  assert.equal(bindingOf('all', 'anything', facts(vmi('db.prod', 'kubevirt.io/v1alpha3'))), 'VirtualMachine/db.prod');
});

test('bindingOf() gives both pods of a live migration the same binding', () => {
  const source = bindingOf('all', 'virt-launcher-vm1-abcde', facts(vmi('vm1')));
  const target = bindingOf('all', 'virt-launcher-vm1-fghij', facts(vmi('vm1')));
  assert.equal(source, 'VirtualMachine/vm1');
  assert.equal(target, source);
});

test('bindingOf() binds nothing for a VirtualMachineInstance owner of another group, or a VirtualMachine owner', () => {
  assert.equal(bindingOf('all', 'virt-launcher-vm1-abcde', facts(vmi('vm1', 'example.com/v1'))), undefined);
  assert.equal(bindingOf('all', 'virt-launcher-vm1-abcde', facts(vmi('vm1', 'v1'))), undefined);
  const vmOwner = { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'vm1' };
  assert.equal(bindingOf('all', 'virt-launcher-vm1-abcde', facts(vmOwner)), undefined);
});

// --- ordinary pods -------------------------------------------------------------------------------------------------

test('bindingOf() binds nothing for a pod without an owner, whatever the mode and annotation', () => {
  assert.equal(bindingOf('all', 'web-0', facts(undefined)), undefined);
  assert.equal(bindingOf('all', 'web-0', facts(undefined, { sticky: 'true' })), undefined);
  assert.equal(bindingOf('annotated', 'web-0', facts(undefined, { sticky: 'true', podIndex: '0' })), undefined);
});

test('bindingOf() binds nothing for a Deployment pod (ReplicaSet owner), a Job pod or a DaemonSet pod', () => {
  const owners = [
    { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d8f7c9b4' },
    { apiVersion: 'batch/v1', kind: 'Job', name: 'web' },
    { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'web' },
  ];
  for (const owner of owners) {
    assert.equal(bindingOf('all', 'web-0', facts(owner)), undefined, owner.kind);
    assert.equal(bindingOf('annotated', 'web-0', facts(owner, { sticky: 'true' })), undefined, owner.kind);
  }
});

// --- binding strings -----------------------------------------------------------------------------------------------

test('formatBinding() writes "StatefulSet/<name>/<ordinal>" and "VirtualMachine/<name>"', () => {
  assert.equal(formatBinding({ kind: 'StatefulSet', name: 'web', ordinal: 0 }), 'StatefulSet/web/0');
  assert.equal(formatBinding({ kind: 'StatefulSet', name: 'db-1', ordinal: 12 }), 'StatefulSet/db-1/12');
  assert.equal(formatBinding({ kind: 'VirtualMachine', name: 'vm1' }), 'VirtualMachine/vm1');
});

test('parseBinding() reads back what formatBinding() writes', () => {
  const bindings: Binding[] = [
    { kind: 'StatefulSet', name: 'web', ordinal: 0 },
    { kind: 'StatefulSet', name: 'web', ordinal: 12 },
    { kind: 'StatefulSet', name: 'db-1', ordinal: 3 },
    { kind: 'StatefulSet', name: 'a.b.c', ordinal: 999999999 },
    { kind: 'VirtualMachine', name: 'vm1' },
    { kind: 'VirtualMachine', name: 'db.prod-2' },
  ];
  for (const binding of bindings) {
    const text = formatBinding(binding);
    assert.deepEqual(parseBinding(text), binding, text);
    assert.equal(formatBinding(parseBinding(text)!), text, text);
  }
});

test('parseBinding() reads what bindingOf() answers', () => {
  assert.deepEqual(parseBinding(bindingOf('all', 'web-7', facts(statefulSet()))!), {
    kind: 'StatefulSet',
    name: 'web',
    ordinal: 7,
  });
  assert.deepEqual(parseBinding(bindingOf('all', 'x', facts(vmi('vm9')))!), { kind: 'VirtualMachine', name: 'vm9' });
});

test('parseBinding() answers undefined for a value this version does not know', () => {
  const malformed = [
    '',
    'StatefulSet',
    'StatefulSet/',
    'StatefulSet/web',
    'StatefulSet/web/',
    'StatefulSet//0',
    'StatefulSet/web/-1',
    'StatefulSet/web/+1',
    'StatefulSet/web/1.5',
    'StatefulSet/web/x',
    'StatefulSet/web/1e3',
    'StatefulSet/web/ 1',
    'StatefulSet/web/0x1',
    'StatefulSet/web/0/extra',
    'StatefulSet/web/1234567890',
    'statefulset/web/0',
    '/web/0',
    'VirtualMachine',
    'VirtualMachine/',
    'VirtualMachine/vm1/0',
    'virtualmachine/vm1',
    'VirtualMachineInstance/vm1',
    'Deployment/web',
    'ReplicaSet/web/0',
  ];
  for (const value of malformed) assert.equal(parseBinding(value), undefined, JSON.stringify(value));
});

test('replicaName() is the pod name bindingOf() binds back to the same binding', () => {
  const binding = { kind: 'StatefulSet', name: 'web', ordinal: 4 } as const;
  assert.equal(replicaName(binding), 'web-4');
  assert.equal(bindingOf('all', replicaName(binding), facts(statefulSet())), formatBinding(binding));
});

test('bindingKey() is the namespace of the podref and the binding; undefined for an unbound record', () => {
  const record = { containerId: 'c1', ifname: 'net1', podRef: 'db/web-0', binding: 'StatefulSet/web/0' };
  assert.equal(bindingKey(record), 'db StatefulSet/web/0');
  assert.notEqual(bindingKey({ ...record, podRef: 'other/web-0' }), bindingKey(record));
  assert.equal(bindingKey({ ...record, podRef: 'db/web-0-new', containerId: 'c2' }), bindingKey(record));
  assert.equal(bindingKey({ containerId: 'c1', ifname: 'net1', podRef: 'db/web-0' }), undefined);
  assert.equal(namespaceOfPodRef('db/web-0'), 'db');
  assert.equal(namespaceOfPodRef(''), '');
});

test('isPrebound() is a bound record of the pre-bound container id only', () => {
  const prebound = { containerId: PREBOUND_ID, ifname: '', podRef: 'db/web-0', binding: 'StatefulSet/web/0' };
  assert.equal(isPrebound(prebound), true);
  assert.equal(isPrebound({ ...prebound, containerId: 'c1' }), false);
  assert.equal(isPrebound({ containerId: PREBOUND_ID, ifname: '', podRef: 'db/web-0' }), false);
});

test('parseBinding() accepts only what formatBinding() writes (no leading zeros in an ordinal)', () => {
  for (const value of ['StatefulSet/web/01', 'StatefulSet/web/007', 'StatefulSet/web/00']) {
    const parsed = parseBinding(value);
    assert.ok(parsed === undefined || formatBinding(parsed) === value, `${value} read as ${JSON.stringify(parsed)}`);
  }
});
