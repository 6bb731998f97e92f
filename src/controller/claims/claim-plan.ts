// The plans a claim commits on its pool's IPPool (DESIGN §9: a plan is pure and may run again on a newer pool).
// A claim that already holds a record keeps it (a retry after a lost answer, a controller restart); a new one takes
// the lowest free address or the lowest aligned free block. Prefix records hold their whole block: every plan here
// counts them, and only pools the controller alone writes hold them (claim-space.ts).
import { firstFree } from '../../allocator/first-free.ts';
import { firstFitPrefix, judgePrefix } from '../../allocator/prefix-fit.ts';
import type { RangeConfig } from '../../config/types.ts';
import type { Family } from '../../ip/address.ts';
import { indexOfBlock, mergeBlocks, type Block } from '../../ip/block.ts';
import type { Cidr } from '../../ip/cidr.ts';
import { claimHolder, claimRecord, heldThrough, sameHolder, type ClaimHolder } from '../../store/claim-record.ts';
import type { Allocations, Plan } from '../../store/store.ts';
import type { ClaimSpace } from './claim-space.ts';

export type AddressOutcome =
  | { readonly kind: 'held'; readonly address: bigint; readonly claimed: boolean }
  | { readonly kind: 'exhausted' }
  /** The claim holds nothing and may not claim now (`claimable: false`). */
  | { readonly kind: 'blocked' }
  | { readonly kind: 'taken'; readonly address: bigint }
  | { readonly kind: 'outside'; readonly address: bigint };

export type PrefixOutcome =
  | { readonly kind: 'held'; readonly cidr: Cidr; readonly claimed: boolean }
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'taken' | 'outside' | 'misaligned'; readonly cidr: Cidr };

/** Every address the pool's records hold, prefix records as their blocks. */
export function heldBlocks(current: Allocations, family: Family): Block[] {
  const out: Block[] = [];
  for (const [address, record] of current)
    out.push({ first: address, last: heldThrough(claimHolder(record), family, address) });
  return mergeBlocks(out);
}

/** The record this claim holds in the pool, if any (the lowest, should there be several). */
export function heldBy(current: Allocations, holder: ClaimHolder): bigint | undefined {
  let found: bigint | undefined;
  for (const [address, record] of current) {
    const h = claimHolder(record);
    if (h !== undefined && sameHolder(h, holder) && (found === undefined || address < found)) found = address;
  }
  return found;
}

/**
 * An address for the claim: the one it holds, else `wanted` (an IPAddress that exists already, after a move or a
 * lost record) when free, else the lowest free one not `resting` (released within the pool's reuse grace).
 */
export function planAddressClaim(
  space: ClaimSpace,
  holder: ClaimHolder,
  options: {
    readonly createdAt: string;
    readonly wanted?: bigint;
    readonly resting?: ReadonlySet<bigint>;
    /** false: only an address the claim holds already is answered. */
    readonly claimable?: boolean;
  },
): Plan<AddressOutcome> {
  return (current, refused, hints) => {
    const held = heldBy(current, holder);
    if (held !== undefined) return { change: null, value: { kind: 'held', address: held, claimed: false } };
    if (options.claimable === false) return { change: null, value: { kind: 'blocked' } };
    const taken = heldBlocks(current, space.family);
    const record = claimRecord(holder, options.createdAt);
    if (options.wanted !== undefined) {
      const wanted = options.wanted;
      if (!inBlocks(space.blocks, wanted)) return { change: null, value: { kind: 'outside', address: wanted } };
      if (inBlocks(taken, wanted) || refused.has(wanted))
        return { change: null, value: { kind: 'taken', address: wanted } };
      return claimOf(wanted, record);
    }
    const range = withHoles(
      space.range,
      taken.filter((b) => b.first !== b.last),
    );
    const avoid = new Set([...refused, ...(options.resting ?? [])]);
    // A re-plan after a conflict takes the address this commit already reserved, if it is still free.
    for (const reserved of hints?.reserved ?? [])
      if (!avoid.has(reserved) && inBlocks(space.blocks, reserved) && !inBlocks(taken, reserved))
        return claimOf(reserved, record);
    const address = firstFree(range, current, avoid);
    return address === undefined ? { change: null, value: { kind: 'exhausted' } } : claimOf(address, record);
  };
}

/** A block of the claim's length (or exactly `cidr`) for a prefix claim; its record sits at the block's start. */
export function planPrefixClaim(
  space: ClaimSpace,
  holder: ClaimHolder & { readonly prefixLength: number },
  options: { readonly createdAt: string; readonly cidr?: Cidr },
): Plan<PrefixOutcome> {
  return (current, refused) => {
    const held = heldBy(current, holder);
    if (held !== undefined) {
      const cidr = { family: space.family, address: held, prefix: holder.prefixLength };
      return { change: null, value: { kind: 'held', cidr, claimed: false } };
    }
    const taken = [...heldBlocks(current, space.family), ...[...refused].map((v) => ({ first: v, last: v }))];
    const prefixSpace = { family: space.family, space: space.blocks, taken };
    let cidr: Cidr | undefined;
    if (options.cidr !== undefined) {
      const verdict = judgePrefix(prefixSpace, options.cidr);
      if (verdict !== 'free') return { change: null, value: { kind: verdict, cidr: options.cidr } };
      cidr = options.cidr;
    } else {
      cidr = firstFitPrefix(prefixSpace, holder.prefixLength);
      if (cidr === undefined) return { change: null, value: { kind: 'exhausted' } };
    }
    const record = claimRecord(holder, options.createdAt);
    return {
      change: { claim: { address: cidr.address, record } },
      value: { kind: 'held', cidr, claimed: true },
    };
  };
}

/** Releases every record the claim holds in the pool; the value: the addresses released. */
export function planClaimRelease(holder: ClaimHolder): Plan<bigint[]> {
  return (current) => {
    const mine = [...current]
      .filter(([, record]) => {
        const h = claimHolder(record);
        return h !== undefined && sameHolder(h, holder);
      })
      .map(([address]) => address);
    return { change: mine.length === 0 ? null : { release: mine }, value: mine };
  };
}

function claimOf(address: bigint, record: ReturnType<typeof claimRecord>): ReturnType<Plan<AddressOutcome>> {
  return { change: { claim: { address, record } }, value: { kind: 'held', address, claimed: true } };
}

/** `blocks` sorted and disjoint (mergeBlocks' output, or the space's blocks). */
function inBlocks(blocks: readonly Block[], value: bigint): boolean {
  return indexOfBlock(blocks, value) !== undefined;
}

function withHoles(range: RangeConfig, holes: readonly Block[]): RangeConfig {
  return holes.length === 0 ? range : { ...range, exclude: mergeBlocks([...range.exclude, ...holes]) };
}
