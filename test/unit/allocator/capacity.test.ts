import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capacity, freeCount } from '../../../src/allocator/capacity.ts';
import type { RangeConfig } from '../../../src/config/types.ts';
import { ip, ips, none, rangeOf, takenOf } from './range-fixture.ts';

test('capacity() of an IPv4 /24 is 254', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/24')), 254n);
});

test('capacity() counts range_start to range_end inclusive', () => {
  assert.equal(capacity(rangeOf('10.0.0.10-10.0.0.20/24')), 11n);
});

test('capacity() leaves out excluded blocks and the gateway', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.229/30', '10.0.0.7'], gateway: '10.0.0.1' })), 248n);
});

test('capacity() counts a gateway inside an excluded block once', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.0/30'], gateway: '10.0.0.1' })), 251n);
});

test('capacity() counts overlapping excludes once', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.16/28', '10.0.0.20/30', '10.0.0.31'] })), 238n);
});

test('capacity() counts only the part of an exclude inside range_start to range_end', () => {
  assert.equal(capacity(rangeOf('10.0.0.10-10.0.0.20/24', { exclude: ['10.0.0.0/28'] })), 5n);
});

test('capacity() ignores a gateway outside range_start to range_end', () => {
  assert.equal(capacity(rangeOf('10.0.0.10-10.0.0.20/24', { gateway: '10.0.0.1' })), 11n);
});

test('capacity() of a /31 is 2 and of a /32 is 1', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/31')), 2n);
  assert.equal(capacity(rangeOf('10.0.0.0/32')), 1n);
});

test('capacity() of a /127 is 2 and of a /128 is 1', () => {
  assert.equal(capacity(rangeOf('fd00::/127')), 2n);
  assert.equal(capacity(rangeOf('fd00::/128')), 1n);
});

test('capacity() of an IPv6 /64 is 2^64 - 2', () => {
  assert.equal(capacity(rangeOf('fd00::/64')), 2n ** 64n - 2n);
});

test('capacity() of 0.0.0.0/0 is 2^32 - 2', () => {
  assert.equal(capacity(rangeOf('0.0.0.0/0')), 2n ** 32n - 2n);
});

test('capacity() of ::/0 is 2^128 - 2', () => {
  assert.equal(capacity(rangeOf('::/0')), 2n ** 128n - 2n);
});

test('capacity() of a fully excluded range is 0', () => {
  assert.equal(capacity(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.0/24'] })), 0n);
});

test('capacity() of a range whose end is below its start is 0', () => {
  const range: RangeConfig = { ...rangeOf('10.0.0.0/24'), start: ip('10.0.0.9'), end: ip('10.0.0.8') };
  assert.equal(capacity(range), 0n);
});

test('freeCount() of an empty range is its capacity', () => {
  assert.equal(freeCount(rangeOf('10.0.0.0/24', { gateway: '10.0.0.1' }), none), 253n);
});

test('freeCount() subtracts allocated addresses', () => {
  assert.equal(freeCount(rangeOf('10.0.0.0/24'), ips('10.0.0.1', '10.0.0.2', '10.0.0.77')), 251n);
});

test('freeCount() ignores allocations outside range_start to range_end', () => {
  assert.equal(
    freeCount(rangeOf('10.0.0.10-10.0.0.20/24'), ips('10.0.0.9', '10.0.0.10', '10.0.0.21', '10.1.0.15')),
    10n,
  );
});

test('freeCount() ignores allocations on excluded addresses and on the gateway', () => {
  const range = rangeOf('10.0.0.0/24', { exclude: ['10.0.0.229/30'], gateway: '10.0.0.1' });
  assert.equal(freeCount(range, ips('10.0.0.1', '10.0.0.230', '10.0.0.2')), 248n);
});

test('freeCount() of a full /31 is 0', () => {
  assert.equal(freeCount(rangeOf('10.0.0.0/31'), ips('10.0.0.0', '10.0.0.1')), 0n);
});

test('freeCount() of an IPv6 /64 with 100 000 allocations is 2^64 - 2 - 100 000', (t) => {
  const range = rangeOf('fd00::/64');
  const taken: bigint[] = [];
  for (let v = range.start; v < range.start + 100_000n; v++) taken.push(v);
  taken.push(ip('fd01::1')); // another prefix: not counted
  const allocations = takenOf(taken);
  const began = performance.now();
  const free = freeCount(range, allocations);
  t.diagnostic(`freeCount over 100001 allocations: ${(performance.now() - began).toFixed(1)} ms`);
  assert.equal(free, 2n ** 64n - 2n - 100_000n);
});
