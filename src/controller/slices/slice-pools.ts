// The slice IPPools as the slice pass needs them: read fresh from the API before a NodeSlicePool write (the cache
// may lag behind a plugin's write), created empty before their slice is handed out (so that the pools record every
// assignment), and judged in use or not for a network no NAD asks for any more.
import { poolViewsNow } from '../pools/list.ts';
import type { Cidr } from '../../ip/cidr.ts';
import { poolName } from '../../config/names.ts';
import { messageOf } from '../../errors.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { Log } from '../../log/json-log.ts';
import type { PoolWriter } from '../../store/kubernetes/writer.ts';
import { cidrOrUndefined, type PoolView } from '../pools/view.ts';
import type { NodeSlicePoolView } from '../runtime/views.ts';
import type { SliceEntry } from './assign.ts';
import { heldSlices } from './held.ts';

export function slicePoolName(network: { network: string; networkNamed: boolean }, node: string, slice: Cidr): string {
  return poolName(slice, { ...(network.networkNamed ? { networkName: network.network } : {}), node });
}

/** Every IPPool of the namespace ("namespace/name" -> view), by a quorum LIST; undefined, logged, when that fails. */
export async function listPoolViews(api: ApiClient, log: Log): Promise<ReadonlyMap<string, PoolView> | undefined> {
  try {
    return await poolViewsNow(api, (view) => `${api.namespace}/${view.name}`);
  } catch (err) {
    log.warning(`node slices: cannot list the IPPools, no NodeSlicePool is written this pass: ${messageOf(err)}`);
    return undefined;
  }
}

/**
 * Creates the missing IPPools of the slices of live nodes: a POST each, never overwriting. Failures are logged;
 * the next pass tries again.
 */
export async function ensureSlicePools(
  writer: PoolWriter,
  network: { network: string; networkNamed: boolean },
  entries: readonly SliceEntry[],
  input: {
    readonly namespace: string;
    readonly nodes: ReadonlyMap<string, unknown>;
    /** Whether "namespace/name" is known to exist. */
    readonly exists: (key: string) => boolean;
    readonly leading: () => boolean;
    readonly log: Log;
  },
): Promise<void> {
  for (const entry of entries) {
    const slice = cidrOrUndefined(entry.sliceRange);
    if (slice === undefined || entry.nodeName === '' || !input.nodes.has(entry.nodeName)) continue;
    const name = slicePoolName(network, entry.nodeName, slice);
    if (input.exists(`${input.namespace}/${name}`) || !input.leading()) continue;
    try {
      if (await writer.ensureSlicePool(name, slice))
        input.log.info(`created IPPool ${name} for slice ${entry.sliceRange} of ${entry.nodeName}`, {
          network: network.network,
        });
    } catch (err) {
      input.log.warning(`cannot create IPPool ${name} of slice ${entry.sliceRange}: ${messageOf(err)}`);
    }
  }
}

/**
 * Whether a slice pool of the NodeSlicePool's network holds an address: one the NodeSlicePool lists, or any pool
 * named as a slice pool of the network inside its range. Both spellings count, with and without the network_name
 * prefix: no NAD says any more which one the network used.
 */
export function networkInUse(
  nsp: NodeSlicePoolView,
  pools: ReadonlyMap<string, PoolView>,
  options: { readonly namespace: string; readonly notSlicePools: ReadonlySet<string> },
): boolean {
  const range = cidrOrUndefined(nsp.range);
  return [true, false].some((networkNamed) => {
    const network = { network: nsp.name, networkNamed };
    if (
      range !== undefined &&
      heldSlices({ ...network, range }, pools.values(), { notSlicePools: options.notSlicePools }).some(
        (h) => h.holdsAddresses,
      )
    )
      return true;
    return [...nsp.entries, ...nsp.draining].some((e) => {
      const slice = cidrOrUndefined(e.sliceRange);
      if (slice === undefined || e.nodeName === '') return false;
      const name = slicePoolName(network, e.nodeName, slice);
      return (pools.get(`${options.namespace}/${name}`)?.allocations.size ?? 0) > 0;
    });
  });
}
