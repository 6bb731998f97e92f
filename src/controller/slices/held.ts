// The slice IPPools of a sliced network that are in use, found in the controller's pool cache: the truth about
// which space is taken (DESIGN §9), whatever the NodeSlicePool says. A slice pool is named
// [<network_name>-]<node>-<slice> with the slice as its range; it is in use when it holds addresses, or when it is
// empty and not retired (the controller retires a slice pool before it lets its slice go, so an empty pool without
// the mark belongs to a slice some node may still have an ADD on its way to).
import { formatCidr, lastOf, networkOf, type Cidr } from '../../ip/cidr.ts';
import { poolName } from '../../config/names.ts';
import type { PoolView } from '../pools/view.ts';
import { overlaps } from './assign.ts';

export interface HeldSlice {
  readonly nodeName: string;
  readonly sliceRange: string;
  /** It holds addresses (else it is empty, and not retired). */
  readonly holdsAddresses: boolean;
}

export interface HeldOptions {
  /** Names of IPPools that NADs name for their own ranges (not node slices): never a slice pool. */
  readonly notSlicePools: ReadonlySet<string>;
  /** Pools this process retired whose mark the cache may not show yet. */
  readonly retiredHere?: (pool: string) => boolean;
}

/** The node a pool's name gives it as a slice pool of the network, or undefined when it is no such pool. */
function sliceNodeOf(name: string, range: Cidr, network: { name: string; named: boolean }): string | undefined {
  const base = poolName(range);
  if (!name.endsWith(`-${base}`)) return undefined;
  const prefix = name.slice(0, -base.length - 1);
  const node = network.named
    ? prefix.startsWith(`${network.name}-`)
      ? prefix.slice(network.name.length + 1)
      : ''
    : prefix;
  if (node === '') return undefined;
  const expected = poolName(range, { ...(network.named ? { networkName: network.name } : {}), node });
  return expected === name ? node : undefined;
}

/** The network's slice pools in use inside its range, in address order (then by node). */
export function heldSlices(
  network: { readonly network: string; readonly networkNamed: boolean; readonly range: Cidr },
  pools: Iterable<PoolView>,
  options: HeldOptions,
): HeldSlice[] {
  const held: Array<HeldSlice & { readonly first: bigint; readonly last: bigint }> = [];
  for (const pool of pools) {
    const range = pool.range;
    if (range === undefined || options.notSlicePools.has(pool.name) || !overlaps(range, network.range)) continue;
    const nodeName = sliceNodeOf(pool.name, range, { name: network.network, named: network.networkNamed });
    if (nodeName === undefined) continue;
    const holdsAddresses = pool.allocations.size > 0;
    const retired = pool.retired || options.retiredHere?.(pool.name) === true;
    if (!holdsAddresses && retired) continue;
    held.push({
      nodeName,
      sliceRange: formatCidr(range),
      holdsAddresses,
      first: networkOf(range),
      last: lastOf(range),
    });
  }
  held.sort((a, b) =>
    a.first !== b.first
      ? a.first < b.first
        ? -1
        : 1
      : a.last !== b.last
        ? a.last < b.last
          ? -1
          : 1
        : a.nodeName.localeCompare(b.nodeName),
  );
  return held.map(({ nodeName, sliceRange, holdsAddresses }) => ({ nodeName, sliceRange, holdsAddresses }));
}
