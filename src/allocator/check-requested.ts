// Whether a specifically requested address (runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=) may be granted.
// An address already held by the same attachment is the caller's business (an idempotent ADD), not a refusal.
import type { RangeConfig } from '../config/types.ts';
import type { AllocationRecord, Allocations } from '../store/store.ts';
import { blockContains, type Block } from '../ip/block.ts';
import { gatewayIn } from './allocatable.ts';

export type RequestVerdict =
  | { readonly ok: true }
  /** Outside range_start…range_end (which may be narrower than the CIDR). */
  | { readonly ok: false; readonly reason: 'outside-range'; readonly span: Block }
  | { readonly ok: false; readonly reason: 'excluded'; readonly block: Block }
  | { readonly ok: false; readonly reason: 'gateway' }
  /** `holder` is absent when the store refused the address (reserved through an overlapping range). */
  | { readonly ok: false; readonly reason: 'taken'; readonly holder?: AllocationRecord };

export function checkRequested(
  range: RangeConfig,
  taken: Allocations,
  refused: ReadonlySet<bigint>,
  address: bigint,
): RequestVerdict {
  if (address < range.start || address > range.end) {
    return { ok: false, reason: 'outside-range', span: { first: range.start, last: range.end } };
  }
  const block = range.exclude.find((b) => blockContains(b, address));
  if (block !== undefined) return { ok: false, reason: 'excluded', block };
  if (gatewayIn(range) === address) return { ok: false, reason: 'gateway' };
  const holder = taken.get(address);
  if (holder !== undefined) return { ok: false, reason: 'taken', holder };
  if (refused.has(address)) return { ok: false, reason: 'taken' };
  return { ok: true };
}
