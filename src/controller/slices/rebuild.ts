// A NodeSlicePool checked against the network's slice pools in use (held.ts), before its lifecycle moves on (pure).
// Every pool in use ends up listed: as its node's slice when the node has none and the slice is one of the current
// slicing that nobody else has (a NodeSlicePool deleted and re-created is rebuilt that way), else in status.draining,
// so that no slice overlapping it is handed out until its pool is confirmed empty. A listed slice that another
// node's pool holds addresses in drains too: two nodes allocating from one slice is how an address goes out twice.
import { contains, networkOf, type Cidr } from '../../ip/cidr.ts';
import { cidrOrUndefined } from '../pools/view.ts';
import { overlaps, type DrainingEntry, type DrainReason, type SliceEntry } from './assign.ts';
import type { HeldSlice } from './held.ts';
import { sliceKey } from './lifecycle.ts';

export interface Rebuilt {
  /** status.allocations with the held slices given back to their nodes, and the overlapped ones taken away. */
  readonly entries: SliceEntry[];
  readonly draining: DrainingEntry[];
  /** Slices given to their node from its pool (the NodeSlicePool did not list them). */
  readonly rebuilt: SliceEntry[];
  /** Slices added to status.draining: in use, but not listed for their node (or overlapped by another's pool). */
  readonly found: DrainingEntry[];
}

export interface Slicing {
  readonly range: Cidr;
  readonly sliceSize: number;
  /** The network is being resliced: nothing is given back, every pool in use drains. */
  readonly resliced: boolean;
}

function isSliceOf(slice: Cidr, slicing: Slicing): boolean {
  return (
    slice.family === slicing.range.family &&
    slice.prefix === slicing.sliceSize &&
    contains(slicing.range, { family: slice.family, value: networkOf(slice) })
  );
}

export function rebuildFromPools(
  current: { readonly entries: readonly SliceEntry[]; readonly draining: readonly DrainingEntry[] },
  held: readonly HeldSlice[],
  slicing: Slicing,
): Rebuilt {
  let entries = [...current.entries];
  const draining = [...current.draining];
  const listed = new Set([...entries.filter((e) => e.nodeName !== ''), ...draining].map(sliceKey));
  const rebuilt: SliceEntry[] = [];
  const found: DrainingEntry[] = [];
  const drain = (entry: SliceEntry, reason: DrainReason): void => {
    const key = sliceKey(entry);
    if (draining.some((d) => sliceKey(d) === key)) return;
    const marked = { nodeName: entry.nodeName, sliceRange: entry.sliceRange, reason };
    draining.push(marked);
    found.push(marked);
    listed.add(key);
  };
  const covers = (text: string, slice: Cidr): boolean => {
    const other = cidrOrUndefined(text);
    return other !== undefined && overlaps(other, slice);
  };
  for (const h of held) {
    const slice = cidrOrUndefined(h.sliceRange);
    if (slice === undefined || listed.has(sliceKey(h))) continue;
    const others = entries.filter((e) => e.nodeName !== '' && e.nodeName !== h.nodeName && covers(e.sliceRange, slice));
    if (others.length > 0) {
      // An empty pool does not take a listed slice from its node; one that holds addresses does.
      if (h.holdsAddresses) {
        entries = entries.filter((e) => !others.includes(e));
        for (const other of others) drain(other, 'Overlapped');
      }
      drain(h, 'Unlisted');
      continue;
    }
    const fits = !slicing.resliced && isSliceOf(slice, slicing);
    const hasSlice = entries.some((e) => e.nodeName === h.nodeName);
    if (fits && !hasSlice && !draining.some((d) => covers(d.sliceRange, slice))) {
      const free = entries.findIndex((e) => e.nodeName === '' && e.sliceRange === h.sliceRange);
      const entry = { nodeName: h.nodeName, sliceRange: h.sliceRange };
      if (free >= 0) entries[free] = entry;
      else entries.push(entry);
      rebuilt.push(entry);
      listed.add(sliceKey(entry));
      continue;
    }
    drain(h, fits ? 'Unlisted' : 'Resliced');
  }
  return { entries, draining, rebuilt, found };
}
