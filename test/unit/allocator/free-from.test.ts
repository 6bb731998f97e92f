import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freeFrom, MAX_READABLE_OFFSET } from '../../../src/allocator/free-from.ts';
import { parseIP, formatIP } from '../../../src/ip/address.ts';
import { networkOf } from '../../../src/ip/cidr.ts';
import type { AllocationRecord } from '../../../src/store/store.ts';
import { testRange } from '../../support/memory-store.ts';

const record: AllocationRecord = { containerId: 'c', ifname: 'eth0', podRef: 'ns/p' };
const taken = (...ips: string[]) => new Map(ips.map((ip) => [parseIP(ip).value, record]));
const show = (value: bigint | undefined) => (value === undefined ? 'none' : formatIP({ family: 4, value }));

test('freeFrom() at fraction 0 is the lowest free address', () => {
  assert.equal(show(freeFrom(testRange('10.0.0.0/24'), taken('10.0.0.1'), new Set(), 0)), '10.0.0.2');
});

test('freeFrom() starts at the allocatable address at that fraction of the range', () => {
  // 10.0.0.1 .. 10.0.0.254: 254 allocatable addresses, half way is rank 127 = 10.0.0.128
  assert.equal(show(freeFrom(testRange('10.0.0.0/24'), new Map(), new Set(), 0.5)), '10.0.0.128');
});

test('freeFrom() skips taken, refused, excluded addresses and the gateway after its starting point', () => {
  const range = testRange('10.0.0.0/24', { exclude: ['10.0.0.130/31'], gateway: '10.0.0.132' });
  // 251 allocatable addresses: half way is rank 125 = 10.0.0.126
  const refused = new Set([parseIP('10.0.0.127').value, parseIP('10.0.0.129').value]);
  const found = freeFrom(range, taken('10.0.0.126', '10.0.0.128'), refused, 0.5);
  assert.equal(show(found), '10.0.0.133');
});

test('freeFrom() falls back to the lowest free address when the end of the range is full', () => {
  const range = testRange('10.0.0.0/29'); // .1 .. .6
  assert.equal(show(freeFrom(range, taken('10.0.0.5', '10.0.0.6'), new Set(), 0.9)), '10.0.0.1');
});

test('freeFrom() answers undefined for an exhausted range', () => {
  const range = testRange('10.0.0.0/30'); // .1 .. .2
  assert.equal(freeFrom(range, taken('10.0.0.1', '10.0.0.2'), new Set(), 0.3), undefined);
});

test('freeFrom() keeps an IPv6 /64 exact, spreading over the offsets Whereabouts can read (below 2^63)', () => {
  const range = testRange('fd00::/64');
  const found = freeFrom(range, new Map(), new Set(), 0.5);
  // half way through the readable part: offset (2^63 − 1) / 2 from the first address fd00::1
  assert.equal(found && formatIP({ family: 6, value: found }), 'fd00::4000:0:0:0');
});

test('freeFrom() never starts past offset 2^63 − 1 of the pool, whatever the fraction and the range', () => {
  for (const cidr of ['fd00::/64', 'fd00::/63', 'fd00::/48', 'fd00::/0']) {
    const range = testRange(cidr);
    const base = networkOf(range.cidr);
    for (const fraction of [0, 0.25, 0.5, 0.999_999, 1 - 2 ** -40]) {
      const found = freeFrom(range, new Map(), new Set(), fraction);
      assert.ok(
        found !== undefined && found - base >= 1n && found - base <= MAX_READABLE_OFFSET,
        `${cidr} at ${fraction}`,
      );
    }
  }
});

test('freeFrom() in a range whose readable offsets are all excluded takes the lowest free address', () => {
  const range = testRange('fd00::/48', { exclude: ['fd00::/65'] });
  const found = freeFrom(range, new Map(), new Set(), 0.5);
  assert.equal(found && formatIP({ family: 6, value: found }), 'fd00::8000:0:0:0');
});

test('freeFrom() refuses a fraction outside [0, 1)', () => {
  assert.throws(() => freeFrom(testRange('10.0.0.0/24'), new Map(), new Set(), 1), RangeError);
});
