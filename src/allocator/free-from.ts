// A free address near a given point of the range, for writers that just collided with others on the lowest free
// one: spreading their next choices keeps a burst of nodes on one shared pool from probing the same addresses one
// conflict at a time. Without contention the store keeps Whereabouts' lowest-first order (first-free.ts).
import type { RangeConfig } from '../config/types.ts';
import { networkOf } from '../ip/cidr.ts';
import type { Allocations } from '../store/store.ts';
import { allocatableOf } from './allocatable.ts';
import { firstFree } from './first-free.ts';

/** Allocatable addresses tried from the starting point before falling back to the lowest free one. */
const PROBES = 64;

/**
 * The largest IPPool offset (spec.allocations key) Whereabouts can read: it parses keys as int64, skips a record it
 * cannot parse and drops it from the pool on its next write. Spreading stays below it, so that in an IPv6 /64 or
 * larger a pool Whereabouts still writes never loses a record; the lowest-first order reaches past it only once the
 * first 2^63 − 1 addresses are taken.
 */
export const MAX_READABLE_OFFSET = 2n ** 63n - 1n;

/**
 * The first free address at or after the allocatable address at `fraction` of the range's readable part (offsets
 * up to MAX_READABLE_OFFSET; 0 <= fraction < 1), within a few probes; else the lowest free address. Undefined only when the range is exhausted.
 */
export function freeFrom(
  range: RangeConfig,
  taken: Allocations,
  refused: ReadonlySet<bigint>,
  fraction: number,
): bigint | undefined {
  if (!(fraction >= 0 && fraction < 1)) throw new RangeError(`fraction ${fraction} is not in [0, 1)`);
  const allocatable = allocatableOf(range);
  if (allocatable.count === 0n) return undefined;
  // 2^32 steps are fine-grained enough for any range; BigInt keeps a /64's ranks exact.
  const spreadOver = allocatable.countThrough(networkOf(range.cidr) + MAX_READABLE_OFFSET);
  if (spreadOver === 0n) return firstFree(range, taken, refused);
  const start = (spreadOver * BigInt(Math.floor(fraction * 2 ** 32))) >> 32n;
  for (let rank = start; rank < allocatable.count && rank < start + BigInt(PROBES); rank++) {
    const address = allocatable.addressAt(rank);
    if (!taken.has(address) && !refused.has(address)) return address;
  }
  return firstFree(range, taken, refused);
}
