// Sticky addresses in the pure plans (docs/sticky.md): planAssign finds a binding's record again whatever pod and
// container held it, an ordinary attachment never takes a bound record, planRelease (DEL) and planCollect (GC) keep
// bound records. The plans run on plain maps, as a store would hand them a pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { planAssign, planGiveUp, type AssignOutcome } from '../../../src/ipam/assign.ts';
import type { Attachment } from '../../../src/ipam/attachment.ts';
import { heldBy, isSameOwner } from '../../../src/ipam/attachment.ts';
import { planCollect } from '../../../src/ipam/gc.ts';
import { poolRefs } from '../../../src/ipam/pools.ts';
import { planRelease } from '../../../src/ipam/release.ts';
import { applyChange } from '../../../src/store/local/apply-change.ts';
import { PREBOUND_ID } from '../../../src/store/sticky-binding.ts';
import type { AllocationRecord, Planned, PoolRef } from '../../../src/store/store.ts';
import { testNetwork, testRange } from '../../support/memory-store.ts';

const [pool] = poolRefs(testNetwork([testRange('10.0.0.0/28')]));
if (pool === undefined) throw new Error('no pool');
const thePool: PoolRef = pool;

const ip = (text: string): bigint => parseIP(text).value;
const text = (value: bigint): string => formatIP({ family: 4, value });
const createdAt = '2026-11-28T12:00:00.000Z';
const earlier = '2026-11-01T00:00:00.000Z';

type Pool = Map<bigint, AllocationRecord>;

function poolOf(entries: ReadonlyArray<[string, AllocationRecord]>): Pool {
  return new Map(entries.map(([address, record]) => [ip(address), record]));
}

/** Runs planAssign on `current` and applies its change, as a store would. */
function assignOn(
  current: Pool,
  attachment: Attachment,
  requested?: string,
): { planned: Planned<AssignOutcome>; next: Pool } {
  const plan = planAssign(thePool, attachment, {
    createdAt,
    ...(requested === undefined ? {} : { requested: ip(requested) }),
  });
  const planned = plan(current, new Set());
  const next = planned.change === null ? new Map(current) : applyChange(thePool, current, planned.change);
  return { planned, next };
}

function assigned(planned: Planned<AssignOutcome>): Extract<AssignOutcome, { kind: 'assigned' }> {
  assert.equal(
    planned.value.kind,
    'assigned',
    JSON.stringify(planned.value, (_, v: unknown) => String(v)),
  );
  return planned.value;
}

const web0 = 'StatefulSet/web/0';
const vm1 = 'VirtualMachine/vm1';

/** A bound record written by an earlier pod of the binding. */
const boundRecord = (overrides: Partial<AllocationRecord> = {}): AllocationRecord => ({
  containerId: 'c-old',
  ifname: 'net1',
  podRef: 'db/web-0',
  podUid: 'uid-old',
  createdAt: earlier,
  binding: web0,
  ...overrides,
});

const prebound = (overrides: Partial<AllocationRecord> = {}): AllocationRecord => ({
  containerId: PREBOUND_ID,
  ifname: '',
  podRef: 'db/web-0',
  binding: web0,
  ...overrides,
});

/** The replica's new pod (same name, new UID and sandbox). */
const replica: Attachment = {
  containerId: 'c-new',
  ifname: 'net1',
  podRef: 'db/web-0',
  podUid: 'uid-new',
  binding: web0,
};

// --- (a) a binding gets its record back ----------------------------------------------------------------------------

test("planAssign() gives a re-created StatefulSet replica its binding's address, rewritten for the new container", () => {
  const old = boundRecord();
  const current = poolOf([
    ['10.0.0.1', { containerId: 'x', ifname: 'net1', podRef: 'db/x' }],
    ['10.0.0.7', old],
  ]);
  const { planned, next } = assignOn(current, replica);
  const outcome = assigned(planned);
  assert.equal(text(outcome.address), '10.0.0.7');
  assert.equal(outcome.claimed, false);
  assert.deepEqual(outcome.gaveUp, []);
  assert.deepEqual(outcome.previous, old, 'the rewritten record is kept for a rollback');
  assert.deepEqual(planned.change, {
    update: [
      {
        address: ip('10.0.0.7'),
        record: {
          containerId: 'c-new',
          ifname: 'net1',
          podRef: 'db/web-0',
          podUid: 'uid-new',
          createdAt,
          binding: web0,
        },
      },
    ],
  });
  assert.equal(next.size, 2);
});

test("planAssign() gives a KubeVirt VM's next virt-launcher pod (another pod name) the VM's address", () => {
  const old = boundRecord({
    containerId: 'c-src',
    podRef: 'vms/virt-launcher-vm1-abcde',
    podUid: 'uid-src',
    binding: vm1,
  });
  const current = poolOf([['10.0.0.4', old]]);
  const target: Attachment = {
    containerId: 'c-dst',
    ifname: 'net1',
    podRef: 'vms/virt-launcher-vm1-fghij',
    podUid: 'uid-dst',
    binding: vm1,
  };
  const { planned, next } = assignOn(current, target);
  const outcome = assigned(planned);
  assert.equal(text(outcome.address), '10.0.0.4');
  assert.equal(outcome.claimed, false);
  assert.deepEqual(next.get(ip('10.0.0.4')), {
    containerId: 'c-dst',
    ifname: 'net1',
    podRef: 'vms/virt-launcher-vm1-fghij',
    podUid: 'uid-dst',
    createdAt,
    binding: vm1,
  });
});

test('planAssign() repeated for the container that holds its bound record writes nothing', () => {
  const current = poolOf([['10.0.0.7', boundRecord({ containerId: 'c-new', podUid: 'uid-new' })]]);
  const { planned } = assignOn(current, replica);
  assert.equal(planned.change, null);
  assert.equal(text(assigned(planned).address), '10.0.0.7');
});

test("planAssign() finds a binding's record only on the same interface (unless pre-bound)", () => {
  const current = poolOf([['10.0.0.7', boundRecord({ ifname: 'net2' })]]);
  const { planned, next } = assignOn(current, replica);
  const outcome = assigned(planned);
  assert.equal(outcome.claimed, true);
  assert.notEqual(text(outcome.address), '10.0.0.7');
  assert.deepEqual(outcome.gaveUp, []);
  assert.equal(next.get(ip('10.0.0.7'))?.containerId, 'c-old', 'the other interface keeps its address');
  assert.equal(next.get(outcome.address)?.binding, web0, 'the new claim is bound too');
});

test('planAssign() claims a new bound address for a binding that holds none', () => {
  const { planned, next } = assignOn(new Map(), replica);
  const outcome = assigned(planned);
  assert.equal(outcome.claimed, true);
  assert.deepEqual(next.get(outcome.address), {
    containerId: 'c-new',
    ifname: 'net1',
    podRef: 'db/web-0',
    podUid: 'uid-new',
    createdAt,
    binding: web0,
  });
});

// --- (b) an ordinary attachment never takes a bound record ----------------------------------------------------------

test('planAssign() never gives a bound record to an ordinary attachment of the same pod: it gets another address', () => {
  const old = boundRecord();
  const current = poolOf([['10.0.0.1', old]]);
  const ordinary: Attachment = { containerId: 'c-new', ifname: 'net1', podRef: 'db/web-0', podUid: 'uid-new' };
  const { planned, next } = assignOn(current, ordinary);
  const outcome = assigned(planned);
  assert.equal(outcome.claimed, true);
  assert.equal(text(outcome.address), '10.0.0.2');
  assert.deepEqual(outcome.gaveUp, [], 'nor is the bound record given up');
  assert.deepEqual(next.get(ip('10.0.0.1')), old, 'the bound record is untouched');
  assert.equal(next.get(ip('10.0.0.2'))?.binding, undefined);
  assert.equal(isSameOwner(old, ordinary), false);
});

test('planAssign() never gives a bound record to an ordinary attachment of the same container', () => {
  const old = boundRecord({ containerId: 'c-new' });
  const current = poolOf([['10.0.0.1', old]]);
  const ordinary: Attachment = { containerId: 'c-new', ifname: 'net1', podRef: 'db/web-0' };
  const outcome = assigned(assignOn(current, ordinary).planned);
  assert.equal(text(outcome.address), '10.0.0.2');
  assert.equal(outcome.claimed, true);
});

test('planAssign() refuses an ordinary attachment that asks for a bound address of its own pod', () => {
  const current = poolOf([['10.0.0.5', boundRecord()]]);
  const ordinary: Attachment = { containerId: 'c-new', ifname: 'net1', podRef: 'db/web-0' };
  const { planned } = assignOn(current, ordinary, '10.0.0.5');
  assert.equal(planned.change, null);
  assert.equal(planned.value.kind, 'refused');
});

// --- (c) a binding is per namespace --------------------------------------------------------------------------------

test('planAssign() does not give a binding of one namespace to the same binding string in another namespace', () => {
  const old = boundRecord();
  const current = poolOf([['10.0.0.1', old]]);
  const elsewhere: Attachment = { ...replica, podRef: 'other/web-0' };
  const { planned, next } = assignOn(current, elsewhere);
  const outcome = assigned(planned);
  assert.equal(outcome.claimed, true);
  assert.equal(text(outcome.address), '10.0.0.2');
  assert.deepEqual(outcome.gaveUp, []);
  assert.deepEqual(next.get(ip('10.0.0.1')), old);
  assert.equal(next.get(ip('10.0.0.2'))?.podRef, 'other/web-0');
});

test('planAssign() does not give a pre-bound record of one namespace to another namespace', () => {
  const current = poolOf([['10.0.0.9', prebound()]]);
  const outcome = assigned(assignOn(current, { ...replica, podRef: 'other/web-0' }).planned);
  assert.equal(outcome.claimed, true);
  assert.notEqual(text(outcome.address), '10.0.0.9');
});

test("planAssign() does not give one binding's record to another binding of the same set", () => {
  const current = poolOf([['10.0.0.1', boundRecord({ podRef: 'db/web-1', binding: 'StatefulSet/web/1' })]]);
  const outcome = assigned(assignOn(current, replica).planned);
  assert.equal(text(outcome.address), '10.0.0.2');
  assert.equal(outcome.claimed, true);
});

// --- (d) pre-bound records ----------------------------------------------------------------------------------------

for (const ifname of ['net1', 'eth0', 'net7']) {
  test(`planAssign() hands a pre-bound record to its binding on ${ifname}, which the record then names`, () => {
    const current = poolOf([['10.0.0.9', prebound()]]);
    const { planned, next } = assignOn(current, { ...replica, ifname });
    const outcome = assigned(planned);
    assert.equal(text(outcome.address), '10.0.0.9');
    assert.equal(outcome.claimed, false);
    assert.deepEqual(next.get(ip('10.0.0.9')), {
      containerId: 'c-new',
      ifname,
      podRef: 'db/web-0',
      podUid: 'uid-new',
      createdAt,
      binding: web0,
    });
  });
}

test('planAssign() does not hand a pre-bound record to an ordinary attachment of the replica', () => {
  const current = poolOf([['10.0.0.9', prebound()]]);
  const ordinary: Attachment = { containerId: 'c-new', ifname: 'net1', podRef: 'db/web-0', podUid: 'uid-new' };
  const outcome = assigned(assignOn(current, ordinary).planned);
  assert.equal(outcome.claimed, true);
  assert.equal(text(outcome.address), '10.0.0.1');
});

test('planAssign() prefers a pre-bound record over another bound record of the binding, which it gives up', () => {
  const current = poolOf([
    ['10.0.0.3', boundRecord()],
    ['10.0.0.9', prebound()],
  ]);
  const { planned, next } = assignOn(current, replica);
  const outcome = assigned(planned);
  assert.equal(text(outcome.address), '10.0.0.9', 'the pre-bound one, though it is the higher address');
  assert.equal(outcome.claimed, false);
  assert.deepEqual(outcome.gaveUp.map(text), ['10.0.0.3']);
  assert.equal(next.get(ip('10.0.0.9'))?.containerId, 'c-new');
  // The address given up is released once every range granted (assign() then runs planGiveUp).
  const giveUp = planGiveUp(replica, outcome.address, outcome.gaveUp)(next, new Set());
  assert.deepEqual(giveUp.change, { release: [ip('10.0.0.3')] });
});

test('heldBy() orders a binding: pre-bound first, then its other bound records, then its pod unbound ones', () => {
  const current = poolOf([
    ['10.0.0.1', { containerId: 'c-earlier', ifname: 'net1', podRef: 'db/web-0' }],
    ['10.0.0.2', boundRecord({ containerId: 'c-a' })],
    ['10.0.0.5', prebound()],
    ['10.0.0.4', boundRecord({ containerId: 'c-b' })],
    ['10.0.0.6', boundRecord({ binding: 'StatefulSet/web/1', podRef: 'db/web-1' })],
  ]);
  assert.deepEqual(heldBy(current, replica).map(text), ['10.0.0.5', '10.0.0.2', '10.0.0.4', '10.0.0.1']);
});

test('planAssign() of two bound records of one binding keeps the lower and gives up the other', () => {
  const current = poolOf([
    ['10.0.0.8', boundRecord({ containerId: 'c-b' })],
    ['10.0.0.3', boundRecord({ containerId: 'c-a' })],
  ]);
  const outcome = assigned(assignOn(current, replica).planned);
  assert.equal(text(outcome.address), '10.0.0.3');
  assert.deepEqual(outcome.gaveUp.map(text), ['10.0.0.8']);
});

// --- (e) adopting the pod's records from before the network was sticky ---------------------------------------------

test("planAssign() lets a sticky attachment adopt its pod's unbound record and binds it", () => {
  const before: AllocationRecord = {
    containerId: 'c-old',
    ifname: 'net1',
    podRef: 'db/web-0',
    podUid: 'uid-old',
    createdAt: earlier,
  };
  const current = poolOf([['10.0.0.6', before]]);
  const { planned, next } = assignOn(current, replica);
  const outcome = assigned(planned);
  assert.equal(text(outcome.address), '10.0.0.6');
  assert.equal(outcome.claimed, false);
  assert.deepEqual(outcome.previous, before);
  assert.deepEqual(next.get(ip('10.0.0.6')), {
    containerId: 'c-new',
    ifname: 'net1',
    podRef: 'db/web-0',
    podUid: 'uid-new',
    createdAt,
    binding: web0,
  });
});

test('planAssign() binds the record of the very container that holds it when the network turns sticky', () => {
  const before: AllocationRecord = { containerId: 'c-new', ifname: 'net1', podRef: 'db/web-0', podUid: 'uid-new' };
  const current = poolOf([['10.0.0.6', before]]);
  const { planned, next } = assignOn(current, replica);
  assert.notEqual(planned.change, null, 'the binding alone is a change to write');
  assert.equal(next.get(ip('10.0.0.6'))?.binding, web0);
  assert.equal(next.get(ip('10.0.0.6'))?.containerId, 'c-new');
});

test("planAssign() does not let a sticky attachment adopt another pod's unbound record", () => {
  const other: AllocationRecord = { containerId: 'c-x', ifname: 'net1', podRef: 'db/web-1' };
  const current = poolOf([['10.0.0.1', other]]);
  const { planned, next } = assignOn(current, replica);
  assert.equal(text(assigned(planned).address), '10.0.0.2');
  assert.deepEqual(next.get(ip('10.0.0.1')), other);
});

test('planAssign() prefers the bound record over the pod unbound one, which it gives up', () => {
  const current = poolOf([
    ['10.0.0.1', { containerId: 'c-earlier', ifname: 'net1', podRef: 'db/web-0' }],
    ['10.0.0.9', boundRecord()],
  ]);
  const outcome = assigned(assignOn(current, replica).planned);
  assert.equal(text(outcome.address), '10.0.0.9');
  assert.deepEqual(outcome.gaveUp.map(text), ['10.0.0.1']);
});

// --- (f) DEL keeps bound records -----------------------------------------------------------------------------------

test('planRelease() for the container of a bound record releases nothing', () => {
  const current = poolOf([['10.0.0.7', boundRecord({ containerId: 'c1' })]]);
  const planned = planRelease({ containerId: 'c1', ifname: 'net1' })(current, new Set());
  assert.equal(planned.change, null);
  assert.deepEqual(planned.value, []);
});

test('planRelease() releases the unbound record of the container and keeps its bound one', () => {
  const current = poolOf([
    ['10.0.0.2', boundRecord({ containerId: 'c1' })],
    ['10.0.0.3', { containerId: 'c1', ifname: 'net1', podRef: 'db/web-0' }],
  ]);
  const planned = planRelease({ containerId: 'c1', ifname: 'net1' })(current, new Set());
  assert.deepEqual(planned.value.map(text), ['10.0.0.3']);
  assert.deepEqual(planned.change, { release: [ip('10.0.0.3')] });
});

test('planRelease() does not take a bound record for a legacy record without an interface', () => {
  const current = poolOf([['10.0.0.2', boundRecord({ containerId: 'c1', ifname: '' })]]);
  const planned = planRelease({ containerId: 'c1', ifname: 'net1' })(current, new Set());
  assert.deepEqual(planned.value, []);
  // ...while an unbound record of the container without an interface is still released (Whereabouts before 0.7).
  const legacy = poolOf([['10.0.0.2', { containerId: 'c1', ifname: '', podRef: 'db/web-0' }]]);
  assert.deepEqual(planRelease({ containerId: 'c1', ifname: 'net1' })(legacy, new Set()).value.map(text), ['10.0.0.2']);
});

test('planRelease() naming the pre-bound container id releases no pre-bound record', () => {
  const current = poolOf([['10.0.0.9', prebound()]]);
  for (const ifname of ['', 'net1']) {
    const planned = planRelease({ containerId: PREBOUND_ID, ifname })(current, new Set());
    assert.equal(planned.change, null, ifname);
  }
});

// --- (g) GC keeps bound records ------------------------------------------------------------------------------------

test('planCollect() never collects a bound record, while it collects the unbound ones not in the valid list', () => {
  const noGrace = { nowMs: Date.parse(createdAt), graceMs: 0 };
  const keep = { attachments: new Set<string>(), containers: new Set<string>() };
  const current = poolOf([
    ['10.0.0.1', boundRecord({ node: 'node-a' })],
    ['10.0.0.2', { containerId: 'c2', ifname: 'net1', podRef: 'db/p2', node: 'node-a', createdAt: earlier }],
    ['10.0.0.3', boundRecord({ node: 'node-a', binding: vm1, podRef: 'db/virt-launcher-vm1-abcde' })],
    ['10.0.0.4', prebound({ node: 'node-a' })],
  ]);
  const planned = planCollect(keep, 'node-a', noGrace)(current, new Set());
  assert.deepEqual(
    planned.value.map(([address]) => text(address)),
    ['10.0.0.2'],
  );
  assert.deepEqual(planned.change, { release: [ip('10.0.0.2')] });
});

test('planCollect() on a store without nodes (local) never collects a bound record either', () => {
  const noGrace = { nowMs: Date.parse(createdAt), graceMs: 0 };
  const keep = { attachments: new Set<string>(), containers: new Set<string>() };
  const current = poolOf([['10.0.0.1', boundRecord()]]);
  const planned = planCollect(keep, undefined, noGrace)(current, new Set());
  assert.equal(planned.change, null);
  assert.deepEqual(planned.value, []);
});

// --- (h) requested addresses ---------------------------------------------------------------------------------------

test('planAssign() refuses a requested address held by another binding, naming its holder', () => {
  const current = poolOf([
    ['10.0.0.5', boundRecord({ containerId: 'c-w1', podRef: 'db/web-1', binding: 'StatefulSet/web/1' })],
  ]);
  const { planned } = assignOn(current, replica, '10.0.0.5');
  assert.equal(planned.change, null);
  assert.equal(planned.value.kind, 'refused');
  assert.equal(text(planned.value.address), '10.0.0.5');
  assert.match(planned.value.reason, /taken by db\/web-1 c-w1/);
});

test('planAssign() refuses a requested address held by the same binding in another namespace', () => {
  const current = poolOf([['10.0.0.5', boundRecord({ podRef: 'other/web-0' })]]);
  assert.equal(assignOn(current, replica, '10.0.0.5').planned.value.kind, 'refused');
});

test("planAssign() grants a requested address that is the binding's own record, without a claim", () => {
  const current = poolOf([['10.0.0.5', boundRecord()]]);
  const outcome = assigned(assignOn(current, replica, '10.0.0.5').planned);
  assert.equal(text(outcome.address), '10.0.0.5');
  assert.equal(outcome.claimed, false);
  assert.deepEqual(outcome.gaveUp, []);
});

test('planAssign() moves a binding to a free requested address: the new claim is bound, the old record given up', () => {
  const current = poolOf([['10.0.0.5', boundRecord()]]);
  const { planned, next } = assignOn(current, replica, '10.0.0.10');
  const outcome = assigned(planned);
  assert.equal(text(outcome.address), '10.0.0.10');
  assert.equal(outcome.claimed, true);
  assert.deepEqual(outcome.gaveUp.map(text), ['10.0.0.5']);
  assert.equal(next.get(ip('10.0.0.10'))?.binding, web0);
});

// --- found by these tests, fixed in src/ ---------------------------------------------------------------------------

test("planAssign() does not stamp the previous pod's UID on a record it rewrites for another pod that gave no UID", () => {
  const current = poolOf([
    ['10.0.0.4', boundRecord({ podRef: 'vms/virt-launcher-vm1-abcde', podUid: 'uid-src', binding: vm1 })],
  ]);
  const target: Attachment = {
    containerId: 'c-dst',
    ifname: 'net1',
    podRef: 'vms/virt-launcher-vm1-fghij',
    binding: vm1,
  };
  const { next } = assignOn(current, target);
  const record = next.get(ip('10.0.0.4'));
  assert.ok(record !== undefined);
  assert.equal(record.podRef, 'vms/virt-launcher-vm1-fghij');
  assert.equal(record.podUid, undefined, 'uid-src is the UID of another pod');
});
