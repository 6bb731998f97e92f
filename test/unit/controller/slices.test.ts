import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignSlices } from '../../../src/controller/slices/assign.ts';
import { parseControllerFlags } from '../../../src/cli/controller.ts';
import { decideNodeSlicePool } from '../../../src/controller/slices/decide.ts';
import { groupByNetwork, sliceSpecOf, type SliceSpec } from '../../../src/controller/slices/spec.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const nad = (name: string, ipam: Record<string, unknown>) => ({
  metadata: { namespace: 'default', name },
  spec: { config: JSON.stringify({ cniVersion: '1.0.0', name: `${name}-conf`, type: 'macvlan', ipam }) },
});

test('sliceSpecOf() reads network_name, range and node_slice_size of a NAD', () => {
  const spec = sliceSpecOf(
    nad('a', { type: 'whereabouts', range: '10.0.0.0/16', node_slice_size: '/24', network_name: 'blue' }),
  );
  assert.equal(spec?.network, 'blue');
  assert.equal(spec.networkNamed, true);
  assert.equal(spec.sliceSize, 24);
});

test('sliceSpecOf() ignores NADs without node slices and names the bad ones', () => {
  assert.equal(sliceSpecOf(nad('plain', { type: 'hereabouts', range: '10.0.0.0/16' })), undefined);
  assert.throws(
    () => sliceSpecOf(nad('bad', { type: 'hereabouts', range: '10.0.0.0/24', node_slice_size: '/16' })),
    /default\/bad: ipam\.node_slice_size \/16 does not fit range \/24/,
  );
});

const nadAt = (name: string, namespace: string, created: string, ipam: Record<string, unknown>) => ({
  metadata: { namespace, name, creationTimestamp: created },
  spec: { config: JSON.stringify({ cniVersion: '1.0.0', name: `${name}-conf`, type: 'macvlan', ipam }) },
});

test('groupByNetwork() follows the oldest NAD of a network and names the ones that disagree as offenders', () => {
  const ipam = (size: number) => ({
    type: 'hereabouts',
    range: '10.0.0.0/16',
    node_slice_size: size,
    network_name: 'n',
  });
  const legit = sliceSpecOf(nadAt('a', 'infra', '2024-01-01T00:00:00Z', ipam(24)))!;
  const same = sliceSpecOf(nadAt('c', 'team-c', '2024-03-01T00:00:00Z', ipam(24)))!;
  const tenant = sliceSpecOf(nadAt('b', 'team-b', '2024-02-01T00:00:00Z', ipam(26)))!;
  const { agreed, conflicts } = groupByNetwork([tenant, same, legit]);
  assert.equal(agreed.get('n')?.spec.source, 'infra/a');
  assert.equal(agreed.get('n')?.spec.sliceSize, 24);
  assert.deepEqual(agreed.get('n')?.sources, ['infra/a', 'team-c/c']);
  assert.deepEqual(
    agreed.get('n')?.offenders.map((o) => o.source),
    ['team-b/b'],
  );
  assert.match(
    agreed.get('n')?.offenders[0]?.message ?? '',
    /NetworkAttachmentDefinition team-b\/b slices 10\.0\.0\.0\/16 by \/26 but network n follows infra\/a, its oldest NetworkAttachmentDefinition: 10\.0\.0\.0\/16 by \/24; team-b\/b is ignored/,
  );
  assert.equal(conflicts.length, 1);
});

test('groupByNetwork() breaks a tie of creation times by namespace/name', () => {
  const ipam = (size: number) => ({
    type: 'hereabouts',
    range: '10.0.0.0/16',
    node_slice_size: size,
    network_name: 'n',
  });
  const b = sliceSpecOf(nadAt('b', 'ns', '2024-01-01T00:00:00Z', ipam(24)))!;
  const a = sliceSpecOf(nadAt('a', 'ns', '2024-01-01T00:00:00Z', ipam(26)))!;
  const { agreed } = groupByNetwork([b, a]);
  assert.equal(agreed.get('n')?.spec.source, 'ns/a');
  assert.deepEqual(
    agreed.get('n')?.offenders.map((o) => o.source),
    ['ns/b'],
  );
});

test('assignSlices() gives each new node the lowest never-used slice', () => {
  const d = assignSlices(parseCidr('10.0.0.0/16'), 24, [], ['n2', 'n1'], []);
  assert.deepEqual(d.entries, [
    { nodeName: 'n1', sliceRange: '10.0.0.0/24' },
    { nodeName: 'n2', sliceRange: '10.0.1.0/24' },
  ]);
});

test('assignSlices() reuses freed slices last and never hands out a slice overlapping blocked space', () => {
  const current = [{ nodeName: '', sliceRange: '10.0.0.0/25' }];
  const reused = assignSlices(parseCidr('10.0.0.0/24'), 25, current, ['new'], []);
  assert.deepEqual(reused.entries, [
    { nodeName: '', sliceRange: '10.0.0.0/25' },
    { nodeName: 'new', sliceRange: '10.0.0.128/25' },
  ]);
  const blocked = assignSlices(parseCidr('10.0.0.0/24'), 25, [], ['x', 'y'], [parseCidr('10.0.0.16/28')]);
  assert.deepEqual(blocked.entries, [{ nodeName: 'x', sliceRange: '10.0.0.128/25' }]);
  assert.deepEqual(blocked.starved, ['y']);
});

test('assignSlices() reports nodes left without a slice', () => {
  const d = assignSlices(parseCidr('10.0.0.0/24'), 25, [], ['a', 'b', 'c'], []);
  assert.deepEqual(d.starved, ['c']);
});

test('assignSlices() slices an IPv6 /48 into /64s without listing them all', () => {
  const d = assignSlices(parseCidr('fd00:1::/48'), 64, [], ['n1'], []);
  assert.deepEqual(d.entries, [{ nodeName: 'n1', sliceRange: 'fd00:1::/64' }]);
});

// The lifecycle of a slice (assigned -> draining -> free), decided on the NodeSlicePool object.
const spec = (range: string, sliceSize: number): SliceSpec => ({
  network: 'n',
  networkNamed: true,
  range: parseCidr(range),
  sliceSize,
  source: 'ns/nad',
});
const plan = (
  s: SliceSpec,
  liveNodes: string[],
  confirmed: (e: { nodeName: string; sliceRange: string }) => boolean,
) => ({
  spec: s,
  namespace: 'ns',
  liveNodes,
  held: [],
  offenders: [],
  canFree: confirmed,
  conditionsPersist: false,
  drainingPersists: true,
});
const object = (range: string, sliceSize: string, allocations: unknown[], draining?: unknown[]) => ({
  metadata: { name: 'n', namespace: 'ns' },
  spec: { range, sliceSize },
  status: { allocations, ...(draining === undefined ? {} : { draining }) },
});
type Status = {
  allocations: Array<{ nodeName: string; sliceRange: string }>;
  draining?: Array<{ nodeName: string; sliceRange: string; reason: string }>;
};
const statusOf = (o: Record<string, unknown> | undefined): Status => (o?.['status'] ?? {}) as Status;
const decide = (p: ReturnType<typeof plan>, current: Record<string, unknown>) =>
  decideNodeSlicePool(p, { resliced: false, sentConditions: false })(current);

test('a reslice keeps the old slices draining and assigns new slices only where no draining slice lies', () => {
  const before = object('10.0.0.0/24', '/28', [
    { nodeName: 'a', sliceRange: '10.0.0.0/28' },
    { nodeName: 'b', sliceRange: '10.0.0.16/28' },
    { nodeName: '', sliceRange: '10.0.0.32/28' },
  ]);
  const after = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 26), ['a', 'b'], () => false),
      before,
    ),
  );
  assert.deepEqual(after.draining, [
    { nodeName: 'a', sliceRange: '10.0.0.0/28', reason: 'Resliced' },
    { nodeName: 'b', sliceRange: '10.0.0.16/28', reason: 'Resliced' },
  ]);
  assert.deepEqual(after.allocations, [
    { nodeName: 'a', sliceRange: '10.0.0.64/26' },
    { nodeName: 'b', sliceRange: '10.0.0.128/26' },
  ]);
});

test('a draining slice leaves only once its pool is confirmed empty, and its space is handed out again', () => {
  const draining = [
    { nodeName: 'a', sliceRange: '10.0.0.0/28', reason: 'Resliced' },
    { nodeName: 'b', sliceRange: '10.0.0.16/28', reason: 'Resliced' },
  ];
  const before = object(
    '10.0.0.0/24',
    '/26',
    [
      { nodeName: 'a', sliceRange: '10.0.0.64/26' },
      { nodeName: 'b', sliceRange: '10.0.0.128/26' },
    ],
    draining,
  );
  const one = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 26), ['a', 'b', 'c'], (e) => e.nodeName === 'a'),
      before,
    ),
  );
  assert.deepEqual(one.draining, [draining[1]], "b's old slice still holds addresses");
  assert.equal(
    one.allocations.find((e) => e.nodeName === 'c')?.sliceRange,
    '10.0.0.192/26',
    "not 10.0.0.0/26: it overlaps b's draining slice",
  );
  const two = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 26), ['a', 'b', 'c', 'd'], () => true),
      object('10.0.0.0/24', '/26', one.allocations, one.draining),
    ),
  );
  assert.deepEqual(two.draining, []);
  assert.equal(two.allocations.find((e) => e.nodeName === 'd')?.sliceRange, '10.0.0.0/26');
});

test("a departed node's slice drains (still named to it) and is freed only once its pool is confirmed empty", () => {
  const before = object('10.0.0.0/24', '/25', [
    { nodeName: 'gone', sliceRange: '10.0.0.0/25' },
    { nodeName: 'here', sliceRange: '10.0.0.128/25' },
  ]);
  const held = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 25), ['here', 'new'], () => false),
      before,
    ),
  );
  assert.deepEqual(held.allocations, [
    { nodeName: 'gone', sliceRange: '10.0.0.0/25' },
    { nodeName: 'here', sliceRange: '10.0.0.128/25' },
  ]);
  assert.deepEqual(held.draining, [{ nodeName: 'gone', sliceRange: '10.0.0.0/25', reason: 'NodeLeft' }]);
  const freed = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 25), ['here'], () => true),
      object('10.0.0.0/24', '/25', held.allocations, held.draining),
    ),
  );
  assert.deepEqual(freed.allocations, [
    { nodeName: '', sliceRange: '10.0.0.0/25' },
    { nodeName: 'here', sliceRange: '10.0.0.128/25' },
  ]);
  assert.deepEqual(freed.draining, []);
});

test('a node that comes back before its slice drained keeps its slice', () => {
  const before = object(
    '10.0.0.0/24',
    '/25',
    [{ nodeName: 'back', sliceRange: '10.0.0.0/25' }],
    [{ nodeName: 'back', sliceRange: '10.0.0.0/25', reason: 'NodeLeft' }],
  );
  const after = statusOf(
    decide(
      plan(spec('10.0.0.0/24', 25), ['back'], () => false),
      before,
    ),
  );
  assert.deepEqual(after.allocations, [{ nodeName: 'back', sliceRange: '10.0.0.0/25' }]);
  assert.deepEqual(after.draining, []);
});

test('--slice-drain-grace defaults to 60s and reads a Go duration', () => {
  const defaults = parseControllerFlags([]);
  const set = parseControllerFlags(['--slice-drain-grace', '5s']);
  assert.deepEqual([defaults.sliceDrainGraceMs, set.sliceDrainGraceMs], [60_000, 5000]);
});
