// A pool kind's status and its protecting finalizer. The status counts what its addresses hold, pods and machines
// alike (a pool that names a network shares its IPPool with the network's pods), and the claims whose address is
// not among the pool's addresses any more (an edit that shrank the pool): those are never taken back, they are
// reported (a condition and an Event). A pool being deleted keeps its finalizer while any claim still holds an
// address or block of it.
import { formatIP } from '../../ip/address.ts';
import { blockSize, intersectBlocks } from '../../ip/block.ts';
import type { ApiClient } from '../../kube/api.ts';
import { recordOf } from '../../record.ts';
import { claimHolder, heldThrough } from '../../store/claim-record.ts';
import type { PoolView } from '../pools/view.ts';
import { conditionsMatch, withConditions, type Condition } from '../runtime/conditions.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { heldBlocks } from './claim-plan.ts';
import type { ClaimSpace } from './claim-space.ts';
import type { PoolLookup } from './handler.ts';
import {
  ADDRESSPOOLS,
  apiVersionOf,
  finalizerPatch,
  GLOBALADDRESSPOOLS,
  patchOne,
  POOL_FINALIZER,
  type Meta,
  type PoolKind,
} from './objects.ts';

export interface PoolCounts {
  readonly total: bigint;
  readonly used: bigint;
  readonly free: bigint;
  /** Claims of this pool whose address (or block) lies outside its addresses now. */
  readonly outOfRange: readonly string[];
}

/** What the pool's addresses hold in its IPPool; `claimed`: the pool's claims and the address each holds. */
export function poolCounts(
  space: ClaimSpace,
  ippool: PoolView | undefined,
  claimed: ReadonlyArray<{ readonly claim: string; readonly address: bigint; readonly last?: bigint }>,
): PoolCounts {
  let used = 0n;
  if (ippool !== undefined) {
    for (const held of heldBlocks(ippool.allocations, space.family))
      for (const block of space.blocks) {
        const both = intersectBlocks(held, block);
        if (both !== undefined) used += blockSize(both);
      }
  }
  // A prefix claim's whole block must lie in one of the pool's blocks, not only its first address.
  const inPool = (first: bigint, last: bigint): boolean => space.blocks.some((b) => first >= b.first && last <= b.last);
  const outOfRange = claimed
    .filter((c) => !inPool(c.address, c.last ?? c.address))
    .map((c) => `${c.claim} (${formatIP({ family: space.family, value: c.address })})`);
  const free = space.total - used;
  return { total: space.total, used, free: free < 0n ? 0n : free, outOfRange };
}

/**
 * The claims recorded in the IPPool as holding an address or block (`last`: a block's last address), for pools whose
 * IPPool only claims write.
 */
export function claimsIn(ippool: PoolView | undefined): Array<{ claim: string; address: bigint; last: bigint }> {
  const out: Array<{ claim: string; address: bigint; last: bigint }> = [];
  const family = ippool?.range?.family ?? 4;
  for (const [address, record] of ippool?.allocations ?? []) {
    const holder = claimHolder(record);
    if (holder === undefined) continue;
    const last = heldThrough(holder, family, address);
    out.push({ claim: `${holder.kind} ${holder.namespace}/${holder.name}`, address, last });
  }
  return out;
}

/** Writes the status when it changed; an Event when claims fall out of range. */
export async function writePoolStatus(
  api: ApiClient,
  events: EventRecorder,
  lookup: PoolLookup,
  meta: Meta,
  kind: PoolKind,
  counts: PoolCounts | undefined,
  current: unknown,
): Promise<void> {
  const resource = kind === 'GlobalAddressPool' ? GLOBALADDRESSPOOLS : ADDRESSPOOLS;
  const status = recordOf(current);
  const ready: Condition =
    lookup.kind === 'ready'
      ? { type: 'Ready', status: 'True', reason: 'Ready', message: `${lookup.space.total} addresses` }
      : { type: 'Ready', status: 'False', reason: 'PoolNotReady', message: lookup.message };
  const out = counts?.outOfRange ?? [];
  const stranded: Condition =
    out.length === 0
      ? { type: 'AddressesOutOfRange', status: 'False', reason: 'NoneOutOfRange', message: 'every claim is in range' }
      : {
          type: 'AddressesOutOfRange',
          status: 'True',
          reason: 'ClaimsOutOfRange',
          message: `${out.length} claims hold addresses outside the pool: ${out.slice(0, 5).join(', ')}${out.length > 5 ? ', ...' : ''}`,
        };
  const wanted = [ready, stranded];
  const numbers =
    counts === undefined
      ? {}
      : {
          addresses: {
            total: clampInt(counts.total),
            used: clampInt(counts.used),
            free: clampInt(counts.free),
            outOfRange: out.length,
          },
        };
  const sameNumbers = JSON.stringify(status['addresses'] ?? null) === JSON.stringify(numbers.addresses ?? null);
  if (!sameNumbers || !conditionsMatch(status['conditions'], wanted)) {
    const patch = { status: { ...numbers, conditions: withConditions(status['conditions'], wanted, new Date()) } };
    await patchOne(api, resource, meta, patch, { status: true });
    if (out.length > 0)
      await events.emit(
        { apiVersion: apiVersionOf(resource), kind, name: meta.name, namespace: meta.namespace, uid: meta.uid },
        'Warning',
        'ClaimsOutOfRange',
        stranded.message,
      );
  }
}

/**
 * Keeps the pool's finalizer while it is live or any claim still holds an address of it; drops it once a pool
 * being deleted holds none. 'conflict' when the pool changed meanwhile.
 */
export async function protectPool(
  api: ApiClient,
  kind: PoolKind,
  meta: Meta,
  inUse: boolean,
): Promise<'done' | 'conflict' | 'gone'> {
  const resource = kind === 'GlobalAddressPool' ? GLOBALADDRESSPOOLS : ADDRESSPOOLS;
  const patch = finalizerPatch(meta, POOL_FINALIZER, !meta.deleting || inUse);
  if (patch === undefined) return 'done';
  return patchOne(api, resource, meta, patch, { resourceVersion: meta.resourceVersion });
}

/** A count as a JSON number (a whole IPv6 /64 is beyond it: shown as the largest safe integer). */
function clampInt(value: bigint): number {
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}
