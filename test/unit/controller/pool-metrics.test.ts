// The pool gauges' numbers: a usage ratio that stays exact for IPv6-sized pools.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usageRatio } from '../../../src/controller/runtime/metrics.ts';

const pool = (used: number, capacity: bigint) => ({
  allocations: new Map(Array.from({ length: used }, (_, i) => [BigInt(i), {} as never])),
  capacity,
});

test('usage ratio of IPv4-sized pools is the plain quotient', () => {
  assert.equal(usageRatio(pool(1, 2n)), 0.5);
  assert.equal(usageRatio(pool(0, 254n)), 0);
  assert.equal(usageRatio(pool(254, 254n)), 1);
});

test('usage ratio of a /64 with a few allocations is tiny but not 0', () => {
  const ratio = usageRatio(pool(3, 2n ** 64n - 2n));
  assert.ok(ratio > 1.6e-19 && ratio < 1.7e-19, String(ratio));
});

test('a pool without capacity reads 0 when empty and 1 when something is held', () => {
  assert.equal(usageRatio(pool(0, 0n)), 0);
  assert.equal(usageRatio(pool(1, 0n)), 1);
});
