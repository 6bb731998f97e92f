// Variable-length prefix allocation: where a /n fits in a pool's space around what is already held. Work is done
// gap by gap (space minus taken, from merged sorted blocks), so the cost grows with the number of blocks given,
// never with the number of addresses or of candidate prefixes: an IPv6 /32 counts its /64s as fast as a /24 does.
import { bitsOf, maxValue, type Family } from '../ip/address.ts';
import { lastStartingAtOrBefore, mergeBlocks, type Block } from '../ip/block.ts';
import { hostMask, lastOf, sizeOf, type Cidr } from '../ip/cidr.ts';

/** Where a prefix may be placed: `space` = the pool's allocatable blocks, `taken` = blocks already held (single addresses as {first:x,last:x}, prefixes as their blocks, exclusions). Both any order, may overlap; the functions merge them. */
export interface PrefixSpace {
  readonly family: Family;
  readonly space: readonly Block[];
  readonly taken: readonly Block[];
}

export type PrefixVerdict = 'free' | 'misaligned' | 'outside' | 'taken';

/** First fit: the lowest-addressed, aligned /prefixLength block lying wholly inside one space block and touching no taken address; undefined when none. */
export function firstFitPrefix(s: PrefixSpace, prefixLength: number): Cidr | undefined {
  // freePrefixes(s, prefixLength).next() without a generator's cost: twice as fast, called once per allocation.
  const size = blockSizeOf(s.family, prefixLength);
  for (const gap of gapsOf(s)) {
    const start = alignUp(gap.first, size);
    if (start + size - 1n <= gap.last) return { family: s.family, address: start, prefix: prefixLength };
  }
  return undefined;
}

/**
 * Every aligned, free /prefixLength block in address order, lazily: firstFitPrefix's answer, then the next ones.
 * For handing out several in one pass (the blocks passed never come back); s is read when the first is asked for.
 */
export function freePrefixes(s: PrefixSpace, prefixLength: number): Generator<Cidr, void, undefined> {
  const size = blockSizeOf(s.family, prefixLength); // thrown now, not at the first read
  return (function* () {
    for (const gap of gapsOf(s)) {
      for (let start = alignUp(gap.first, size); start + size - 1n <= gap.last; start += size) {
        yield { family: s.family, address: start, prefix: prefixLength };
      }
    }
  })();
}

/** Judges a specific CIDR: 'free', 'misaligned' (host bits set), 'outside' (not wholly inside the space), 'taken' (overlaps a taken block). Order of checks: misaligned, outside, taken. */
export function judgePrefix(s: PrefixSpace, cidr: Cidr): PrefixVerdict {
  if (cidr.family !== s.family) {
    throw new RangeError(`IPv${cidr.family} prefix judged in an IPv${s.family} space`);
  }
  blockSizeOf(s.family, cidr.prefix);
  if ((cidr.address & hostMask(cidr)) !== 0n) return 'misaligned';
  const first = cidr.address;
  const last = lastOf(cidr);
  // Merged space blocks are disjoint and not adjacent, so "inside the space" means inside one of them.
  const space = mergedSpace(s);
  const holder = space[lastStartingAtOrBefore(space, first) ?? -1];
  if (holder === undefined || holder.last < last) return 'outside';
  // The last taken block starting at or before `last` is the only one that can reach back to `first`.
  const taken = mergeBlocks(s.taken);
  const near = taken[lastStartingAtOrBefore(taken, last) ?? -1];
  return near !== undefined && near.last >= first ? 'taken' : 'free';
}

/** How many /prefixLength blocks could still be placed (each aligned, disjoint; the count of aligned free blocks), as bigint, without enumerating them one by one when a gap holds many. */
export function freePrefixCount(s: PrefixSpace, prefixLength: number): bigint {
  const size = blockSizeOf(s.family, prefixLength);
  let count = 0n;
  for (const gap of gapsOf(s)) {
    const start = alignUp(gap.first, size);
    if (start <= gap.last) count += (gap.last - start + 1n) / size;
  }
  return count;
}

/** The number of addresses of a /prefixLength; a RangeError for a length the family cannot have. */
function blockSizeOf(family: Family, prefixLength: number): bigint {
  if (!Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > bitsOf(family)) {
    throw new RangeError(`prefix length ${prefixLength} is not 0-${bitsOf(family)} for IPv${family}`);
  }
  return sizeOf({ family, prefix: prefixLength });
}

/** The lowest multiple of size (a power of two) at or above value. */
function alignUp(value: bigint, size: bigint): bigint {
  const mask = size - 1n;
  return (value + mask) & ~mask;
}

/** The space, merged; a block beyond the family's addresses would yield prefixes that cannot exist. */
function mergedSpace(s: PrefixSpace): Block[] {
  const space = mergeBlocks(s.space);
  const top = space[space.length - 1];
  if ((space[0]?.first ?? 0n) < 0n || (top !== undefined && top.last > maxValue(s.family))) {
    throw new RangeError(`space reaches beyond the IPv${s.family} addresses`);
  }
  return space;
}

/** Space minus taken, in address order: one walk over both merged lists. */
function* gapsOf(s: PrefixSpace): Generator<Block> {
  const taken = mergeBlocks(s.taken);
  let j = 0;
  for (const block of mergedSpace(s)) {
    let cursor = block.first;
    for (;;) {
      let t = taken[j];
      while (t !== undefined && t.last < cursor) t = taken[++j];
      if (t === undefined || t.first > block.last) {
        yield { first: cursor, last: block.last };
        break;
      }
      if (t.first > cursor) yield { first: cursor, last: t.first - 1n };
      // A taken block running past this space block may cover the next one too: keep it for that one.
      if (t.last >= block.last) break;
      cursor = t.last + 1n;
    }
  }
}
