// Pool usage for STATUS and `hereabouts status`: computed from the allocations, never by walking the range.
import type { RangeConfig } from '../config/types.ts';
import type { Allocations } from '../store/store.ts';
import { allocatableOf } from './allocatable.ts';

/** How many addresses the range can ever hand out: range_start…range_end minus excluded blocks and the gateway. */
export function capacity(range: RangeConfig): bigint {
  return allocatableOf(range).count;
}

/**
 * Allocatable addresses not yet allocated. Allocations outside the allocatable set (an address excluded after it was
 * handed out, or outside a narrowed range_start…range_end) do not reduce it.
 */
export function freeCount(range: RangeConfig, taken: Allocations): bigint {
  const allocatable = allocatableOf(range);
  let used = 0n;
  for (const value of taken.keys()) {
    if (allocatable.rankOf(value) !== undefined) used++;
  }
  return allocatable.count - used;
}
