// First fit: the lowest address from range_start to range_end that is not excluded, not the gateway, not
// allocated and not refused. Cost grows with the number of allocations, never with the size of the range.
import type { RangeConfig } from '../config/types.ts';
import type { Allocations } from '../store/store.ts';
import { allocatableOf, type Allocatable } from './allocatable.ts';

const NONE: ReadonlySet<bigint> = new Set();

/**
 * Candidates probed one by one before switching to the counting pass: a pool with churn usually has a hole near
 * its start, and the probe finds it without touching every allocation.
 */
const PROBE_LIMIT = 64;

/** The lowest free address of the range; undefined when the range is exhausted. */
export function firstFree(
  range: RangeConfig,
  taken: Allocations,
  refused: ReadonlySet<bigint> = NONE,
): bigint | undefined {
  const allocatable = allocatableOf(range);
  if (allocatable.count === 0n) return undefined;
  const isBlocked = (value: bigint): boolean => taken.has(value) || refused.has(value);

  const probes = BigInt(PROBE_LIMIT) < allocatable.count ? BigInt(PROBE_LIMIT) : allocatable.count;
  for (let rank = 0n; rank < probes; rank++) {
    const address = allocatable.addressAt(rank);
    if (!isBlocked(address)) return address;
  }
  if (probes === allocatable.count) return undefined;
  return lowestUnmarkedRank(allocatable, [taken.keys(), refused.values()], taken.size + refused.size);
}

/**
 * Pigeonhole: with n blocked addresses, one of the first n+1 allocatable addresses is free (if the range has that
 * many). Mark the ranks of blocked addresses among those n+1 and take the lowest unmarked one.
 */
function lowestUnmarkedRank(
  allocatable: Allocatable,
  blocked: readonly Iterable<bigint>[],
  blockedCount: number,
): bigint | undefined {
  const lastRank = BigInt(blockedCount) < allocatable.count - 1n ? BigInt(blockedCount) : allocatable.count - 1n;
  const free = blockedMarks(allocatable, { first: 0n, last: lastRank }, blocked).indexOf(0);
  return free < 0 ? undefined : allocatable.addressAt(BigInt(free));
}

/** One byte per rank of `ranks` (inclusive), 1 where a blocked address has that rank. */
export function blockedMarks(
  allocatable: Allocatable,
  ranks: { readonly first: bigint; readonly last: bigint },
  blocked: readonly Iterable<bigint>[],
): Uint8Array {
  const lowest = allocatable.addressAt(ranks.first);
  const highest = allocatable.addressAt(ranks.last);
  const marks = new Uint8Array(Number(ranks.last - ranks.first) + 1);
  for (const values of blocked) {
    for (const value of values) {
      if (value < lowest || value > highest) continue;
      const rank = allocatable.rankOf(value);
      if (rank !== undefined) marks[Number(rank - ranks.first)] = 1;
    }
  }
  return marks;
}
