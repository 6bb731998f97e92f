// Which network (and, for a node slice, which node) an IPPool belongs to. Its name is
// [<network_name>-][<node>-]<range>; only a node slice's NodeSlicePool can tell a node prefix from a network's.
// Shared by the operator commands and the controller's metrics, so both name a pool's network alike.
import { masked, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { poolName } from '../../config/names.ts';
import type { PoolView } from './view.ts';
import type { NodeSlicePoolView } from '../runtime/views.ts';

export interface PoolOwner {
  /** The network_name prefix of its objects ('' for none). */
  readonly network: string;
  readonly node: string;
}

/** Pool name -> the network and node of a node slice (both spellings: with and without the network prefix). */
export function sliceOwners(slices: Iterable<NodeSlicePoolView>): Map<string, PoolOwner> {
  const owners = new Map<string, PoolOwner>();
  for (const nsp of slices) {
    for (const entry of [...nsp.entries, ...nsp.draining]) {
      if (entry.nodeName === '') continue;
      let slice: Cidr;
      try {
        slice = masked(parseCidr(entry.sliceRange));
      } catch {
        continue; // an unreadable slice names no pool
      }
      owners.set(poolName(slice, { node: entry.nodeName }), { network: '', node: entry.nodeName });
      owners.set(poolName(slice, { networkName: nsp.name, node: entry.nodeName }), {
        network: nsp.name,
        node: entry.nodeName,
      });
    }
  }
  return owners;
}

/** A pool's network ('' for none) and node-slice owner; network undefined when its name follows no naming rule. */
export function poolIdentity(
  view: PoolView,
  owners: ReadonlyMap<string, PoolOwner>,
): { network?: string; node?: string } {
  const owner = owners.get(view.name);
  if (owner !== undefined) return owner;
  if (view.range === undefined) return {};
  const base = poolName(view.range);
  if (view.name === base) return { network: '' };
  if (view.name.endsWith(`-${base}`)) return { network: view.name.slice(0, -base.length - 1) };
  return {};
}
