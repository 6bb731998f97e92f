// The record of a warm address (DESIGN §11): claimed cluster-wide by a node's agent, not handed to a pod yet. It is an
// ordinary IPPool allocation (so every reader counts the address as taken) whose id names the node and the pool, and
// whose podref is empty: no pod rule can find it orphaned. The controller releases it only once its node is gone; the
// agent renames it to the pod it hands the address to, or gives it back.
//
// The pool is in the id because a reservation belongs to an attachment (its container id and interface): warm records
// of one node in two overlapping ranges must be two attachments, or the second claim of an address would adopt the
// first one's reservation instead of finding it taken. The settings it was claimed with (a digest of the range and of
// enable_overlapping_ranges) close the id: an agent hands out only its own settings' records, so a NAD that names the
// same pool with other settings (a tenant's, or an older agent's) never has its claims handed to this one's pods.
import type { AllocationRecord } from './store.ts';

/** The `id` (container id) of a warm record: this prefix, the node's name, "/", the pool's name, "/" and the settings. */
export const WARM_ID_PREFIX = 'hereabouts-warm:';
export const WARM_IFNAME = 'warm';

export function warmRecord(node: string, pool: string, settings: string, createdAt: string): AllocationRecord {
  return { containerId: warmId(node, pool, settings), ifname: WARM_IFNAME, podRef: '', node, createdAt };
}

export const warmId = (node: string, pool: string, settings: string): string =>
  `${WARM_ID_PREFIX}${node}/${pool}/${settings}`;

/** A warm record of `node` in `pool`, whatever its settings (an older agent's, written without them, included). */
export function isWarmOf(record: AllocationRecord | undefined, node: string, pool: string): boolean {
  if (record === undefined || warmHolder(record) !== node) return false;
  const id = record.containerId;
  const prefix = `${WARM_ID_PREFIX}${node}/${pool}`;
  return id === prefix || id.startsWith(`${prefix}/`);
}

/** The node holding a warm record; undefined for any other record. */
export function warmHolder(record: AllocationRecord): string | undefined {
  if (record.podRef !== '' || record.ifname !== WARM_IFNAME || !record.containerId.startsWith(WARM_ID_PREFIX))
    return undefined;
  const node = record.containerId.slice(WARM_ID_PREFIX.length).split('/')[0] ?? '';
  return node === '' ? undefined : node;
}
