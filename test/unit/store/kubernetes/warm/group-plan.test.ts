// The node agent's grouped write as a pure plan (src/store/kubernetes/warm/group-plan.ts): renames, releases,
// give-backs and claims on a /28, each judged against the pool it is planned on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WARM_POLICY } from '../../../../../src/agent/warm-setting.ts';
import { groupPlan, type GroupInput, type PendingWrite } from '../../../../../src/store/kubernetes/warm/group-plan.ts';
import { applyChange } from '../../../../../src/store/local/apply-change.ts';
import { claimsOf, type AllocationRecord, type PoolRef } from '../../../../../src/store/store.ts';
import { warmHolder, warmRecord } from '../../../../../src/store/warm-record.ts';
import { rangeOf } from '../../../allocator/range-fixture.ts';

const CIDR = '10.9.0.0/28'; // .1 - .14 allocatable
const POOL = '10.9.0.0-28';
const ref: PoolRef = { name: POOL, network: 'net', networkNamed: false, range: rangeOf(CIDR) };
const at = (n: number): bigint => 0x0a090000n + BigInt(n);
const AT = '2026-11-28T00:00:00Z';
const warm = (node = 'node-a', settings = 's'): AllocationRecord => warmRecord(node, POOL, settings, AT);
const pod = (name: string): AllocationRecord => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `ns/${name}` });

function input(over: Partial<GroupInput>): GroupInput {
  return {
    node: 'node-a',
    pool: POOL,
    settings: 's',
    range: ref.range,
    pending: new Map(),
    withdrawn: new Set(),
    adopt: false,
    claim: 0,
    policy: WARM_POLICY,
    createdAt: AT,
    ...over,
  };
}

test('a hand-out is renamed to its pod, a DEL released, and the set refilled by several claims in one write', () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(1), warm()],
    [at(2), pod('b')],
    [at(3), warm()],
  ]);
  const pending = new Map<bigint, PendingWrite>([
    [at(1), { kind: 'name', record: pod('a') }],
    [at(2), { kind: 'warm', attachment: pod('b') }],
  ]);
  const planned = groupPlan(input({ pending, claim: 3 }))(current, new Set());
  const change = planned.change;
  assert.ok(change !== null);
  assert.deepEqual(change.update, [{ address: at(1), record: pod('a') }]);
  assert.deepEqual(change.release, [at(2)]);
  // .2 is released by this very write and is not claimed again in it; .3 is warm already.
  assert.deepEqual(
    claimsOf(change).map((c) => c.address),
    [at(4), at(5), at(6)],
  );
  assert.ok(claimsOf(change).every((c) => warmHolder(c.record) === 'node-a'));
  assert.deepEqual(planned.value.claimed, [at(4), at(5), at(6)]);
  assert.deepEqual([...planned.value.warm].sort(), [at(3), at(4), at(5), at(6)]);
  assert.deepEqual(planned.value.settled, [at(1), at(2)]);
  // The change applies to the pool it was planned on (no claim of a held address, no update of a free one).
  const next = applyChange(ref, current, change);
  assert.equal(next.get(at(1))?.podRef, 'ns/a');
  assert.equal(next.has(at(2)), false);
  assert.equal(planned.value.free, 14 - next.size);
});

test('claims stop at the free addresses, skip refused ones, and prefer what the commit reserved already', () => {
  const current = new Map<bigint, AllocationRecord>();
  for (let n = 1; n <= 14; n++) if (n !== 7 && n !== 9 && n !== 12) current.set(at(n), pod(`p${n}`));
  const planned = groupPlan(input({ claim: 8 }))(current, new Set([at(9)]), { reserved: new Set([at(12)]) });
  assert.deepEqual(planned.value.claimed, [at(12), at(7)]);
  assert.equal(planned.value.free, 1); // .9: free in this pool, reserved through an overlapping range
});

test('nothing to do is no change; a pool a Whereabouts plugin writes gets no claim and the warm records the agent withdrew back', () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(1), warm()],
    [at(2), warm('node-b')],
  ]);
  assert.equal(groupPlan(input({}))(current, new Set()).change, null);
  const hints = { reserved: new Set<bigint>(), highestFirst: true };
  assert.equal(groupPlan(input({ claim: 2 }))(current, new Set(), hints).change, null, 'nothing withdrawn');
  const withdrawn = new Set([at(1), at(2)]);
  const mixed = groupPlan(input({ claim: 2, withdrawn }))(current, new Set(), hints);
  assert.deepEqual(mixed.change, { release: [at(1)] }); // node-b's record is node-b's
  assert.equal(mixed.value.mixed, true);
  assert.deepEqual(mixed.value.claimed, []);
});

test("a hand-out whose warm record is gone or another's is lost, not renamed; one already renamed has landed", () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(2), pod('intruder')],
    [at(3), pod('c')],
  ]);
  const pending = new Map<bigint, PendingWrite>([
    [at(1), { kind: 'name', record: pod('a') }],
    [at(2), { kind: 'name', record: pod('b') }],
    [at(3), { kind: 'name', record: pod('c') }],
  ]);
  const planned = groupPlan(input({ pending }))(current, new Set());
  assert.equal(planned.change, null);
  assert.deepEqual(
    planned.value.lost.map((l) => [l.address, l.holder?.podRef]),
    [
      [at(1), undefined],
      [at(2), 'ns/intruder'],
    ],
  );
  assert.deepEqual(
    planned.value.landed.map((l) => [l.address, l.previous.containerId]),
    [[at(3), warm().containerId]],
  );
});

test('give-back returns only warm records of this node that no call is using', () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(1), warm()],
    [at(2), warm()],
    [at(3), pod('x')],
  ]);
  const pending = new Map<bigint, PendingWrite>([[at(2), { kind: 'name', record: pod('y') }]]);
  const planned = groupPlan(input({ pending, withdrawn: new Set([at(1), at(2), at(3)]) }))(current, new Set());
  assert.deepEqual(planned.change?.release, [at(1)]);
  assert.deepEqual(planned.change.update, [{ address: at(2), record: pod('y') }]);
  assert.deepEqual([...planned.value.warm], []);
});

test("a hand-out whose renamed record a re-ADD of its pod took over has landed, its reservation to follow the new container; another pod's is lost", () => {
  const reAdd: AllocationRecord = { ...pod('a'), containerId: 'c-a-2' };
  const current = new Map<bigint, AllocationRecord>([
    [at(1), reAdd],
    [at(2), { ...pod('intruder'), ifname: pod('b').ifname }],
    [at(3), { ...pod('c'), containerId: 'c-c-2', ifname: 'eth1' }],
  ]);
  const pending = new Map<bigint, PendingWrite>([
    [at(1), { kind: 'name', record: pod('a') }],
    [at(2), { kind: 'name', record: pod('b') }],
    [at(3), { kind: 'name', record: pod('c') }],
  ]);
  const planned = groupPlan(input({ pending }))(current, new Set());
  assert.equal(planned.change, null);
  assert.deepEqual(
    planned.value.landed.map((l) => [l.address, l.record.containerId, l.previous.containerId]),
    [[at(1), 'c-a-2', warm().containerId]],
  );
  assert.deepEqual(
    planned.value.lost.map((l) => l.address),
    [at(2), at(3)], // another pod; the same pod's other interface
  );
  assert.deepEqual(planned.value.settled, [at(1), at(2), at(3)]);
});

test("this node's warm records of other settings (another NAD's, an older agent's) go back unless a rename is pending on them", () => {
  const legacy: AllocationRecord = { ...warm(), containerId: `hereabouts-warm:node-a/${POOL}` };
  const current = new Map<bigint, AllocationRecord>([
    [at(1), warm('node-a', 'other')],
    [at(2), legacy],
    [at(3), warm('node-a', 'other')],
    [at(4), warm()],
    [at(5), warm('node-b', 'other')],
  ]);
  const pending = new Map<bigint, PendingWrite>([[at(3), { kind: 'name', record: pod('y') }]]);
  const planned = groupPlan(input({ pending }))(current, new Set());
  assert.deepEqual(planned.change?.release, [at(1), at(2)]);
  assert.deepEqual(planned.change.update, [{ address: at(3), record: pod('y') }], 'a replayed hand-out is renamed');
  assert.deepEqual([...planned.value.warm], [at(4)], 'only its own settings make the set');
});

test('a set derived anew is taken by a write: its records are stamped again, so no older write of the pool lands after it', () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(1), { ...warm(), createdAt: '2020-01-01T00:00:00Z' }],
    [at(2), pod('x')],
  ]);
  const planned = groupPlan(input({ adopt: true }))(current, new Set());
  assert.deepEqual(planned.change?.update, [{ address: at(1), record: warm() }]);
  assert.deepEqual([...planned.value.warm], [at(1)]);
  assert.equal(
    groupPlan(input({ adopt: false }))(current, new Set()).change,
    null,
    'adopted already: nothing to write',
  );
});

test('with a Whereabouts plugin writing the pool, only what the agent withdrew goes back, and nothing is claimed', () => {
  const current = new Map<bigint, AllocationRecord>([
    [at(1), warm()],
    [at(2), warm()], // handed out after the agent withdrew its set: its rename is not in this write
  ]);
  const planned = groupPlan(input({ withdrawn: new Set([at(1)]), claim: 3 }))(current, new Set(), {
    reserved: new Set(),
    highestFirst: true,
  });
  assert.deepEqual(planned.change?.release, [at(1)]);
  assert.equal(planned.change.claim, undefined);
  assert.equal(planned.value.mixed, true);
});
