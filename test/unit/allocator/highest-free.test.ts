// highestFree(): the order hereabouts allocates in while a Whereabouts plugin writes the same pool (lowest-first on
// its side), checked against a walk of the range on every small case, and at the bounds of an IPv6 pool.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocatableOf } from '../../../src/allocator/allocatable.ts';
import { MAX_READABLE_OFFSET } from '../../../src/allocator/free-from.ts';
import { highestFree } from '../../../src/allocator/highest-free.ts';
import type { RangeConfig } from '../../../src/config/types.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { networkOf } from '../../../src/ip/cidr.ts';
import { ip, ips, none, rangeOf, takenOf } from './range-fixture.ts';

const show4 = (value: bigint | undefined) => (value === undefined ? 'none' : formatIP({ family: 4, value }));
const show6 = (value: bigint | undefined) => (value === undefined ? 'none' : formatIP({ family: 6, value }));

/** The answer by definition: the highest allocatable address that is neither taken nor refused. */
function walked(range: RangeConfig, taken: ReadonlySet<bigint>, refused: ReadonlySet<bigint>): bigint | undefined {
  const allocatable = allocatableOf(range);
  for (let rank = allocatable.count - 1n; rank >= 0n; rank--) {
    const address = allocatable.addressAt(rank);
    if (!taken.has(address) && !refused.has(address)) return address;
  }
  return undefined;
}

test('highestFree() of an empty IPv4 /24 is the broadcast address − 1', () => {
  assert.equal(show4(highestFree(rangeOf('10.0.0.0/24'), none)), '10.0.0.254');
});

test('highestFree() skips taken and refused addresses, exclusions and the gateway, down from range_end', () => {
  const range = rangeOf('10.0.0.0/24', { end: '10.0.0.200', exclude: ['10.0.0.196/30'], gateway: '10.0.0.195' });
  const found = highestFree(range, ips('10.0.0.200', '10.0.0.198'), new Set([ip('10.0.0.199'), ip('10.0.0.194')]));
  assert.equal(show4(found), '10.0.0.193');
});

test('highestFree() answers undefined for an exhausted range, and the single address of a /32', () => {
  assert.equal(highestFree(rangeOf('10.0.0.0/30'), ips('10.0.0.1', '10.0.0.2')), undefined);
  assert.equal(show4(highestFree(rangeOf('10.0.0.7/32'), none)), '10.0.0.7');
  assert.equal(highestFree(rangeOf('10.0.0.7/32'), ips('10.0.0.7')), undefined);
});

test('highestFree() equals a walk of the range for every pattern of a /28 with holes, and at random in a /22', () => {
  const small = rangeOf('10.0.0.0/28', { exclude: ['10.0.0.4/31'], gateway: '10.0.0.9' }); // 11 allocatable
  const allocatable = allocatableOf(small);
  const addresses = Array.from({ length: Number(allocatable.count) }, (_, i) => allocatable.addressAt(BigInt(i)));
  // Every subset of the allocatable addresses, split between taken (even bits) and refused (odd ones).
  for (let mask = 0; mask < 1 << addresses.length; mask++) {
    const taken = new Set<bigint>();
    const refused = new Set<bigint>();
    addresses.forEach((a, i) => {
      if ((mask >> i) & 1) (i % 2 === 0 ? taken : refused).add(a);
    });
    assert.equal(highestFree(small, takenOf(taken), refused), walked(small, taken, refused), `mask ${mask}`);
  }
  // A range larger than the probes: the counting pass decides (seeded, so a failure replays).
  const large = rangeOf('10.0.0.0/22', { exclude: ['10.0.3.0/26'], gateway: '10.0.3.254' });
  let seed = 2026;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const span = allocatableOf(large);
  for (let round = 0; round < 200; round++) {
    const taken = new Set<bigint>();
    const fill = random();
    // Fill the top densely (the case the counting pass exists for) and the rest sparsely.
    for (let rank = 0n; rank < span.count; rank++)
      if (random() < (rank > span.count - 300n ? fill : fill / 10)) taken.add(span.addressAt(rank));
    assert.equal(highestFree(large, takenOf(taken), new Set()), walked(large, taken, new Set()), `round ${round}`);
  }
});

test('highestFree() of an IPv6 pool starts at the highest offset Whereabouts can read (2^63 − 1), not at its end', () => {
  for (const cidr of ['fd00::/64', 'fd00::/63', 'fd00::/48']) {
    const range = rangeOf(cidr);
    const top = networkOf(range.cidr) + MAX_READABLE_OFFSET;
    assert.equal(show6(highestFree(range, none)), show6(top), cidr);
    assert.equal(show6(highestFree(range, takenOf([top, top - 1n]))), show6(top - 2n), cidr);
  }
  // A /65 and smaller end below that offset: their own last usable address.
  assert.equal(show6(highestFree(rangeOf('fd00::/65'), none)), 'fd00::7fff:ffff:ffff:fffe');
  assert.equal(show6(highestFree(rangeOf('fd00::/120'), none)), 'fd00::fe');
});

test('highestFree() in a /64 with its top 100 000 readable offsets taken is answered without walking the range', () => {
  const range = rangeOf('fd00::/64');
  const top = networkOf(range.cidr) + MAX_READABLE_OFFSET;
  const taken = new Set<bigint>();
  for (let i = 0n; i < 100_000n; i++) taken.add(top - i);
  assert.equal(show6(highestFree(range, takenOf(taken))), show6(top - 100_000n));
});
