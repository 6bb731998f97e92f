import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocatableOf } from '../../../src/allocator/allocatable.ts';
import { ip, rangeOf } from './range-fixture.ts';

test('countThrough() agrees with a walk of the range, for every value around a range with holes and a gateway', () => {
  const shapes = [
    rangeOf('10.0.0.0/27'),
    rangeOf('10.0.0.0/27', { exclude: ['10.0.0.0/30', '10.0.0.8/29', '10.0.0.30/32'], gateway: '10.0.0.5' }),
    rangeOf('10.0.0.0/27', { start: '10.0.0.4', end: '10.0.0.20', exclude: ['10.0.0.2/31', '10.0.0.19/32'] }),
    rangeOf('10.0.0.0/27', { exclude: ['10.0.0.0/27'] }),
  ];
  for (const range of shapes) {
    const allocatable = allocatableOf(range);
    let walked = 0n;
    for (let value = ip('9.255.255.250'); value <= ip('10.0.0.40'); value++) {
      if (allocatable.rankOf(value) !== undefined) walked++;
      assert.equal(allocatable.countThrough(value), walked, `through ${value}`);
    }
    assert.equal(walked, allocatable.count);
  }
});

test('countThrough() stays exact past 2^63 in an IPv6 /48', () => {
  const allocatable = allocatableOf(rangeOf('fd00::/48', { exclude: ['fd00::/65'] }));
  // network + 2^63 − 1 is inside the excluded /65 (its first 2^63 addresses): nothing at or below it is allocatable
  assert.equal(allocatable.countThrough(ip('fd00::') + 2n ** 63n - 1n), 0n);
  assert.equal(allocatable.countThrough(ip('fd00::') + 2n ** 63n), 1n);
});
