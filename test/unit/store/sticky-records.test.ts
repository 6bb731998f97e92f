// Where a sticky address's binding is kept (docs/sticky.md): the pool records of both stores (pool-file.ts, also the
// IPPool's entries), the node agent's journal of warm hand-outs, and the pod facts a binding is resolved from.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { parseIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';
import { bindingOf } from '../../../src/ipam/sticky.ts';
import { decodePool, decodeRecord, encodePool, encodeRecord } from '../../../src/store/local/pool-file.ts';
import { decodePoolObject } from '../../../src/store/kubernetes/pool-object.ts';
import { podFactsOf } from '../../../src/store/kubernetes/pod-facts.ts';
import { Journal, JOURNAL_FILE, type HandOut } from '../../../src/store/kubernetes/warm/journal.ts';
import { PREBOUND_ID } from '../../../src/store/sticky-binding.ts';
import type { AllocationRecord, PoolRef } from '../../../src/store/store.ts';
import { ErrorKind, isKind } from '../../../src/errors.ts';
import { testRange } from '../../support/memory-store.ts';

const bound: AllocationRecord = {
  containerId: 'c1',
  ifname: 'net1',
  podRef: 'db/web-0',
  podUid: 'uid-1',
  node: 'node-a',
  createdAt: '2026-11-28T12:00:00.000Z',
  binding: 'StatefulSet/web/0',
};

// --- pool records --------------------------------------------------------------------------------------------------

test('encodeRecord() writes the binding next to the Whereabouts fields; decodeRecord() reads it back', () => {
  const encoded = encodeRecord(bound);
  assert.deepEqual(encoded, {
    id: 'c1',
    podref: 'db/web-0',
    ifname: 'net1',
    podUid: 'uid-1',
    node: 'node-a',
    createdAt: '2026-11-28T12:00:00.000Z',
    binding: 'StatefulSet/web/0',
  });
  assert.deepEqual(decodeRecord(encoded), bound);
  assert.deepEqual(decodeRecord(JSON.parse(JSON.stringify(encoded))), bound, 'through JSON text too');
});

test('a pre-bound record (no container, no interface) and a VM binding round-trip', () => {
  const prebound: AllocationRecord = {
    containerId: PREBOUND_ID,
    ifname: '',
    podRef: 'db/web-3',
    binding: 'StatefulSet/web/3',
  };
  assert.deepEqual(decodeRecord(encodeRecord(prebound)), prebound);
  const vm: AllocationRecord = {
    containerId: 'c',
    ifname: 'net1',
    podRef: 'vms/virt-launcher-vm1-x',
    binding: 'VirtualMachine/vm1',
  };
  assert.deepEqual(decodeRecord(encodeRecord(vm)), vm);
});

test('an unbound record encodes no binding key and decodes without one', () => {
  const unbound: AllocationRecord = { containerId: 'c1', ifname: 'net1', podRef: 'db/web-0', podUid: 'uid-1' };
  const encoded = encodeRecord(unbound);
  assert.equal('binding' in encoded, false);
  const decoded = decodeRecord(encoded);
  assert.ok(decoded !== undefined);
  assert.equal('binding' in decoded, false);
});

test('decodeRecord() refuses a binding that is not a string', () => {
  for (const binding of [5, null, true, ['StatefulSet/web/0'], { kind: 'StatefulSet' }]) {
    assert.equal(decodeRecord({ ...encodeRecord(bound), binding }), undefined, JSON.stringify(binding));
  }
});

test('decodeRecord() keeps a binding string it cannot parse (a later version may write it)', () => {
  const decoded = decodeRecord({ ...encodeRecord(bound), binding: 'ReplicaSet/web/0' });
  assert.equal(decoded?.binding, 'ReplicaSet/web/0');
});

test('a local pool file keeps bound records across encodePool() and decodePool()', () => {
  const cidr = parseCidr('10.0.0.0/24');
  const allocations = new Map<bigint, AllocationRecord>([
    [parseIP('10.0.0.7').value, bound],
    [parseIP('10.0.0.2').value, { containerId: 'c2', ifname: 'eth0', podRef: 'db/other' }],
  ]);
  const text = encodePool(cidr, allocations);
  assert.match(text, /"7":\{[^}]*"binding":"StatefulSet\/web\/0"/);
  assert.deepEqual(decodePool(text, '/pool', cidr), allocations);
});

test('a local pool file with a non-string binding is refused as corrupt', () => {
  const cidr = parseCidr('10.0.0.0/24');
  const text = JSON.stringify({
    range: '10.0.0.0/24',
    allocations: { '7': { id: 'c1', podref: 'db/web-0', ifname: 'net1', binding: 7 } },
  });
  assert.throws(
    () => decodePool(text, '/pool', cidr),
    (err: unknown) => isKind(err, ErrorKind.Io) && /corrupt: allocation 7/.test((err as Error).message),
  );
});

test('an IPPool entry with a binding is read with it; one with a non-string binding stays taken, unbound', () => {
  const pool: PoolRef = { name: '10.0.0.0-24', network: 'n', networkNamed: false, range: testRange('10.0.0.0/24') };
  const warnings: string[] = [];
  const state = decodePoolObject(
    {
      metadata: { resourceVersion: '1' },
      spec: {
        range: '10.0.0.0/24',
        allocations: { '7': encodeRecord(bound), '8': { ...encodeRecord(bound), binding: 8 } },
      },
    },
    pool,
    (m) => warnings.push(m),
  );
  assert.deepEqual(state.allocations.get(parseIP('10.0.0.7').value), bound);
  const unreadable = state.allocations.get(parseIP('10.0.0.8').value);
  assert.ok(unreadable !== undefined, 'the address stays taken');
  assert.equal(unreadable.binding, undefined);
  assert.match(warnings.join('\n'), /allocation 8 is not/);
});

// --- pod facts -----------------------------------------------------------------------------------------------------

/** A StatefulSet replica as the API server returns it (trimmed). */
const replicaPod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-2',
    namespace: 'db',
    uid: '6f1c9a1e-2b43-4c55-9d1e-0a7b9c3d2e10',
    resourceVersion: '81234',
    labels: {
      app: 'web',
      'apps.kubernetes.io/pod-index': '2',
      'controller-revision-hash': 'web-7d9c5b8f6d',
      'statefulset.kubernetes.io/pod-name': 'web-2',
    },
    annotations: {
      'k8s.v1.cni.cncf.io/networks': 'storage',
      'hereabouts.cni.cncf.io/sticky': 'true',
    },
    ownerReferences: [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-the-controller', uid: 'u-cm' },
      { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u-w', controller: false },
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        name: 'web',
        uid: 'u-sts',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  },
  spec: { nodeName: 'node-a', containers: [{ name: 'web', image: 'nginx' }] },
  status: { phase: 'Running' },
};

const launcherPod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'virt-launcher-vm1-x7k2p',
    namespace: 'vms',
    uid: 'a2b3c4d5-0000-4000-8000-000000000001',
    labels: { 'kubevirt.io': 'virt-launcher', 'vm.kubevirt.io/name': 'vm1', 'kubevirt.io/created-by': 'u-vmi' },
    ownerReferences: [
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        name: 'vm1',
        uid: 'u-vmi',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  },
};

test("podFactsOf() reads a replica's uid, its controller among several owner references, pod-index and annotation", () => {
  const facts = podFactsOf(replicaPod);
  assert.deepEqual(facts, {
    uid: '6f1c9a1e-2b43-4c55-9d1e-0a7b9c3d2e10',
    owner: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'u-sts' },
    podIndex: '2',
    sticky: 'true',
  });
  assert.equal(bindingOf('annotated', 'web-2', facts), 'StatefulSet/web/2');
});

test("podFactsOf() reads a virt-launcher pod's VirtualMachineInstance owner", () => {
  const facts = podFactsOf(launcherPod);
  assert.deepEqual(facts, {
    uid: 'a2b3c4d5-0000-4000-8000-000000000001',
    owner: { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name: 'vm1', uid: 'u-vmi' },
  });
  assert.equal(bindingOf('all', 'virt-launcher-vm1-x7k2p', facts), 'VirtualMachine/vm1');
  assert.equal(bindingOf('annotated', 'virt-launcher-vm1-x7k2p', facts), undefined);
});

test('podFactsOf() takes no owner when no reference is the controller', () => {
  const metadata = {
    ...replicaPod.metadata,
    ownerReferences: replicaPod.metadata.ownerReferences.map((ref) => ({ ...ref, controller: false })),
  };
  const facts = podFactsOf({ ...replicaPod, metadata });
  assert.ok(facts !== undefined);
  assert.equal(facts.owner, undefined);
  assert.equal(bindingOf('all', 'web-2', facts), undefined);
});

test('podFactsOf() takes the controller reference only when controller is exactly true', () => {
  for (const controller of ['true', 1]) {
    const metadata = {
      ...replicaPod.metadata,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', controller }],
    };
    assert.equal(podFactsOf({ ...replicaPod, metadata })?.owner, undefined, JSON.stringify(controller));
  }
});

test('podFactsOf() takes no owner from a controller reference missing a field or with one not a string', () => {
  const refs: unknown[] = [
    { kind: 'StatefulSet', name: 'web', controller: true },
    { apiVersion: 'apps/v1', name: 'web', controller: true },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', controller: true },
    { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 7, controller: true },
  ];
  for (const ref of refs) {
    const facts = podFactsOf({ metadata: { uid: 'u', ownerReferences: [ref] } });
    assert.deepEqual(facts, { uid: 'u' }, JSON.stringify(ref));
  }
});

test('podFactsOf() ignores owner references that are not a list, and labels or annotations not strings', () => {
  const facts = podFactsOf({
    metadata: {
      uid: 'u',
      ownerReferences: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', controller: true },
      labels: { 'apps.kubernetes.io/pod-index': 2 },
      annotations: { 'hereabouts.cni.cncf.io/sticky': true },
    },
  });
  assert.deepEqual(facts, { uid: 'u' });
});

test('podFactsOf() answers undefined for an object without a uid', () => {
  const noUid = Object.fromEntries(Object.entries(replicaPod.metadata).filter(([key]) => key !== 'uid'));
  assert.equal(podFactsOf({ ...replicaPod, metadata: noUid }), undefined);
  assert.equal(podFactsOf({ ...replicaPod, metadata: { ...replicaPod.metadata, uid: '' } }), undefined);
  assert.equal(podFactsOf({ ...replicaPod, metadata: { ...replicaPod.metadata, uid: 42 } }), undefined);
  for (const value of [undefined, null, 'pod', [], {}, { metadata: null }]) {
    assert.equal(podFactsOf(value), undefined, JSON.stringify(value));
  }
});

// --- the node agent's journal --------------------------------------------------------------------------------------

function dirFor(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-sticky-journal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const stickyHandOut: HandOut = {
  op: 'handed-out',
  pool: 'kube-system/10.1.0.0-24',
  address: '10.1.0.9',
  attachment: {
    containerId: 'c-web-0',
    ifname: 'net1',
    podRef: 'db/web-0',
    podUid: 'uid-web-0',
    binding: 'StatefulSet/web/0',
  },
  at: '2026-11-28T12:00:00.000Z',
};

test("the journal replays a hand-out's binding, and a release's", (t) => {
  const dir = dirFor(t);
  const journal = Journal.open(dir);
  const vmRelease: HandOut = {
    ...stickyHandOut,
    op: 'released',
    address: '10.1.0.8',
    attachment: {
      containerId: 'c-vm',
      ifname: 'net1',
      podRef: 'vms/virt-launcher-vm1-a',
      binding: 'VirtualMachine/vm1',
    },
  };
  journal.append([stickyHandOut, vmRelease]);
  journal.close();
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  assert.deepEqual(replayed.pending(), [stickyHandOut, vmRelease]);
});

test('the journal replays an unbound hand-out without a binding key', (t) => {
  const dir = dirFor(t);
  const attachment = { containerId: 'c-web-0', ifname: 'net1', podRef: 'db/web-0', podUid: 'uid-web-0' };
  const plain: HandOut = { ...stickyHandOut, attachment };
  const journal = Journal.open(dir);
  journal.append([plain]);
  journal.close();
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  const [entry] = replayed.pending();
  assert.deepEqual(entry, plain);
  assert.equal('binding' in entry.attachment, false);
});

test('the journal keeps the binding through compact()', (t) => {
  const dir = dirFor(t);
  const journal = Journal.open(dir);
  journal.append([stickyHandOut, { ...stickyHandOut, address: '10.1.0.7' }]);
  journal.append([{ op: 'settled', pool: stickyHandOut.pool, address: '10.1.0.7' }]);
  journal.compact();
  journal.close();
  assert.match(readFileSync(join(dir, JOURNAL_FILE), 'utf8'), /"binding":"StatefulSet\/web\/0"/);
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  assert.deepEqual(replayed.pending(), [stickyHandOut]);
});

test('the journal refuses an entry whose binding is not a string as corrupt', (t) => {
  const dir = dirFor(t);
  const json = JSON.stringify({ ...stickyHandOut, attachment: { ...stickyHandOut.attachment, binding: 0 } });
  writeFileSync(join(dir, JOURNAL_FILE), `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`);
  assert.throws(
    () => Journal.open(dir),
    (err: unknown) => isKind(err, ErrorKind.Corrupt) && (err as Error).message.includes('not a journal entry'),
  );
});
