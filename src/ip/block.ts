// Inclusive blocks of addresses of one family (exclusions, spans, slices) and the few set operations on them.
import { lastOf, networkOf, type Cidr } from './cidr.ts';

export interface Block {
  readonly first: bigint;
  readonly last: bigint;
}

/** The whole prefix, masked to its network: `10.0.0.229/30` is 10.0.0.228 … 10.0.0.231. */
export function blockOfCidr(cidr: Cidr): Block {
  return { first: networkOf(cidr), last: lastOf(cidr) };
}

export function blockSize(block: Block): bigint {
  if (block.last < block.first) {
    throw new RangeError(`block ${block.first}…${block.last} ends before it starts`);
  }
  return block.last - block.first + 1n;
}

export function blockContains(block: Block, value: bigint): boolean {
  return value >= block.first && value <= block.last;
}

/** The addresses both blocks hold; undefined when they are disjoint. */
export function intersectBlocks(a: Block, b: Block): Block | undefined {
  const first = a.first > b.first ? a.first : b.first;
  const last = a.last < b.last ? a.last : b.last;
  return first <= last ? { first, last } : undefined;
}

/** Sorted by `first`, with overlapping and adjacent blocks coalesced; the input is not modified. */
export function mergeBlocks(blocks: Iterable<Block>): Block[] {
  const sorted = [...blocks].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const out: Block[] = [];
  for (const block of sorted) {
    blockSize(block); // rejects an inverted block before it can swallow its neighbours
    const prev = out[out.length - 1];
    if (prev !== undefined && block.first <= prev.last + 1n) {
      if (block.last > prev.last) out[out.length - 1] = { first: prev.first, last: block.last };
    } else {
      out.push(block);
    }
  }
  return out;
}

/** Index of the block holding value, by binary search in sorted, disjoint blocks (mergeBlocks' output). */
export function indexOfBlock(sorted: readonly Block[], value: bigint): number | undefined {
  const i = lastStartingAtOrBefore(sorted, value);
  const block = i === undefined ? undefined : sorted[i];
  return block !== undefined && value <= block.last ? i : undefined;
}

/** Index of the last block whose `first` is <= value, in blocks sorted by `first`. */
export function lastStartingAtOrBefore(sorted: readonly Block[], value: bigint): number | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  let found: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const block = sorted[mid];
    if (block === undefined) break;
    if (block.first <= value) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}
