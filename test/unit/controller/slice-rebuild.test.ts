// The slice IPPools are the truth about which space is in use (DESIGN §9): the NodeSlicePool is decided with the
// network's slice pools that hold addresses (or, empty, are not retired) beside it, so a NodeSlicePool that was
// deleted and re-created, or that lists less than the pools show, gives each live node back the slice its pool is
// in, and never hands a range such a pool covers to another node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideNodeSlicePool, type SlicePlan } from '../../../src/controller/slices/decide.ts';
import type { SliceSpec } from '../../../src/controller/slices/spec.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const spec = (range: string, sliceSize: number): SliceSpec => ({
  network: 'n',
  networkNamed: true,
  range: parseCidr(range),
  sliceSize,
  source: 'ns/nad',
  createdMs: 0,
});

interface Held {
  nodeName: string;
  sliceRange: string;
  holdsAddresses: boolean;
}

const plan = (s: SliceSpec, liveNodes: string[], held: Held[]): SlicePlan => ({
  spec: s,
  namespace: 'ns',
  liveNodes,
  canFree: () => false,
  conditionsPersist: false,
  drainingPersists: true,
  held,
  offenders: [],
});

type Status = {
  allocations: Array<{ nodeName: string; sliceRange: string }>;
  draining?: Array<{ nodeName: string; sliceRange: string; reason: string }>;
};
const statusOf = (o: Record<string, unknown> | undefined): Status => (o?.['status'] ?? {}) as Status;
const decide = (p: SlicePlan, current: Record<string, unknown> | undefined) =>
  decideNodeSlicePool(p, { resliced: false, sentConditions: false })(current);
const object = (allocations: unknown[], draining?: unknown[]) => ({
  metadata: { name: 'n', namespace: 'ns', labels: { 'app.kubernetes.io/managed-by': 'hereabouts-controller' } },
  spec: { range: '10.0.0.0/24', sliceSize: '/28' },
  status: { allocations, ...(draining === undefined ? {} : { draining }) },
});
const holding = (nodeName: string, sliceRange: string): Held => ({ nodeName, sliceRange, holdsAddresses: true });
const emptyPool = (nodeName: string, sliceRange: string): Held => ({ nodeName, sliceRange, holdsAddresses: false });

test('a NodeSlicePool decided from nothing gives each live node the slice its pool is in, not the next in order', () => {
  // b joined first (slice 0), a second (slice 1); the NodeSlicePool was deleted.
  const held = [holding('b', '10.0.0.0/28'), emptyPool('a', '10.0.0.16/28')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'b', 'c'], held), undefined));
  assert.deepEqual(
    [...after.allocations].sort((x, y) => x.nodeName.localeCompare(y.nodeName)),
    [
      { nodeName: 'a', sliceRange: '10.0.0.16/28' },
      { nodeName: 'b', sliceRange: '10.0.0.0/28' },
      { nodeName: 'c', sliceRange: '10.0.0.32/28' },
    ],
  );
  assert.deepEqual(after.draining ?? [], []);
});

test('a slice whose pool holds addresses of a node that is gone drains, still named to it, and no node gets it', () => {
  const held = [holding('gone', '10.0.0.0/28')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['new'], held), undefined));
  assert.deepEqual(after.allocations, [
    { nodeName: 'gone', sliceRange: '10.0.0.0/28' },
    { nodeName: 'new', sliceRange: '10.0.0.16/28' },
  ]);
  assert.deepEqual(after.draining, [{ nodeName: 'gone', sliceRange: '10.0.0.0/28', reason: 'NodeLeft' }]);
});

test('a NodeSlicePool that lists another node on a slice whose pool holds addresses: both drain, both get new slices', () => {
  // What the old controller did after a re-creation: a was given b's slice.
  const current = object([
    { nodeName: 'a', sliceRange: '10.0.0.0/28' },
    { nodeName: 'b', sliceRange: '10.0.0.16/28' },
  ]);
  const held = [holding('b', '10.0.0.0/28'), holding('a', '10.0.0.0/28')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'b'], held), current));
  const allocated = after.allocations.filter((e) => e.nodeName !== '');
  assert.ok(
    allocated.every((e) => e.sliceRange !== '10.0.0.0/28'),
    `no node allocates from 10.0.0.0/28 any more: ${JSON.stringify(allocated)}`,
  );
  assert.deepEqual((after.draining ?? []).map((d) => `${d.nodeName} ${d.sliceRange}`).sort(), [
    'a 10.0.0.0/28',
    'b 10.0.0.0/28',
  ]);
  assert.equal(allocated.find((e) => e.nodeName === 'b')?.sliceRange, '10.0.0.16/28', 'b keeps its listed slice');
  assert.ok(
    allocated.some((e) => e.nodeName === 'a'),
    'a gets another slice at once',
  );
});

test('an empty pool does not take a listed slice from its node; it drains on its own', () => {
  const current = object([{ nodeName: 'a', sliceRange: '10.0.0.0/28' }]);
  const held = [emptyPool('b', '10.0.0.0/28')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'b'], held), current));
  assert.deepEqual(after.allocations[0], { nodeName: 'a', sliceRange: '10.0.0.0/28' });
  assert.deepEqual(after.draining, [{ nodeName: 'b', sliceRange: '10.0.0.0/28', reason: 'Unlisted' }]);
  assert.notEqual(after.allocations.find((e) => e.nodeName === 'b')?.sliceRange, '10.0.0.0/28');
});

test("a node's pool outside the slice listed for it drains and blocks its space", () => {
  const current = object([{ nodeName: 'a', sliceRange: '10.0.0.0/28' }]);
  const held = [holding('a', '10.0.0.16/28')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'c'], held), current));
  assert.deepEqual(after.draining, [{ nodeName: 'a', sliceRange: '10.0.0.16/28', reason: 'Unlisted' }]);
  assert.deepEqual(after.allocations, [
    { nodeName: 'a', sliceRange: '10.0.0.0/28' },
    { nodeName: 'c', sliceRange: '10.0.0.32/28' },
  ]);
});

test('a pool of an earlier slice size drains (Resliced) and no slice overlapping it is handed out', () => {
  const held = [holding('a', '10.0.0.0/26')];
  const after = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'b'], held), undefined));
  assert.deepEqual(after.draining, [{ nodeName: 'a', sliceRange: '10.0.0.0/26', reason: 'Resliced' }]);
  assert.deepEqual(after.allocations, [
    { nodeName: 'a', sliceRange: '10.0.0.64/28' },
    { nodeName: 'b', sliceRange: '10.0.0.80/28' },
  ]);
});

test('a listed slice and a listed draining slice are left as they are', () => {
  const current = object(
    [{ nodeName: 'a', sliceRange: '10.0.0.0/28' }],
    [{ nodeName: 'gone', sliceRange: '10.0.0.16/28', reason: 'NodeLeft' }],
  );
  const held = [holding('a', '10.0.0.0/28'), holding('gone', '10.0.0.16/28')];
  assert.equal(decide(plan(spec('10.0.0.0/24', 28), ['a'], held), current), undefined, 'nothing to write');
});

test('a pool the NodeSlicePool does not list blocks its space even when the CRD drops status.draining, and is not rewritten', () => {
  const current = object([{ nodeName: 'a', sliceRange: '10.0.0.16/28' }]);
  const held = [holding('a', '10.0.0.0/28')];
  const p = { ...plan(spec('10.0.0.0/24', 28), ['a', 'b'], held), drainingPersists: false };
  const after = statusOf(decide(p, current));
  assert.deepEqual(after.allocations, [
    { nodeName: 'a', sliceRange: '10.0.0.16/28' },
    { nodeName: 'b', sliceRange: '10.0.0.32/28' },
  ]);
  assert.equal(decide(p, object(after.allocations)), undefined, 'a status.draining the CRD drops is not written again');
});

test('a pool in use that the NodeSlicePool does not list leaves the draining list once confirmed empty, and its space is handed out', () => {
  const current = object([
    { nodeName: 'a', sliceRange: '10.0.0.16/28' },
    { nodeName: 'b', sliceRange: '10.0.0.32/28' },
  ]);
  const held = [emptyPool('b', '10.0.0.0/28')]; // b's slice of a NodeSlicePool that was lost
  const waiting = statusOf(decide(plan(spec('10.0.0.0/24', 28), ['a', 'b', 'c'], held), current));
  assert.deepEqual(waiting.draining, [{ nodeName: 'b', sliceRange: '10.0.0.0/28', reason: 'Unlisted' }]);
  assert.equal(waiting.allocations.find((e) => e.nodeName === 'c')?.sliceRange, '10.0.0.48/28');
  const confirmed = { ...plan(spec('10.0.0.0/24', 28), ['a', 'b', 'c'], held), canFree: () => true };
  const after = statusOf(decide(confirmed, current));
  assert.deepEqual(after.draining, []);
  assert.deepEqual(after.allocations, [
    { nodeName: 'a', sliceRange: '10.0.0.16/28' },
    { nodeName: 'b', sliceRange: '10.0.0.32/28' },
    { nodeName: 'c', sliceRange: '10.0.0.0/28' },
  ]);
});
