// Highest fit: the order hereabouts allocates in while a Whereabouts plugin writes the same pool. Whereabouts takes
// the lowest free address, and a Whereabouts process that lost its Lease mid-update (a stall past the Lease's 1 s)
// goes on with the address it picked; hereabouts reserves before its pool write, so had it picked the same address,
// that Whereabouts ADD would meet hereabouts' reservation and fail. From the top of the range down, the two meet only
// when the pool is nearly full. Like first-free.ts, cost grows with the allocations, never with the range.
import type { RangeConfig } from '../config/types.ts';
import { networkOf } from '../ip/cidr.ts';
import type { Allocations } from '../store/store.ts';
import { allocatableOf } from './allocatable.ts';
import { blockedMarks, firstFree } from './first-free.ts';
import { MAX_READABLE_OFFSET } from './free-from.ts';

const NONE: ReadonlySet<bigint> = new Set();

/** Candidates probed from the top one by one before the counting pass. */
const PROBE_LIMIT = 64n;

/**
 * The highest free address of the range that Whereabouts can read (offset up to MAX_READABLE_OFFSET); when every one
 * of those is taken, the lowest free address past them. Undefined when the range is exhausted.
 */
export function highestFree(
  range: RangeConfig,
  taken: Allocations,
  refused: ReadonlySet<bigint> = NONE,
): bigint | undefined {
  const allocatable = allocatableOf(range);
  const readable = allocatable.countThrough(networkOf(range.cidr) + MAX_READABLE_OFFSET);
  if (readable === 0n) return firstFree(range, taken, refused);
  const isBlocked = (value: bigint): boolean => taken.has(value) || refused.has(value);
  const probes = PROBE_LIMIT < readable ? PROBE_LIMIT : readable;
  for (let i = 1n; i <= probes; i++) {
    const address = allocatable.addressAt(readable - i);
    if (!isBlocked(address)) return address;
  }
  // Pigeonhole from the top: with n blocked addresses, one of the n+1 highest readable ranks is free (if there are
  // that many).
  const window = BigInt(taken.size + refused.size) + 1n;
  const first = window < readable ? readable - window : 0n;
  const marks = blockedMarks(allocatable, { first, last: readable - 1n }, [taken.keys(), refused.values()]);
  const free = marks.lastIndexOf(0);
  return free < 0 ? firstFree(range, taken, refused) : allocatable.addressAt(first + BigInt(free));
}
