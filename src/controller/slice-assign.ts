// Node-slice assignment (pure): given a NodeSlicePool's entries, the live nodes and which departed nodes' slice pools
// are empty, decides the new entries. Never-used slices are handed out before freed ones, so a slice a departed node
// may still have cached is reused last; only as many entries as nodes are written (a /48 cut into /64s would not
// fit in one object otherwise).
import { formatCidr, type Cidr } from '../ip/cidr.ts';
import { nthSlice, sliceCount } from '../ip/slice.ts';

export interface SliceEntry {
  readonly nodeName: string;
  readonly sliceRange: string;
}

export interface SliceDecision {
  readonly entries: SliceEntry[];
  readonly assigned: string[];
  readonly freed: string[];
  /** Nodes left without a slice because the range has none free. */
  readonly starved: string[];
}

export function assignSlices(
  range: Cidr,
  sliceSize: number,
  current: readonly SliceEntry[],
  liveNodes: readonly string[],
  canFree: (entry: SliceEntry) => boolean,
): SliceDecision {
  const live = new Set(liveNodes);
  const assigned: string[] = [];
  const freed: string[] = [];
  const entries = current.map((e): SliceEntry => {
    if (e.nodeName === '' || live.has(e.nodeName) || !canFree(e)) return e;
    freed.push(`${e.nodeName} ${e.sliceRange}`);
    return { nodeName: '', sliceRange: e.sliceRange };
  });
  const has = new Set(entries.filter((e) => e.nodeName !== '').map((e) => e.nodeName));
  const known = new Set(entries.map((e) => e.sliceRange));
  const total = sliceCount(range, sliceSize);
  let next = 0n;
  const starved: string[] = [];
  for (const node of [...live].sort()) {
    if (has.has(node)) continue;
    while (next < total && known.has(formatCidr(nthSlice(range, sliceSize, next)))) next++;
    if (next < total) {
      const sliceRange = formatCidr(nthSlice(range, sliceSize, next++));
      entries.push({ nodeName: node, sliceRange });
      known.add(sliceRange);
      assigned.push(`${node} ${sliceRange}`);
      continue;
    }
    const reuse = entries.findIndex((e) => e.nodeName === '');
    if (reuse < 0) {
      starved.push(node);
      continue;
    }
    entries[reuse] = { nodeName: node, sliceRange: entries[reuse]!.sliceRange };
    assigned.push(`${node} ${entries[reuse]!.sliceRange}`);
  }
  return { entries, assigned, freed, starved };
}
