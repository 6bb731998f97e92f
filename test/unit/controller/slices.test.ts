import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignSlices } from '../../../src/controller/slice-assign.ts';
import { groupByNetwork, sliceSpecOf } from '../../../src/controller/slice-spec.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const nad = (name: string, ipam: Record<string, unknown>) => ({ metadata: { namespace: 'default', name }, spec: { config: JSON.stringify({ cniVersion: '1.0.0', name: `${name}-conf`, type: 'macvlan', ipam }) } });

test('sliceSpecOf() reads network_name, range and node_slice_size of a NAD', () => {
  const spec = sliceSpecOf(nad('a', { type: 'whereabouts', range: '10.0.0.0/16', node_slice_size: '/24', network_name: 'blue' }));
  assert.equal(spec?.network, 'blue');
  assert.equal(spec?.networkNamed, true);
  assert.equal(spec?.sliceSize, 24);
});

test('sliceSpecOf() ignores NADs without node slices and names the bad ones', () => {
  assert.equal(sliceSpecOf(nad('plain', { type: 'hereabouts', range: '10.0.0.0/16' })), undefined);
  assert.throws(() => sliceSpecOf(nad('bad', { type: 'hereabouts', range: '10.0.0.0/24', node_slice_size: '/16' })), /default\/bad: ipam\.node_slice_size \/16 does not fit range \/24/);
});

test('groupByNetwork() reports NADs of one network that disagree and drops the network', () => {
  const a = sliceSpecOf(nad('a', { type: 'hereabouts', range: '10.0.0.0/16', node_slice_size: 24, network_name: 'n' }))!;
  const b = sliceSpecOf(nad('b', { type: 'hereabouts', range: '10.0.0.0/16', node_slice_size: 26, network_name: 'n' }))!;
  const { agreed, conflicts } = groupByNetwork([a, b]);
  assert.equal(agreed.size, 0);
  assert.match(conflicts[0] ?? '', /network n: default\/a slices 10\.0\.0\.0\/16 by \/24 but default\/b slices 10\.0\.0\.0\/16 by \/26/);
});

test('assignSlices() gives each new node the lowest never-used slice', () => {
  const d = assignSlices(parseCidr('10.0.0.0/16'), 24, [], ['n2', 'n1'], () => true);
  assert.deepEqual(d.entries, [{ nodeName: 'n1', sliceRange: '10.0.0.0/24' }, { nodeName: 'n2', sliceRange: '10.0.1.0/24' }]);
});

test('assignSlices() frees a departed node only when its pool is empty, and reuses freed slices last', () => {
  const current = [{ nodeName: 'gone', sliceRange: '10.0.0.0/25' }, { nodeName: 'busy-gone', sliceRange: '10.0.0.128/25' }];
  const held = assignSlices(parseCidr('10.0.0.0/24'), 25, current, [], (e) => e.nodeName !== 'busy-gone');
  assert.deepEqual(held.entries, [{ nodeName: '', sliceRange: '10.0.0.0/25' }, { nodeName: 'busy-gone', sliceRange: '10.0.0.128/25' }]);
  const reused = assignSlices(parseCidr('10.0.0.0/24'), 25, held.entries, ['new'], () => false);
  assert.deepEqual(reused.entries[0], { nodeName: 'new', sliceRange: '10.0.0.0/25' });
});

test('assignSlices() reports nodes left without a slice', () => {
  const d = assignSlices(parseCidr('10.0.0.0/24'), 25, [], ['a', 'b', 'c'], () => true);
  assert.deepEqual(d.starved, ['c']);
});

test('assignSlices() slices an IPv6 /48 into /64s without listing them all', () => {
  const d = assignSlices(parseCidr('fd00:1::/48'), 64, [], ['n1'], () => true);
  assert.deepEqual(d.entries, [{ nodeName: 'n1', sliceRange: 'fd00:1::/64' }]);
});
