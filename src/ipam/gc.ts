// GC (CNI 1.1): release this node's allocations whose attachment is not in the runtime's valid list.
import { warmHolder } from '../store/warm-record.ts';
import type { NetworkConfig } from '../config/types.ts';
import type { IPAddress } from '../ip/address.ts';
import type { AllocationRecord, Plan, PoolRef, Store } from '../store/store.ts';
import { attachmentKey, type AttachmentId } from './attachment.ts';
import { poolsFor, type PoolsOption } from './pools.ts';

export interface Keep {
  readonly attachments: ReadonlySet<string>;
  readonly containers: ReadonlySet<string>;
}

export interface Collected {
  readonly pool: PoolRef;
  readonly address: IPAddress;
  readonly record: AllocationRecord;
}

export interface GarbageReport {
  readonly released: readonly Collected[];
  /** One entry per pool that could not be collected; the other pools were still processed. */
  readonly errors: readonly unknown[];
}

export interface CollectOptions extends PoolsOption {
  /** Containers whose every allocation is kept, whatever the interface (a valid-list entry without an ifname). */
  readonly keepContainers?: ReadonlySet<string>;
}

export async function collectGarbage(
  store: Store,
  config: NetworkConfig,
  valid: readonly AttachmentId[],
  options: CollectOptions = {},
): Promise<GarbageReport> {
  const keep: Keep = {
    attachments: new Set(valid.map(attachmentKey)),
    containers: options.keepContainers ?? new Set(),
  };
  const released: Collected[] = [];
  const errors: unknown[] = [];
  const spare = { nowMs: Date.now(), graceMs: config.ipam.gcGraceSeconds * 1000 };
  for (const pool of poolsFor(config, options)) {
    try {
      const gone = await store.update(pool, planCollect(keep, store.node, spare));
      for (const [value, record] of gone) {
        released.push({ pool, address: { family: pool.range.cidr.family, value }, record });
      }
    } catch (err) {
      errors.push(err);
    }
  }
  return { released, errors };
}

/** Records written less than `graceMs` before `nowMs` (wall clock: createdAt was stamped by another process). */
export interface Spare {
  readonly nowMs: number;
  readonly graceMs: number;
}

/**
 * Only records made by this node are candidates: with a shared (Kubernetes) pool, another node's allocations are
 * not in this runtime's list, and a record without a node (written by Whereabouts) cannot be placed, so it is
 * left to the controller. On the local store (no node) every record is this node's. Young records are spared: an
 * ADD may have committed after the runtime took its snapshot of the valid attachments.
 */
export function planCollect(
  keep: Keep,
  node: string | undefined,
  spare: Spare,
): Plan<Array<[bigint, AllocationRecord]>> {
  // A warm record is the node agent's, not an attachment's (DESIGN §11), and a bound one its workload's (its pod may
  // run on another node now: docs/sticky.md): never the runtime's to collect.
  const kept = (record: AllocationRecord): boolean =>
    record.binding !== undefined ||
    keep.attachments.has(attachmentKey(record)) ||
    keep.containers.has(record.containerId) ||
    isYoung(record, spare) ||
    warmHolder(record) !== undefined;
  return (current) => {
    const gone = [...current].filter(([, record]) => record.node === node && !kept(record));
    return { change: gone.length === 0 ? null : { release: gone.map(([address]) => address) }, value: gone };
  };
}

/** A record without a readable createdAt (written before it was recorded, or by Whereabouts) is not young. */
function isYoung(record: AllocationRecord, spare: Spare): boolean {
  if (spare.graceMs <= 0 || record.createdAt === undefined) return false;
  const created = Date.parse(record.createdAt);
  return Number.isFinite(created) && spare.nowMs - created < spare.graceMs;
}
