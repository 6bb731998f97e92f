// Node-slice assignment (pure): given a NodeSlicePool's entries, the live nodes and the address space that draining
// slices still cover, decides the new entries. Never-used slices are handed out before freed ones, so a slice a
// departed node may still have cached is reused last; a slice overlapping blocked space is never handed out; only
// as many entries as nodes are written (a /48 cut into /64s would not fit in one object otherwise).
import { freePrefixes } from '../../allocator/prefix-fit.ts';
import { blockOfCidr, type Block } from '../../ip/block.ts';
import { formatCidr, lastOf, networkOf, type Cidr } from '../../ip/cidr.ts';
import { sliceCount } from '../../ip/slice.ts';
import { cidrOrUndefined } from '../pools/view.ts';

export interface SliceEntry {
  readonly nodeName: string;
  readonly sliceRange: string;
}

/**
 * Why a slice drains: its node left the cluster; the network was resliced (a new range or slice size); its pool
 * holds addresses (or may still get some) but the NodeSlicePool did not list it for its node (`Unlisted`: a
 * NodeSlicePool deleted and re-created, or edited); or another node's pool holds addresses in it (`Overlapped`).
 */
export type DrainReason = 'NodeLeft' | 'Resliced' | 'Unlisted' | 'Overlapped';

/** A slice that no longer serves its node and whose IPPool may still hold addresses (status.draining). */
export interface DrainingEntry extends SliceEntry {
  readonly reason: DrainReason;
}

export interface SliceDecision {
  readonly entries: SliceEntry[];
  readonly assigned: string[];
  /** Nodes left without a slice because the range has none free. */
  readonly starved: string[];
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && networkOf(a) <= lastOf(b) && networkOf(b) <= lastOf(a);
}

export function assignSlices(
  range: Cidr,
  sliceSize: number,
  current: readonly SliceEntry[],
  liveNodes: readonly string[],
  blocked: readonly Cidr[],
): SliceDecision {
  const live = new Set(liveNodes);
  const assigned: string[] = [];
  const entries = [...current];
  const has = new Set(entries.filter((e) => e.nodeName !== '').map((e) => e.nodeName));
  const known = new Set(entries.map((e) => e.sliceRange));
  sliceCount(range, sliceSize); // rejects a slice size the range cannot be cut into
  const blockerOf = (slice: Cidr): Cidr | undefined => blocked.find((b) => overlaps(b, slice));
  // Off limits to a never-used slice: blocked space, and every slice an entry names exactly (used or freed).
  const taken = [
    ...blocked.filter((b) => b.family === range.family).map(blockOfCidr),
    ...[...known].flatMap((text): Block[] => {
      const slice = cidrOrUndefined(text);
      const exact = slice?.family === range.family && slice.prefix === sliceSize && formatCidr(slice) === text;
      return exact ? [blockOfCidr(slice)] : [];
    }),
  ];
  // Lowest first, one pass: a slice handed out is below every one still to come, so none needs re-checking.
  const fresh = freePrefixes({ family: range.family, space: [blockOfCidr(range)], taken }, sliceSize);
  /** The next never-used slice that no blocked space overlaps. */
  const nextFree = (): Cidr | undefined => {
    const next = fresh.next();
    return next.done === true ? undefined : next.value;
  };
  const starved: string[] = [];
  for (const node of [...live].sort()) {
    if (has.has(node)) continue;
    const fresh = nextFree();
    if (fresh !== undefined) {
      const sliceRange = formatCidr(fresh);
      entries.push({ nodeName: node, sliceRange });
      known.add(sliceRange);
      assigned.push(`${node} ${sliceRange}`);
      continue;
    }
    const reuse = entries.findIndex((e) => {
      const slice = e.nodeName === '' ? cidrOrUndefined(e.sliceRange) : undefined;
      return slice !== undefined && blockerOf(slice) === undefined;
    });
    if (reuse < 0) {
      starved.push(node);
      continue;
    }
    const { sliceRange } = entries[reuse] as SliceEntry;
    entries[reuse] = { nodeName: node, sliceRange };
    assigned.push(`${node} ${sliceRange}`);
  }
  return { entries, assigned, starved };
}
