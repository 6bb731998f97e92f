import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { formatCidr, parseCidr, type Cidr } from '../../../src/ip/cidr.ts';
import { nthSlice, sliceCount, sliceIndexOf, slices } from '../../../src/ip/slice.ts';

const ip = (text: string): bigint => parseIP(text).value;

function nextOf(it: Iterator<Cidr>): string {
  const r = it.next();
  if (r.done === true) assert.fail('generator ended early');
  return formatCidr(r.value);
}

test('sliceCount() of an IPv4 /16 into /24s is 256', () => {
  assert.equal(sliceCount(parseCidr('10.1.0.0/16'), 24), 256n);
});

test('slices() cuts an IPv4 /16 into 256 /24s in address order', () => {
  const all = [...slices(parseCidr('10.1.0.0/16'), 24)].map(formatCidr);
  assert.equal(all.length, 256);
  assert.equal(all[0], '10.1.0.0/24');
  assert.equal(all[1], '10.1.1.0/24');
  assert.equal(all[255], '10.1.255.0/24');
});

test('nthSlice() addresses the first and last /24 of a /16', () => {
  const range = parseCidr('10.1.0.0/16');
  assert.equal(formatCidr(nthSlice(range, 24, 0n)), '10.1.0.0/24');
  assert.equal(formatCidr(nthSlice(range, 24, 255n)), '10.1.255.0/24');
});

test('nthSlice() starts from the masked network when the range has host bits', () => {
  assert.equal(formatCidr(nthSlice(parseCidr('10.1.2.3/16'), 24, 2n)), '10.1.2.0/24');
});

test('sliceCount() of an IPv6 /48 into /64s is 65536', () => {
  assert.equal(sliceCount(parseCidr('fd00:1:2::/48'), 64), 65536n);
});

test('nthSlice() addresses the last /64 of a /48', () => {
  assert.equal(formatCidr(nthSlice(parseCidr('fd00:1:2::/48'), 64, 65535n)), 'fd00:1:2:ffff::/64');
});

test('slices() yields the /64s of a /48 lazily', () => {
  const it = slices(parseCidr('fd00:1:2::/48'), 64);
  assert.equal(nextOf(it), 'fd00:1:2::/64');
  assert.equal(nextOf(it), 'fd00:1:2:1::/64');
  assert.equal(nextOf(it), 'fd00:1:2:2::/64');
  it.return(undefined);
});

test('sliceCount() of a /64 into /128s is 2^64 and its last slice is addressable', () => {
  const range = parseCidr('fd00::/64');
  assert.equal(sliceCount(range, 128), 2n ** 64n);
  assert.equal(formatCidr(nthSlice(range, 128, 2n ** 64n - 1n)), 'fd00::ffff:ffff:ffff:ffff/128');
});

test('sliceCount() of a slice the size of the range is 1', () => {
  assert.equal(sliceCount(parseCidr('10.0.0.0/24'), 24), 1n);
  assert.deepEqual([...slices(parseCidr('10.0.0.0/24'), 24)].map(formatCidr), ['10.0.0.0/24']);
});

test('sliceCount() rejects a slice larger than the range', () => {
  assert.throws(() => sliceCount(parseCidr('10.0.0.0/24'), 16), {
    name: 'RangeError',
    message: 'slice size /16 is larger than range 10.0.0.0/24',
  });
});

test('slices() rejects a slice larger than the range before yielding', () => {
  assert.throws(() => slices(parseCidr('fd00::/64'), 48).next(), {
    name: 'RangeError',
    message: 'slice size /48 is larger than range fd00::/64',
  });
});

test('sliceCount() rejects a prefix length the family does not have', () => {
  assert.throws(() => sliceCount(parseCidr('10.0.0.0/8'), 33), {
    name: 'RangeError',
    message: 'slice size /33 is not an IPv4 prefix length (0-32)',
  });
});

test('sliceCount() rejects a fractional prefix length', () => {
  assert.throws(() => sliceCount(parseCidr('fd00::/48'), 64.5), {
    name: 'RangeError',
    message: 'slice size /64.5 is not an IPv6 prefix length (0-128)',
  });
});

test('nthSlice() rejects an index past the last slice', () => {
  assert.throws(() => nthSlice(parseCidr('10.1.0.0/16'), 24, 256n), {
    name: 'RangeError',
    message: 'slice 256 is outside 10.1.0.0/16, which has 256 /24 slices',
  });
});

test('nthSlice() rejects a negative index', () => {
  assert.throws(() => nthSlice(parseCidr('10.1.0.0/16'), 24, -1n), RangeError);
});

test('sliceIndexOf() finds the slice holding an address', () => {
  assert.equal(sliceIndexOf(parseCidr('10.1.0.0/16'), 24, ip('10.1.7.200')), 7n);
  assert.equal(sliceIndexOf(parseCidr('fd00:1:2::/48'), 64, ip('fd00:1:2:ffff::1')), 65535n);
});

test('sliceIndexOf() rejects an address outside the range', () => {
  assert.throws(() => sliceIndexOf(parseCidr('10.1.0.0/16'), 24, ip('10.2.0.1')), {
    name: 'RangeError',
    message: 'address 10.2.0.1 is outside 10.1.0.0/16',
  });
});
