// The one write path of an IPPool (DESIGN §5, §9), used by the plugin (under its pool lock, from its cache) and by
// the controller (from a fresh read): plan -> reserve a claimed address cluster-wide -> (on a pool others write
// right now, read it again) -> write the pool conditional on its resourceVersion -> on 409/422 re-read, re-plan and
// retry (retry.ts) -> settle the reservations.
//
// Invariants: an address is committed only by a conditional write (or the pool's creation), so a stale view costs
// a retry, never a duplicate. Every write carries the resourceVersion it was planned on, so the API server refuses a
// stale one at once (409, or 422 for a JSON patch) instead of re-applying it to each newer version itself: a write
// that only tested its own offset was re-applied without bound while other nodes kept writing a large shared pool
// (docs/benchmarks.md). A lone claim is a JSON patch that tests the resourceVersion before anything else, the
// cheapest write to refuse. Reads are served from the API server's watch cache, never older than the version known
// (the node cache's, or the one just refused), unless it has nothing newer. A claim is reserved before its write
// and only from a view this writer may act on (read from the API, or a pool only this node writes), so it never
// reserves an address another writer has committed. Of the reservations it holds, only those it created and did not
// commit are removed, on the exact version created, and a write that may have been applied keeps its claim's
// reservation (a leak the controller reclaims, not a duplicate).
import { monotonicMs } from '../../clock.ts';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { formatIP } from '../../ip/address.ts';
import { applyChange } from '../local/apply-change.ts';
import { messageOf } from '../../errors.ts';
import type { AllocationRecord, Allocations, Plan, PoolChange, PoolRef } from '../store.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { ContentionMarks, WriteMemory } from './contention.ts';
import { mayHaveApplied } from '../../kube/errors.ts';
import { toStoreError } from './api-errors.ts';
import { allocationsPatch, claimPatch, decodePoolObject, newPoolObject, refusesClaim, type PoolState } from './pool-object.ts';
import { dropCreated, followRecord, handOver, releaseReservation, reserve, type Held } from './reservations.ts';
import { getObject, type GetOptions } from './objects.ts';
import { createObject, jsonPatch, mergePatch } from './resources.ts';
import { CONFLICT, retryOnConflict } from '../../kube/retry.ts';

export interface CommitLog {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
}

export interface CommitContext {
  readonly api: ApiClient;
  /** Stamped on the records this writer claims or rewrites (GC and the controller go by it); absent: unchanged. */
  readonly node?: string;
  /** enable_overlapping_ranges: reserve each claimed address with an OverlappingRangeIPReservation. */
  readonly reservations: boolean;
  /** Time one commit may spend on conflicts and retries before it fails with code 11. */
  readonly budgetMs: number;
  /** Per-request timeout for best-effort clean-up calls on the failure path. */
  readonly cleanupTimeoutMs: number;
  readonly log: CommitLog;
  /**
   * What the host remembers of other writers across its commits (contention.ts): the node agent's, kept for its
   * life; a plugin process's store's and a PoolWriter's own.
   */
  readonly memory: WriteMemory;
}

export interface CommitOptions {
  /** The pool as last seen (the node cache); absent: read from the API first. */
  readonly initial?: PoolState;
  /** Only this node writes the pool (its node slice): a claim planned on `initial` may be reserved without a read. */
  readonly trustInitial?: boolean;
  /** Runs synchronously right before every pool write; throws to stop (a lost lock, a lost lease). */
  readonly beforeWrite?: () => void;
  /** What this node's earlier processes saw of other writers on this pool (the node cache). */
  readonly contention?: ContentionMarks;
  /** The state the commit ended on (written, or confirmed fresh), and the contention now known: the caller's cache. */
  readonly onSettled?: (state: PoolState, contention: ContentionMarks) => void;
  /** A write failed in a way that may have applied it (its answer was lost): the caller's cache is behind it. */
  readonly onUncertain?: () => void;
}

interface Settled<T> {
  readonly value: T;
  readonly state: PoolState;
  /** What was written and the allocations it was written over; absent when nothing was. */
  readonly written?: { readonly change: PoolChange; readonly before: Allocations };
}

/** The pool as the API has it now; a missing pool is empty and gets created by the first write. */
export async function fetchPool(ctx: { api: ApiClient; log: CommitLog }, pool: PoolRef, options: GetOptions = {}): Promise<PoolState> {
  const object = await getObject(ctx.api, 'ippools', pool.name, options);
  if (object === undefined) return { allocations: new Map(), fresh: true };
  return decodePoolObject(object, pool, (msg) => ctx.log.warning(msg));
}

/** A change that only claims one offset. */
function isLoneClaim(change: PoolChange): boolean {
  return change.claim !== undefined && (change.release ?? []).length === 0 && (change.update ?? []).length === 0;
}

/** How a commit backs off: paced by its own attempts' durations, at most 3 s between two (retry.ts). */
export const COMMIT_RETRY = { stepFromAttempt: true, capMs: 3_000 } as const;

export async function commitPool<T>(ctx: CommitContext, pool: PoolRef, plan: Plan<T>, options: CommitOptions = {}): Promise<T> {
  const ip = (value: bigint) => ({ family: pool.range.cidr.family, value });
  const refused = new Set<bigint>();
  /** Reservations this commit created and has not committed: the only ones it may remove. */
  const created = new Map<bigint, Held>();
  /** Reservations found existing for this attachment: held, never removed by this commit. */
  const adopted = new Map<bigint, Held>();
  let state: PoolState | undefined = options.initial;
  /** The write just refused: the version it was planned on (the re-read must show a newer one), and its form. */
  let lastRefusal: { readonly version: string | undefined; readonly jsonClaim: boolean } | undefined;
  /** Lone claims as JSON patches, until one is refused on a version that had not moved (the patch did not fit). */
  let jsonClaims = true;
  /**
   * Collisions with other writers on the very address planned. From the second one on (one can be a leaked or an
   * overlapping range's reservation), plans search from a random point of the range: a burst of writers racing for
   * the lowest free address would otherwise probe every address one conflict at a time.
   */
  let collisions = 0;
  const contentionKey = `${ctx.api.namespace}/${pool.name}`;
  ctx.memory.remember(contentionKey, options.contention);
  // A pool this process raced others on a moment ago (a node agent serving a burst) is searched spread at once.
  let spread: number | undefined = ctx.memory.contention.contended(contentionKey, monotonicMs()) ? Math.random() : undefined;
  /** The claim of a write that met a conflict. */
  let contested: bigint | undefined;

  /**
   * The pool again: after a refused write, from the API server's watch cache if it already holds a newer version than
   * the one refused (it nearly always does: the write that won is milliseconds old), else a quorum read.
   */
  const readAgain = async (refusedVersion: string | undefined): Promise<PoolState> => {
    if (refusedVersion !== undefined) {
      const cached = await fetchPool(ctx, pool, { notOlderThan: refusedVersion });
      if (cached.resourceVersion !== undefined && cached.resourceVersion !== refusedVersion) return cached;
    }
    return fetchPool(ctx, pool);
  };

  /**
   * The API's view of a pool known from the node cache: served from the API server's watch cache, never older than
   * the cached version. The node cache holds this node's own last write (it is dropped when a write's answer was
   * lost), and this node's records are written only by this node, so such a view is as good as a quorum read taken
   * the watch's delay earlier — a stall that short, which every decision here already tolerates.
   */
  const freshen = (known: PoolState): Promise<PoolState> =>
    fetchPool(ctx, pool, known.resourceVersion === undefined ? {} : { notOlderThan: known.resourceVersion });

  const collided = (): void => {
    ctx.memory.busy.mark(contentionKey, monotonicMs());
    if (++collisions < 2) return;
    spread ??= Math.random();
    ctx.memory.contention.mark(contentionKey, monotonicMs());
  };

  const attempt = async (): Promise<Settled<T> | typeof CONFLICT> => {
    if (lastRefusal !== undefined || state === undefined) state = await readAgain(lastRefusal?.version);
    // A claim refused, yet the pool had not moved: the object is not what the JSON patch expects (no spec.allocations).
    if (lastRefusal?.jsonClaim === true && lastRefusal.version === state.resourceVersion) jsonClaims = false;
    lastRefusal = undefined;
    // A write planned on a fresh view lost to another writer's claim of the very same address.
    if (contested !== undefined && state.allocations.has(contested)) collided();
    contested = undefined;
    // Each turn returns, turns the state fresh, or grows `refused`: bounded by the range.
    for (;;) {
      const planned = plan(state.allocations, refused, { reserved: new Set([...created.keys(), ...adopted.keys()]), ...(spread === undefined ? {} : { spread }) });
      if (planned.change === null) {
        if (!state.fresh) {
          state = await freshen(state); // "nothing to do" is confirmed on the API's view, never the node cache's
          continue;
        }
        return { value: planned.value, state };
      }
      const change = stamped(planned.change, ctx.node);
      const claim = change.claim;
      if (claim !== undefined && refusesClaim(state.retired, pool.assignedIn)) {
        if (!state.fresh) {
          state = await freshen(state);
          continue;
        }
        throw new HereaboutsError(ErrorKind.Unavailable, `IPPool ${pool.name} was retired: its node slice was released after this request read it`, {
          details: 'the next ADD reads this node\'s current slice',
        });
      }
      if (claim !== undefined && ctx.reservations && !created.has(claim.address) && !adopted.has(claim.address)) {
        if (!state.fresh && options.trustInitial !== true) {
          state = await freshen(state); // reserve only what this plan can commit
          continue;
        }
        const outcome = await reserve(ctx.api, pool, ip(claim.address), claim.record);
        if (outcome.kind === 'taken') {
          ctx.log.info(`IPPool ${pool.name}: ${formatIP(ip(claim.address))} is reserved through an overlapping range; planning again`);
          refused.add(claim.address);
          if (state.fresh) collided(); // planned on the API's view: a writer racing for the same address
          else state = await freshen(state); // someone else got there first: the cached view is behind
          continue;
        }
        if (outcome.kind === 'created') created.set(claim.address, outcome.held);
        else adopted.set(claim.address, outcome.held);
        // On a pool others keep writing, the version planned on is likely gone by the time the reservation is
        // answered: a read from the watch cache now (~2 ms of API server CPU) spares a refused write (~12 ms) and
        // the round trips and backoff after it. Only a writer that does not reserve first (Whereabouts, a network
        // without enable_overlapping_ranges) can commit the reserved address meanwhile: the plan then moves on.
        if (state.fresh && options.trustInitial !== true && ctx.memory.busy.contended(contentionKey, monotonicMs())) {
          state = await freshen(state);
          continue;
        }
      }
      const next = applyChange(pool, state.allocations, change);
      options.beforeWrite?.();
      // A slice assigned again after its pool was retired: the claim lifts the mark in the same conditional write.
      const unretire = claim !== undefined && state.retired !== undefined;
      const lone = jsonClaims && !unretire && claim !== undefined && isLoneClaim(change) ? claim : undefined;
      let written: PoolState | typeof CONFLICT;
      try {
        written = await writePool(ctx, pool, state, next, { unretire, ...(lone === undefined ? {} : { lone }) });
      } catch (err) {
        // The write may have landed: its claim's reservation must then stay, or an overlapping range could reuse it,
        // and the caller's cache no longer says what this node last wrote.
        if (mayHaveApplied(err)) {
          if (claim !== undefined) created.delete(claim.address);
          options.onUncertain?.();
        }
        throw err;
      }
      if (written === CONFLICT) {
        ctx.log.info(`IPPool ${pool.name}: changed since resourceVersion ${state.resourceVersion ?? '(none)'}; reading it again`);
        lastRefusal = { version: state.resourceVersion, jsonClaim: lone !== undefined };
        if (state.fresh) {
          contested = claim?.address; // planned on the API's view: another writer raced us
          ctx.memory.busy.mark(contentionKey, monotonicMs());
        }
        return CONFLICT;
      }
      if (claim !== undefined) {
        created.delete(claim.address);
        adopted.delete(claim.address);
      }
      return { value: planned.value, state: written, written: { change, before: state.allocations } };
    }
  };

  let settled: Settled<T>;
  try {
    const outcome = await retryOnConflict(attempt, { ...COMMIT_RETRY, budgetMs: ctx.budgetMs });
    if (outcome.kind !== 'done') {
      throw new HereaboutsError(ErrorKind.Conflict, `IPPool ${pool.name}: gave up after ${outcome.conflicts} conflicting writes in ${ctx.budgetMs} ms`, {
        details: 'other writers keep changing this pool; retry the request',
      });
    }
    settled = outcome.value;
  } catch (err) {
    await settleUnused(ctx, pool, { created, adopted }, undefined);
    throw toStoreError(err, `IPPool ${pool.name}`);
  }
  options.onSettled?.(settled.state, ctx.memory.marksOf(contentionKey));
  await settleUnused(ctx, pool, { created, adopted }, settled.state.allocations);
  if (ctx.reservations && settled.written !== undefined) await settleWritten(ctx, pool, settled.written.change, settled.written.before);
  return settled.value;
}

/**
 * Creates the pool (first write), or patches it conditional on the resourceVersion read: a lone claim as a JSON
 * patch, anything else as a merge patch; CONFLICT when someone else wrote first (or the JSON patch did not apply).
 */
async function writePool(
  ctx: CommitContext,
  pool: PoolRef,
  state: PoolState,
  next: Allocations,
  options: { unretire: boolean; lone?: NonNullable<PoolChange['claim']> },
): Promise<PoolState | typeof CONFLICT> {
  const warn = (msg: string) => ctx.log.warning(msg);
  if (state.resourceVersion === undefined) {
    const created = await createObject(ctx.api, 'ippools', newPoolObject(pool, ctx.api.namespace, next));
    if (created.kind === 'exists') return CONFLICT;
    ctx.log.debug(`IPPool ${pool.name}: created`);
    return decodePoolObject(created.object, pool, warn);
  }
  if (options.lone !== undefined) {
    const { address, record } = options.lone;
    const result = await jsonPatch(ctx.api, 'ippools', pool.name, claimPatch(pool.range.cidr, state.resourceVersion, address, record));
    if (result.kind !== 'patched') return CONFLICT;
    return decodePoolObject(result.object, pool, warn);
  }
  const patch = allocationsPatch(pool.range.cidr, state.allocations, next, state.resourceVersion, options);
  const result = await mergePatch(ctx.api, 'ippools', pool.name, patch);
  // Gone: deleted since we read it; the re-read finds it missing and the next write creates it again.
  if (result.kind !== 'patched') return CONFLICT;
  return decodePoolObject(result.object, pool, warn);
}

/** Records written by this node carry its name (claims, and the new container of an idempotent ADD). */
function stamped(change: PoolChange, node: string | undefined): PoolChange {
  if (node === undefined) return change;
  const withNode = (record: AllocationRecord): AllocationRecord => (record.node === node ? record : { ...record, node });
  return {
    ...change,
    ...(change.claim === undefined ? {} : { claim: { ...change.claim, record: withNode(change.claim.record) } }),
    ...(change.update === undefined ? {} : { update: change.update.map((u) => ({ ...u, record: withNode(u.record) })) }),
  };
}

/**
 * Reservations held but not committed. One the pool now holds for another attachment (another writer, e.g.
 * Whereabouts, committed it first and reserves only after its pool write) is handed to that holder: deleting it
 * would leave a committed address unreserved. Otherwise a created one is removed on the version created, and an
 * adopted one stays as it was found (its pod's; the controller judges it).
 */
async function settleUnused(
  ctx: CommitContext,
  pool: PoolRef,
  held: { readonly created: ReadonlyMap<bigint, Held>; readonly adopted: ReadonlyMap<bigint, Held> },
  final: Allocations | undefined,
): Promise<void> {
  for (const [value, reservation] of [...held.created, ...held.adopted]) {
    const holder = final?.get(value);
    try {
      if (holder !== undefined) await handOver(ctx.api, reservation, holder);
      else if (held.created.has(value)) await dropCreated(ctx.api, reservation, { timeoutMs: ctx.cleanupTimeoutMs });
    } catch (err) {
      ctx.log.warning(`IPPool ${pool.name}: could not settle the unused reservation ${reservation.name} (the controller will): ${messageOf(err)}`);
    }
  }
}

/** After the pool write (the pool is the truth): released addresses lose their reservation, rewritten records' follow. */
async function settleWritten(ctx: CommitContext, pool: PoolRef, change: PoolChange, before: Allocations): Promise<void> {
  const family = pool.range.cidr.family;
  for (const value of change.release ?? []) {
    const record = before.get(value);
    if (record === undefined) continue;
    try {
      const result = await releaseReservation(ctx.api, pool, { family, value }, record);
      if (result === 'kept') ctx.log.info(`IPPool ${pool.name}: the reservation of ${formatIP({ family, value })} names another attachment now; kept`);
    } catch (err) {
      // The address is free in the pool; its stale reservation only blocks it until the controller removes it.
      ctx.log.warning(`IPPool ${pool.name}: released ${formatIP({ family, value })} but could not delete its reservation: ${messageOf(err)}`);
    }
  }
  for (const { address, record } of change.update ?? []) {
    try {
      await followRecord(ctx.api, pool, { family, value: address }, record);
    } catch (err) {
      ctx.log.warning(`IPPool ${pool.name}: could not bring the reservation of ${formatIP({ family, value: address })} in step: ${messageOf(err)}`);
    }
  }
}
