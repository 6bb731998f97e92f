// The lifecycle of a node slice (pure): assigned -> draining -> free. A slice drains when its node leaves the
// cluster or the network is resliced; while it drains its node allocates nothing more from it (the plugin reads
// status.draining) and no slice overlapping it is handed out. It leaves the draining list, and a departed node's
// slice becomes free, only once its IPPool was confirmed empty against the API (`confirmedEmpty`, decided by the
// caller with a fresh read after the drain grace). A departed node that comes back keeps its slice.
import { cidrOrUndefined } from '../pools/view.ts';
import type { Cidr } from '../../ip/cidr.ts';
import type { DrainingEntry, SliceEntry } from './assign.ts';

export interface Lifecycle {
  /** status.allocations before new nodes are given slices. */
  readonly entries: SliceEntry[];
  /** status.draining after this step. */
  readonly draining: DrainingEntry[];
  /** Address space no new slice may overlap: the slices still draining. */
  readonly blocked: Cidr[];
  /** Newly marked draining. */
  readonly drained: DrainingEntry[];
  /** Confirmed empty and dropped from the list (a departed node's slice is free again). */
  readonly released: DrainingEntry[];
  /** Their node came back: assigned again. */
  readonly restored: DrainingEntry[];
}

export const sliceKey = (e: SliceEntry): string => `${e.nodeName} ${e.sliceRange}`;

export function advanceLifecycle(
  current: { readonly entries: readonly SliceEntry[]; readonly draining: readonly DrainingEntry[] } | undefined,
  options: {
    readonly resliced: boolean;
    readonly liveNodes: readonly string[];
    readonly confirmedEmpty: (entry: SliceEntry) => boolean;
  },
): Lifecycle {
  const live = new Set(options.liveNodes);
  const draining = new Map((current?.draining ?? []).map((d) => [sliceKey(d), d]));
  const drained: DrainingEntry[] = [];
  const drain = (entry: SliceEntry, reason: DrainingEntry['reason']): void => {
    if (draining.has(sliceKey(entry))) return;
    const marked = { nodeName: entry.nodeName, sliceRange: entry.sliceRange, reason };
    draining.set(sliceKey(entry), marked);
    drained.push(marked);
  };
  let entries: SliceEntry[] = [];
  if (options.resliced) {
    // The old slicing's slices all drain; the new one starts from nothing (around them).
    for (const e of current?.entries ?? []) if (e.nodeName !== '') drain(e, 'Resliced');
  } else {
    entries = [...(current?.entries ?? [])];
    for (const e of entries) if (e.nodeName !== '' && !live.has(e.nodeName)) drain(e, 'NodeLeft');
  }
  const assigned = new Set(entries.filter((e) => e.nodeName !== '').map(sliceKey));
  const released: DrainingEntry[] = [];
  const restored: DrainingEntry[] = [];
  for (const [key, d] of draining) {
    if (d.reason === 'NodeLeft' && live.has(d.nodeName) && assigned.has(key)) {
      draining.delete(key);
      restored.push(d);
      continue;
    }
    if (!options.confirmedEmpty(d)) continue;
    draining.delete(key);
    released.push(d);
    if (assigned.has(key))
      entries = entries.map((e) => (sliceKey(e) === key ? { nodeName: '', sliceRange: e.sliceRange } : e));
  }
  const left = [...draining.values()];
  // An unreadable sliceRange blocks nothing it could name; the plugin cannot use it either.
  const blocked = left.map((d) => cidrOrUndefined(d.sliceRange)).filter((c): c is Cidr => c !== undefined);
  return {
    entries,
    draining: left,
    blocked,
    drained: drained.filter((d) => draining.has(sliceKey(d))),
    released,
    restored,
  };
}
