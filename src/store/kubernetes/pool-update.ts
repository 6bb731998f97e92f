// The write path of one pool (DESIGN §5): under the pool's file lock on this node, plan on the cached IPPool,
// reserve a claimed address cluster-wide first, then write the pool conditionally on its resourceVersion; on a
// conflict re-read, re-plan and retry with jittered backoff until the time budget is spent.
//
// Invariants: an address is only ever committed through a conditional write (or the creation of the pool), so a
// stale cache costs a retry, never a duplicate; a reservation is removed again only when the pool write is known
// not to have happened (a write that timed out may have been applied, so its reservation stays: a leak the
// controller reclaims, never a duplicate); a plan that writes nothing is confirmed on a fresh read.
import { mkdirSync } from 'node:fs';
import { CniCode, CniError } from '../../cni/errors.ts';
import { formatIP } from '../../ip/address.ts';
import type { Logger } from '../../cni/log.ts';
import { applyChange } from '../local/apply-change.ts';
import { messageOf } from '../local/fs-errors.ts';
import { acquirePoolLock, type HeldLock, type LockTiming } from '../local/lock.ts';
import { poolPaths, type PoolPaths } from '../local/paths.ts';
import type { AllocationRecord, Allocations, Plan, PoolChange, PoolRef } from '../store.ts';
import type { ApiClient } from './api.ts';
import { mayHaveApplied, toCniError } from './errors.ts';
import { dropCachedPool, readCachedPool, writeCachedPool, type CacheScope } from './pool-cache.ts';
import { allocationsPatch, decodePoolObject, newPoolObject, type PoolState } from './pool-object.ts';
import { reserve, unreserve } from './reservations.ts';
import { createObject, getObject, mergePatch } from './resources.ts';

export interface WriteContext {
  readonly api: ApiClient;
  /** Stamped on every record this node writes (GC and the controller go by it). */
  readonly node: string;
  /** enable_overlapping_ranges: reserve each claimed address with an OverlappingRangeIPReservation. */
  readonly reservations: boolean;
  readonly cacheDir: string;
  readonly scope: CacheScope;
  readonly lockTiming: LockTiming;
  /** Total time one update may spend on conflicts and retries before it fails with code 11. */
  readonly budgetMs: number;
  /** Per-request timeout for best-effort clean-up calls on the failure path. */
  readonly cleanupTimeoutMs: number;
  readonly log: Logger;
}

const BACKOFF_BASE_MS = 10;
const BACKOFF_CAP_MS = 400;
const DIR_MODE = 0o700;

export async function updatePool<T>(ctx: WriteContext, pool: PoolRef, plan: Plan<T>): Promise<T> {
  const paths = poolPaths(ctx.cacheDir, pool);
  try {
    mkdirSync(paths.networkDir, { recursive: true, mode: DIR_MODE });
  } catch (err) {
    throw new CniError(CniCode.IoFailure, `cannot create cache directory ${paths.networkDir}: ${messageOf(err)}`, { cause: err });
  }
  const lock = await acquirePoolLock(paths, ctx.lockTiming);
  try {
    return await runLocked(ctx, pool, paths, lock, plan);
  } finally {
    await lock.release();
  }
}

/** The pool as the API has it now; a missing pool is empty and gets created by the first write. */
export async function fetchPool(ctx: Pick<WriteContext, 'api' | 'log'>, pool: PoolRef): Promise<PoolState> {
  const object = await getObject(ctx.api, 'ippools', pool.name);
  if (object === undefined) return { allocations: new Map(), fresh: true };
  return decodePoolObject(object, pool, (msg) => ctx.log.warning(msg));
}

async function runLocked<T>(ctx: WriteContext, pool: PoolRef, paths: PoolPaths, lock: HeldLock, plan: Plan<T>): Promise<T> {
  const deadline = Date.now() + ctx.budgetMs;
  const family = pool.range.cidr.family;
  const ip = (value: bigint) => ({ family, value });
  const refused = new Set<bigint>();
  /** Reservations this update holds that no committed pool write references yet. */
  const reserved = new Set<bigint>();
  let conflicts = 0;
  try {
    const cached = readCachedPool(paths, pool, ctx.scope, (msg) => ctx.log.warning(msg));
    let state = cached ?? (await fetchPool(ctx, pool));
    for (;;) {
      if (Date.now() > deadline) {
        throw new CniError(CniCode.TryAgainLater, `IPPool ${pool.name}: gave up after ${conflicts} conflicting writes in ${ctx.budgetMs} ms`, {
          details: 'other writers keep changing this pool; retry the request',
        });
      }
      const planned = plan(state.allocations, refused);
      if (planned.change === null) {
        if (!state.fresh) {
          state = await fetchPool(ctx, pool);
          continue;
        }
        if (state.resourceVersion !== cached?.resourceVersion) persist(paths, pool, ctx.scope, state, lock);
        await dropReservations(ctx, pool, reserved, 'unused');
        return planned.value;
      }
      const change = stamped(planned.change, ctx.node);
      const next = applyChange(pool, state.allocations, change);
      const claim = change.claim;
      if (ctx.reservations && claim !== undefined && !reserved.has(claim.address)) {
        const outcome = await reserve(ctx.api, pool, ip(claim.address), claim.record);
        if (outcome === 'taken') {
          ctx.log.info(`IPPool ${pool.name}: ${formatted(pool, claim.address)} is reserved through an overlapping range; planning again`);
          refused.add(claim.address);
          // Someone else got there first: the cached pool is likely behind as well.
          if (!state.fresh) state = await fetchPool(ctx, pool);
          continue;
        }
        reserved.add(claim.address);
      }
      let written: PoolState | 'conflict';
      try {
        written = await writePool(ctx, pool, state, next);
      } catch (err) {
        // The write may have landed: its claim's reservation must then stay, or an overlapping range could reuse it.
        if (claim !== undefined && mayHaveApplied(err)) reserved.delete(claim.address);
        throw err;
      }
      if (written === 'conflict') {
        conflicts++;
        ctx.log.info(`IPPool ${pool.name}: changed since resourceVersion ${state.resourceVersion ?? '(none)'}; reading it again`);
        await sleep(backoff(conflicts, deadline));
        state = await fetchPool(ctx, pool);
        continue;
      }
      if (claim !== undefined) reserved.delete(claim.address);
      persist(paths, pool, ctx.scope, written, lock);
      await dropReservations(ctx, pool, reserved, 'unused');
      if (ctx.reservations) await releaseReservations(ctx, pool, state.allocations, change.release ?? []);
      return planned.value;
    }
  } catch (err) {
    await dropReservations(ctx, pool, reserved, 'failed');
    throw toCniError(err, `IPPool ${pool.name}`);
  }
}

/** Creates the pool (first write) or merge-patches it conditionally; 'conflict' when someone else wrote first. */
async function writePool(ctx: WriteContext, pool: PoolRef, state: PoolState, next: Allocations): Promise<PoolState | 'conflict'> {
  const warn = (msg: string) => ctx.log.warning(msg);
  if (state.resourceVersion === undefined) {
    const created = await createObject(ctx.api, 'ippools', newPoolObject(pool, ctx.api.namespace, next));
    if (created.kind === 'exists') return 'conflict';
    ctx.log.debug(`IPPool ${pool.name}: created`);
    return decodePoolObject(created.object, pool, warn);
  }
  const patch = allocationsPatch(pool.range.cidr, state.allocations, next, state.resourceVersion);
  const result = await mergePatch(ctx.api, 'ippools', pool.name, patch);
  // Gone: deleted since we read it; the re-read finds it missing and the next write creates it again.
  if (result.kind !== 'patched') return 'conflict';
  return decodePoolObject(result.object, pool, warn);
}

/** Records written by this node carry its name (claims, and the new container of an idempotent ADD). */
function stamped(change: PoolChange, node: string): PoolChange {
  const withNode = (record: AllocationRecord): AllocationRecord => (record.node === node ? record : { ...record, node });
  return {
    ...change,
    ...(change.claim === undefined ? {} : { claim: { ...change.claim, record: withNode(change.claim.record) } }),
    ...(change.update === undefined ? {} : { update: change.update.map((u) => ({ ...u, record: withNode(u.record) })) }),
  };
}

function persist(paths: PoolPaths, pool: PoolRef, scope: CacheScope, state: PoolState, lock: HeldLock): void {
  if (state.resourceVersion === undefined) dropCachedPool(paths);
  else writeCachedPool(paths, pool, scope, { allocations: state.allocations, resourceVersion: state.resourceVersion }, lock);
}

/** Deletes the reservations of released addresses (after the pool write: the pool is the truth). */
async function releaseReservations(ctx: WriteContext, pool: PoolRef, before: Allocations, released: readonly bigint[]): Promise<void> {
  const family = pool.range.cidr.family;
  for (const value of released) {
    if (!before.has(value)) continue;
    try {
      await unreserve(ctx.api, pool, { family, value });
    } catch (err) {
      // The address is free in the pool; its stale reservation only blocks it until the controller removes it.
      ctx.log.warning(`IPPool ${pool.name}: released ${formatted(pool, value)} but could not delete its reservation: ${messageOf(err)}`);
    }
  }
}

async function dropReservations(ctx: WriteContext, pool: PoolRef, reserved: Set<bigint>, why: 'unused' | 'failed'): Promise<void> {
  const family = pool.range.cidr.family;
  for (const value of [...reserved]) {
    try {
      await unreserve(ctx.api, pool, { family, value }, { timeoutMs: ctx.cleanupTimeoutMs });
      reserved.delete(value);
    } catch (err) {
      ctx.log.warning(
        `IPPool ${pool.name}: could not remove the ${why} reservation of ${formatted(pool, value)} (the controller will): ${messageOf(err)}`,
      );
    }
  }
}

function formatted(pool: PoolRef, value: bigint): string {
  return formatIP({ family: pool.range.cidr.family, value });
}

function backoff(attempt: number, deadline: number): number {
  const cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  const delay = cap / 2 + Math.random() * (cap / 2);
  return Math.max(0, Math.min(delay, deadline - Date.now()));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
