// The record of a warm address (DESIGN §11): claimed cluster-wide by a node's agent, not handed to a pod yet. It is an
// ordinary IPPool allocation (so every reader counts the address as taken) whose id names the node and the pool, and
// whose podref is empty: no pod rule can find it orphaned. The controller releases it only once its node is gone; the
// agent renames it to the pod it hands the address to, or gives it back.
//
// The pool is in the id because a reservation belongs to an attachment (its container id and interface): warm records
// of one node in two overlapping ranges must be two attachments, or the second claim of an address would adopt the
// first one's reservation instead of finding it taken.
import type { AllocationRecord } from './store.ts';

/** The `id` (container id) of a warm record: this prefix, the node's name, "/" and the pool's name. */
export const WARM_ID_PREFIX = 'hereabouts-warm:';
export const WARM_IFNAME = 'warm';

export function warmRecord(node: string, pool: string, createdAt: string): AllocationRecord {
  return { containerId: `${WARM_ID_PREFIX}${node}/${pool}`, ifname: WARM_IFNAME, podRef: '', node, createdAt };
}

/** The node holding a warm record; undefined for any other record. */
export function warmHolder(record: AllocationRecord): string | undefined {
  if (record.podRef !== '' || record.ifname !== WARM_IFNAME || !record.containerId.startsWith(WARM_ID_PREFIX))
    return undefined;
  const node = record.containerId.slice(WARM_ID_PREFIX.length).split('/')[0] ?? '';
  return node === '' ? undefined : node;
}
