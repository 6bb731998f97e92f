import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';
import {
  blockContains,
  blockOfCidr,
  blockSize,
  indexOfBlock,
  intersectBlocks,
  mergeBlocks,
  type Block,
} from '../../../src/ip/block.ts';

const ip = (text: string): bigint => parseIP(text).value;
const b = (first: bigint, last: bigint): Block => ({ first, last });

test('blockOfCidr() masks the prefix: 192.168.2.229/30 is .228 to .231', () => {
  assert.deepEqual(blockOfCidr(parseCidr('192.168.2.229/30')), b(ip('192.168.2.228'), ip('192.168.2.231')));
});

test('blockOfCidr() of a /32 is one address', () => {
  assert.deepEqual(blockOfCidr(parseCidr('10.0.0.5/32')), b(ip('10.0.0.5'), ip('10.0.0.5')));
});

test('blockOfCidr() of ::/0 spans every IPv6 address', () => {
  assert.deepEqual(blockOfCidr(parseCidr('::/0')), b(0n, 2n ** 128n - 1n));
});

test('blockSize() counts both ends', () => {
  assert.equal(blockSize(b(10n, 10n)), 1n);
  assert.equal(blockSize(b(10n, 19n)), 10n);
});

test('blockSize() of a whole /64 is 2^64', () => {
  assert.equal(blockSize(blockOfCidr(parseCidr('fd00::/64'))), 2n ** 64n);
});

test('blockSize() rejects a block that ends before it starts', () => {
  assert.throws(() => blockSize(b(5n, 4n)), { name: 'RangeError', message: 'block 5…4 ends before it starts' });
});

test('blockContains() includes both ends', () => {
  assert.equal(blockContains(b(5n, 9n), 5n), true);
  assert.equal(blockContains(b(5n, 9n), 9n), true);
  assert.equal(blockContains(b(5n, 9n), 10n), false);
  assert.equal(blockContains(b(5n, 9n), 4n), false);
});

test('intersectBlocks() clips one block to another', () => {
  assert.deepEqual(intersectBlocks(b(0n, 10n), b(5n, 20n)), b(5n, 10n));
});

test('intersectBlocks() of disjoint blocks is undefined', () => {
  assert.equal(intersectBlocks(b(0n, 4n), b(5n, 20n)), undefined);
});

test('mergeBlocks() sorts by first address', () => {
  assert.deepEqual(mergeBlocks([b(20n, 25n), b(1n, 2n), b(10n, 12n)]), [b(1n, 2n), b(10n, 12n), b(20n, 25n)]);
});

test('mergeBlocks() coalesces overlapping blocks', () => {
  assert.deepEqual(mergeBlocks([b(1n, 10n), b(5n, 15n)]), [b(1n, 15n)]);
});

test('mergeBlocks() coalesces adjacent blocks', () => {
  assert.deepEqual(mergeBlocks([b(1n, 4n), b(5n, 8n)]), [b(1n, 8n)]);
});

test('mergeBlocks() absorbs a contained block', () => {
  assert.deepEqual(mergeBlocks([b(1n, 20n), b(5n, 6n), b(21n, 21n)]), [b(1n, 21n)]);
});

test('mergeBlocks() keeps gaps', () => {
  assert.deepEqual(mergeBlocks([b(1n, 4n), b(6n, 8n)]), [b(1n, 4n), b(6n, 8n)]);
});

test('mergeBlocks() of nothing is empty', () => {
  assert.deepEqual(mergeBlocks([]), []);
});

test('mergeBlocks() leaves its input untouched', () => {
  const input = [b(5n, 6n), b(1n, 2n)];
  mergeBlocks(input);
  assert.deepEqual(input, [b(5n, 6n), b(1n, 2n)]);
});

test('mergeBlocks() rejects an inverted block', () => {
  assert.throws(() => mergeBlocks([b(1n, 2n), b(9n, 3n)]), RangeError);
});

const sorted = [b(10n, 19n), b(30n, 30n), b(40n, 49n)];

test('indexOfBlock() finds the block holding a value', () => {
  assert.equal(indexOfBlock(sorted, 10n), 0);
  assert.equal(indexOfBlock(sorted, 19n), 0);
  assert.equal(indexOfBlock(sorted, 30n), 1);
  assert.equal(indexOfBlock(sorted, 45n), 2);
});

test('indexOfBlock() is undefined before, between and after the blocks', () => {
  assert.equal(indexOfBlock(sorted, 9n), undefined);
  assert.equal(indexOfBlock(sorted, 20n), undefined);
  assert.equal(indexOfBlock(sorted, 50n), undefined);
  assert.equal(indexOfBlock([], 1n), undefined);
});
