// ADD: one address from each range (`range` first, then `ipRanges`), all or nothing, idempotent per pod+ifname.
import { allocatableOf } from '../allocator/allocatable.ts';
import { firstFree } from '../allocator/first-free.ts';
import { freeFrom } from '../allocator/free-from.ts';
import { highestFree } from '../allocator/highest-free.ts';
import { checkRequested } from '../allocator/check-requested.ts';
import { ErrorKind, HereaboutsError } from '../errors.ts';
import type { NetworkConfig, RangeConfig } from '../config/types.ts';
import { formatIP, type IPAddress } from '../ip/address.ts';
import { formatCidr } from '../ip/cidr.ts';
import { describeValue } from '../ip/range.ts';
import type {
  AllocationRecord,
  Allocations,
  Plan,
  PlanHints,
  Planned,
  PoolChange,
  PoolRef,
  Store,
} from '../store/store.ts';
import { heldBy, isSameAttachment, isSameOwner, recordFor, type Attachment } from './attachment.ts';
import { messageOf } from '../errors.ts';
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
  | {
      readonly kind: 'assigned';
      readonly address: bigint;
      readonly claimed: boolean;
      /** The record an idempotent ADD rewrote (restored if a later range fails). */
      readonly previous?: AllocationRecord;
      /** Other addresses this pod+ifname holds in the pool (a move to a requested address): released last. */
      readonly gaveUp: readonly bigint[];
    }
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'refused'; readonly address: bigint; readonly reason: string };

type Granted = Extract<AssignOutcome, { kind: 'assigned' }>;

export interface AssignOptions extends PoolsOption {
  /** Told when an address given up by a move could not be released (the ADD still succeeded; GC reclaims it). */
  readonly warn?: (msg: string) => void;
}

/**
 * All or nothing: first every range grants its address (claims, or refreshes what the pod holds), and only when all
 * did are the addresses a move gave up released. A failure undoes the claims and refreshes already made, so every
 * pool is left as it was; nothing was released yet.
 */
export async function assign(
  store: Store,
  config: NetworkConfig,
  attachment: Attachment,
  options: AssignOptions = {},
): Promise<Assigned[]> {
  const pools = poolsFor(config, options);
  const requests = requestsByPool(config, pools);
  const granted: Array<{ readonly pool: PoolRef; readonly outcome: Granted }> = [];
  const createdAt = new Date().toISOString(); // wall clock on purpose: compared by GC in later processes
  for (const [index, pool] of pools.entries()) {
    try {
      const requested = requests.get(index)?.value;
      const outcome = await store.update(
        pool,
        planAssign(pool, attachment, { createdAt, ...(requested === undefined ? {} : { requested }) }),
      );
      if (outcome.kind === 'exhausted') {
        throw new HereaboutsError(ErrorKind.Exhausted, `range ${describeRange(pool.range)} has no free address`, {
          details: `pool ${pool.name}`,
        });
      }
      if (outcome.kind === 'refused') {
        throw unavailable({ family: pool.range.cidr.family, value: outcome.address }, outcome.reason);
      }
      granted.push({ pool, outcome });
    } catch (err) {
      throw await rollBack(store, attachment, granted, err);
    }
  }
  for (const { pool, outcome } of granted) {
    if (outcome.gaveUp.length === 0) continue;
    try {
      await store.update(pool, planGiveUp(attachment, outcome.address, outcome.gaveUp));
    } catch (err) {
      const list = outcome.gaveUp.map((value) => formatIP({ family: pool.range.cidr.family, value })).join(', ');
      options.warn?.(
        `pool ${pool.name}: could not release ${list}, given up for a requested address: ${messageOf(err)}`,
      );
    }
  }
  return granted.map(({ pool, outcome }) => ({
    pool,
    range: pool.range,
    address: { family: pool.range.cidr.family, value: outcome.address },
    claimed: outcome.claimed,
  }));
}

export interface PlanAssignOptions {
  /** The address asked for (runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=). */
  readonly requested?: bigint;
  /** Stamped on claimed and rewritten records (GC spares young records). */
  readonly createdAt: string;
}

/** The decision for one pool; pure, as the Store requires. Releases nothing: see planGiveUp. */
export function planAssign(pool: PoolRef, attachment: Attachment, options: PlanAssignOptions): Plan<AssignOutcome> {
  const { requested, createdAt } = options;
  return (current, refused, hints) => {
    const owned = heldBy(current, attachment);
    const held = owned[0];
    const others = (address: bigint): bigint[] => owned.filter((a) => a !== address);
    if (held !== undefined && (requested === undefined || requested === held)) {
      return refreshed(current, held, { attachment, createdAt, gaveUp: others(held) });
    }
    let address: bigint | undefined;
    if (requested !== undefined) {
      const verdict = checkRequested(pool.range, current, refused, requested);
      const heldAlready = !verdict.ok && verdict.reason === 'taken' && verdict.holder !== undefined;
      if (heldAlready && isSameOwner(verdict.holder, attachment)) {
        return refreshed(current, requested, { attachment, createdAt, gaveUp: others(requested) });
      }
      if (!verdict.ok) {
        return { change: null, value: { kind: 'refused', address: requested, reason: refusalReason(pool, verdict) } };
      }
      address = requested;
    } else {
      address = chooseFree(pool.range, current, refused, hints);
      if (address === undefined) return { change: null, value: { kind: 'exhausted' } };
    }
    // A pod that asks for a new address gives up the one its earlier sandbox held here, once every range granted.
    const change: PoolChange = { claim: { address, record: recordFor(attachment, createdAt) } };
    return { change, value: { kind: 'assigned', address, claimed: true, gaveUp: owned } };
  };
}

/**
 * The address a plan free to choose takes: one the store already reserved for it (or, in the node agent, holds warm),
 * else the next free one in the order the hints ask for.
 */
export function chooseFree(
  range: RangeConfig,
  current: Allocations,
  refused: ReadonlySet<bigint>,
  hints: PlanHints | undefined,
): bigint | undefined {
  return preferredFree(range, current, refused, hints?.reserved) ?? chosenFree(range, current, refused, hints);
}

/** A free address in the order the hints ask for: lowest first unless the pool is shared with Whereabouts or contended. */
function chosenFree(
  range: RangeConfig,
  current: Allocations,
  refused: ReadonlySet<bigint>,
  hints: PlanHints | undefined,
): bigint | undefined {
  if (hints?.highestFirst === true) return highestFree(range, current, refused);
  if (hints?.spread !== undefined) return freeFrom(range, current, refused, hints.spread);
  return firstFree(range, current, refused);
}

/** The lowest address the store already reserved for this update that is still free and allocatable. */
function preferredFree(
  range: RangeConfig,
  current: Allocations,
  refused: ReadonlySet<bigint>,
  reserved: ReadonlySet<bigint> | undefined,
): bigint | undefined {
  if (reserved === undefined || reserved.size === 0) return undefined;
  const allocatable = allocatableOf(range);
  let best: bigint | undefined;
  for (const value of reserved) {
    if (current.has(value) || refused.has(value) || allocatable.rankOf(value) === undefined) continue;
    if (best === undefined || value < best) best = value;
  }
  return best;
}

/** Releases what a move gave up, if the pod still holds it there (never the address it was just granted). */
export function planGiveUp(attachment: Attachment, granted: bigint, gaveUp: readonly bigint[]): Plan<void> {
  return (current) => {
    const release = gaveUp.filter((address) => {
      const record = current.get(address);
      return address !== granted && record !== undefined && isSameOwner(record, attachment);
    });
    return { change: release.length === 0 ? null : { release }, value: undefined };
  };
}

interface Refresh {
  readonly attachment: Attachment;
  readonly createdAt: string;
  readonly gaveUp: bigint[];
}

/**
 * An idempotent ADD records the new container id (and pod UID), stamped anew: the new container may be missing from
 * a GC snapshot taken just before. Nothing to write when nothing changed.
 */
function refreshed(current: Allocations, address: bigint, refresh: Refresh): Planned<AssignOutcome> {
  const old = current.get(address);
  const value = { kind: 'assigned', address, claimed: false, gaveUp: refresh.gaveUp } as const;
  if (old === undefined) return { change: null, value };
  const { attachment } = refresh;
  // Another pod taking the record over (a VM's migration target) never inherits the old pod's UID.
  const podUid = attachment.podUid ?? (old.podRef === attachment.podRef ? old.podUid : undefined);
  const { containerId, podRef, ifname, binding } = attachment;
  const same =
    old.containerId === containerId && old.podRef === podRef && old.podUid === podUid && old.ifname === ifname;
  if (same && old.binding === binding) return { change: null, value };
  // A sticky attachment takes its bound record over (the replica's new pod, a VM's migration target, a pre-bound
  // record), or binds its pod's earlier record. The binding is never dropped here: a record owned without one is one
  // an ordinary attachment of the same pod holds, and a bound record only a sticky attachment owns.
  const record: AllocationRecord = {
    ...withoutIdentity(old),
    containerId,
    podRef,
    ifname,
    ...(podUid === undefined ? {} : { podUid }),
    createdAt: refresh.createdAt,
    ...(binding === undefined ? {} : { binding }),
  };
  return { change: { update: [{ address, record }] }, value: { ...value, previous: old } };
}

/** The record less its pod UID and binding: a rewrite sets them anew, or leaves them out. */
function withoutIdentity(record: AllocationRecord): AllocationRecord {
  const copy: { -readonly [K in keyof AllocationRecord]: AllocationRecord[K] } = { ...record };
  delete copy.podUid;
  delete copy.binding;
  return copy;
}

/** Undoes what the granted ranges changed: claims are released, rewritten records restored, if still ours. */
async function rollBack(
  store: Store,
  attachment: Attachment,
  granted: ReadonlyArray<{ readonly pool: PoolRef; readonly outcome: Granted }>,
  cause: unknown,
): Promise<unknown> {
  const failures: unknown[] = [];
  for (const { pool, outcome } of granted) {
    if (!outcome.claimed && outcome.previous === undefined) continue;
    try {
      await store.update(pool, planUndo(attachment, outcome));
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 0) return cause;
  return combineErrors('ADD failed and rolling back its claims failed too', [cause, ...failures]);
}

function planUndo(attachment: Attachment, outcome: Granted): Plan<void> {
  return (current) => {
    const record = current.get(outcome.address);
    if (record === undefined || !isSameAttachment(record, attachment)) return { change: null, value: undefined };
    if (outcome.claimed) return { change: { release: [outcome.address] }, value: undefined };
    if (outcome.previous === undefined) return { change: null, value: undefined };
    return { change: { update: [{ address: outcome.address, record: outcome.previous }] }, value: undefined };
  };
}

function describeRange(range: RangeConfig): string {
  const family = range.cidr.family;
  return `${formatCidr(range.cidr)} (${describeValue(family, range.start)}-${describeValue(family, range.end)})`;
}
