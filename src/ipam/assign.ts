// ADD: one address from each range (`range` first, then `ipRanges`), all or nothing, idempotent per pod+ifname.
import { allocatableOf } from '../allocator/allocatable.ts';
import { firstFree } from '../allocator/first-free.ts';
import { freeFrom } from '../allocator/free-from.ts';
import { checkRequested } from '../allocator/check-requested.ts';
import { CniCode, CniError } from '../cni/errors.ts';
import type { NetworkConfig, RangeConfig } from '../config/types.ts';
import type { IPAddress } from '../ip/address.ts';
import { formatCidr } from '../ip/cidr.ts';
import { describeValue } from '../ip/range.ts';
import type { Allocations, Plan, PoolChange, PoolRef, Store } from '../store/store.ts';
import { heldBy, isSameAttachment, isSameOwner, recordFor, type Attachment } from './attachment.ts';
import { combineErrors } from './errors.ts';
import { poolsFor, type PoolsOption } from './pools.ts';
import { refusalReason, requestsByPool, unavailable } from './requested.ts';

export interface Assigned {
  readonly pool: PoolRef;
  readonly range: RangeConfig;
  readonly address: IPAddress;
  /** False when the attachment already held the address (an idempotent ADD); only claims are rolled back. */
  readonly claimed: boolean;
}

export type AssignOutcome =
  | { readonly kind: 'assigned'; readonly address: bigint; readonly claimed: boolean }
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'refused'; readonly address: bigint; readonly reason: string };

export async function assign(
  store: Store,
  config: NetworkConfig,
  attachment: Attachment,
  options: PoolsOption = {},
): Promise<Assigned[]> {
  const pools = poolsFor(config, options);
  const requests = requestsByPool(config, pools);
  const assigned: Assigned[] = [];
  for (const [index, pool] of pools.entries()) {
    try {
      const requested = requests.get(index);
      const outcome = await store.update(pool, planAssign(pool, attachment, requested?.value));
      if (outcome.kind === 'exhausted') {
        throw new CniError(CniCode.RangeExhausted, `range ${describeRange(pool.range)} has no free address`, {
          details: `pool ${pool.name}`,
        });
      }
      if (outcome.kind === 'refused') {
        throw unavailable({ family: pool.range.cidr.family, value: outcome.address }, outcome.reason);
      }
      const address = { family: pool.range.cidr.family, value: outcome.address };
      assigned.push({ pool, range: pool.range, address, claimed: outcome.claimed });
    } catch (err) {
      throw await rollBack(store, attachment, assigned, err);
    }
  }
  return assigned;
}

/** The decision for one pool; pure, as the Store requires. */
export function planAssign(pool: PoolRef, attachment: Attachment, requested?: bigint): Plan<AssignOutcome> {
  return (current, refused, hints) => {
    const held = heldBy(current, attachment);
    if (held !== undefined && (requested === undefined || requested === held)) {
      const change = refreshRecord(current, held, attachment);
      return { change, value: { kind: 'assigned', address: held, claimed: false } };
    }
    const record = recordFor(attachment);
    let address: bigint | undefined;
    if (requested !== undefined) {
      const verdict = checkRequested(pool.range, current, refused, requested);
      const heldAlready = !verdict.ok && verdict.reason === 'taken' && verdict.holder !== undefined;
      if (heldAlready && isSameOwner(verdict.holder, attachment)) {
        const change = refreshRecord(current, requested, attachment);
        return { change, value: { kind: 'assigned', address: requested, claimed: false } };
      }
      if (!verdict.ok) {
        return { change: null, value: { kind: 'refused', address: requested, reason: refusalReason(pool, verdict) } };
      }
      address = requested;
    } else {
      address =
        preferredFree(pool.range, current, refused, hints?.reserved) ??
        (hints?.spread === undefined ? firstFree(pool.range, current, refused) : freeFrom(pool.range, current, refused, hints.spread));
      if (address === undefined) return { change: null, value: { kind: 'exhausted' } };
    }
    // A pod that asks for a new address gives up the one its earlier sandbox held in this range.
    const claim = { address, record };
    const change: PoolChange = held === undefined ? { claim } : { claim, release: [held] };
    return { change, value: { kind: 'assigned', address, claimed: true } };
  };
}

/** The lowest address the store already reserved for this update that is still free and allocatable. */
function preferredFree(range: RangeConfig, current: Allocations, refused: ReadonlySet<bigint>, reserved: ReadonlySet<bigint> | undefined): bigint | undefined {
  if (reserved === undefined || reserved.size === 0) return undefined;
  const allocatable = allocatableOf(range);
  let best: bigint | undefined;
  for (const value of reserved) {
    if (current.has(value) || refused.has(value) || allocatable.rankOf(value) === undefined) continue;
    if (best === undefined || value < best) best = value;
  }
  return best;
}

/** An idempotent ADD records the new container id (and pod UID); nothing to write when nothing changed. */
function refreshRecord(current: Allocations, address: bigint, attachment: Attachment): PoolChange | null {
  const old = current.get(address);
  if (old === undefined) return null;
  const podUid = attachment.podUid ?? old.podUid;
  const { containerId, podRef } = attachment;
  if (old.containerId === containerId && old.podRef === podRef && old.podUid === podUid) return null;
  const record = { ...old, containerId, podRef, ...(podUid === undefined ? {} : { podUid }) };
  return { update: [{ address, record }] };
}

async function rollBack(
  store: Store,
  attachment: Attachment,
  assigned: readonly Assigned[],
  cause: unknown,
): Promise<unknown> {
  const failures: unknown[] = [];
  for (const { pool, address, claimed } of assigned) {
    if (!claimed) continue;
    try {
      await store.update(pool, (current) => {
        const record = current.get(address.value);
        const ours = record !== undefined && isSameAttachment(record, attachment);
        return { change: ours ? { release: [address.value] } : null, value: undefined };
      });
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 0) return cause;
  return combineErrors('ADD failed and rolling back its claims failed too', [cause, ...failures]);
}

function describeRange(range: RangeConfig): string {
  const family = range.cidr.family;
  return `${formatCidr(range.cidr)} (${describeValue(family, range.start)}-${describeValue(family, range.end)})`;
}
