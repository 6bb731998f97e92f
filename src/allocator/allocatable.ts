// The allocatable set of a range: start…end minus the exclude blocks and the gateway ("holes"), with ranks
// (an address's position among the allocatable addresses) so counting and searching never walk the range.
import type { RangeConfig } from '../config/types.ts';
import { blockSize, intersectBlocks, lastStartingAtOrBefore, mergeBlocks, type Block } from '../ip/block.ts';

export interface Allocatable {
  readonly span: Block;
  /** Excluded blocks and the gateway, clipped to the span, merged, sorted. */
  readonly holes: readonly Block[];
  /** How many addresses can ever be handed out. */
  readonly count: bigint;
  /** Position among the allocatable addresses; undefined outside the span or in a hole. */
  rankOf(value: bigint): bigint | undefined;
  /** The allocatable address at a position (0 … count−1). */
  addressAt(rank: bigint): bigint;
  /** How many allocatable addresses are at or below `value`. */
  countThrough(value: bigint): bigint;
}

export function gatewayIn(range: RangeConfig): bigint | undefined {
  const gw = range.gateway;
  if (gw === undefined || gw.family !== range.cidr.family) return undefined;
  return gw.value >= range.start && gw.value <= range.end ? gw.value : undefined;
}

export function allocatableOf(range: RangeConfig): Allocatable {
  const span: Block = { first: range.start, last: range.end };
  if (span.last < span.first) return emptyAllocatable(span);

  const gateway = gatewayIn(range);
  const raw = gateway === undefined ? range.exclude : [...range.exclude, { first: gateway, last: gateway }];
  const holes: Block[] = [];
  for (const block of mergeBlocks(raw)) {
    const clipped = intersectBlocks(block, span);
    if (clipped !== undefined) holes.push(clipped);
  }
  // afterHole[i]: span start shifted by every hole address up to holes[i]; an allocatable address between holes[i]
  // and holes[i+1] has rank value − afterHole[i]
  const afterHole: bigint[] = [];
  let holeTotal = 0n;
  for (const hole of holes) {
    holeTotal += blockSize(hole);
    afterHole.push(span.first + holeTotal);
  }
  const count = blockSize(span) - holeTotal;

  return {
    span,
    holes,
    count,
    rankOf(value) {
      if (value < span.first || value > span.last) return undefined;
      if (holes.length === 0) return value - span.first;
      const i = lastStartingAtOrBefore(holes, value);
      if (i === undefined) return value - span.first;
      const hole = holes[i];
      const base = afterHole[i];
      if (hole === undefined || base === undefined || value <= hole.last) return undefined;
      return value - base;
    },
    addressAt(rank) {
      if (rank < 0n || rank >= count) {
        throw new RangeError(`rank ${rank} is outside the ${count} allocatable addresses of the range`);
      }
      let address = span.first + rank;
      for (const hole of holes) {
        if (hole.first > address) break;
        address += blockSize(hole);
      }
      return address;
    },
    countThrough(value) {
      if (value < span.first) return 0n;
      if (value >= span.last) return count;
      let through = value - span.first + 1n;
      for (const hole of holes) {
        if (hole.first > value) break;
        through -= (hole.last < value ? hole.last : value) - hole.first + 1n;
      }
      return through;
    },
  };
}

function emptyAllocatable(span: Block): Allocatable {
  return {
    span,
    holes: [],
    count: 0n,
    rankOf: () => undefined,
    countThrough: () => 0n,
    addressAt(rank) {
      throw new RangeError(`rank ${rank} is outside the 0 allocatable addresses of the range`);
    },
  };
}
