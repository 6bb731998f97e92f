// The plugin's side of the write path (DESIGN §5): under the pool's file lock on this node, commit (commit.ts) from
// the cached IPPool, re-check the lock synchronously right before each write, and keep the cache in step with what
// the API confirmed.
import { mkdirSync } from 'node:fs';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import type { Logger } from '../../log/logger.ts';
import { messageOf } from '../../errors.ts';
import { acquireLock, tryAcquireLock, type HeldLock, type LockTiming } from '../../fs/lock.ts';
import { poolPaths, type PoolPaths } from '../local/paths.ts';
import type { Plan, PoolRef } from '../store.ts';
import { commitPool, type CommitContext } from './commit.ts';
import type { ContentionMarks } from './contention.ts';
import { dropCachedPool, readCachedPool, writeCachedPool, type CacheScope } from './pool-cache.ts';
import type { PoolState } from './pool-object.ts';
import { LeaseNeeded, WhereaboutsLease } from './whereabouts-lease.ts';
import { toStoreError } from './api-errors.ts';
import type { Held } from './reservations.ts';
import type { LeaderTiming } from '../../config/types.ts';

export { fetchPool } from './commit.ts';

export interface WriteContext extends CommitContext {
  readonly node: string;
  readonly cacheDir: string;
  readonly scope: CacheScope;
  readonly lockTiming: LockTiming;
  readonly log: Logger;
  /**
   * Write only as the holder of Whereabouts' Lease while a Whereabouts plugin wrote it lately (whereabouts-lease.ts),
   * with these timings. Absent: never touch it.
   */
  readonly whereaboutsLease?: LeaderTiming;
}

const DIR_MODE = 0o700;

/** What a caller may ask of an update beyond its plan. */
export interface UpdateHooks {
  /** Told of a released or rewritten record whose reservation could not be brought in step. */
  readonly unfollowed?: (address: bigint) => void;
  /** Told of each claim landed and confirmed, with its reservation as written (CommitOptions.claimed). */
  readonly claimed?: (address: bigint, held: Held) => void;
  /** The reservation of an address as the caller last wrote it (CommitOptions.knownReservation). */
  readonly knownReservation?: (address: bigint) => Held | undefined;
  /** Told, before the update waits for Whereabouts' Lease or plans, that a Whereabouts plugin writes the pool. */
  readonly mixed?: () => void;
  /** Runs right before every pool write (with the pool lock's check); throws to stop. */
  readonly beforeWrite?: () => void;
}

export async function updatePool<T>(
  ctx: WriteContext,
  pool: PoolRef,
  plan: Plan<T>,
  hooks: UpdateHooks = {},
): Promise<T> {
  const paths = poolPaths(ctx.cacheDir, pool);
  try {
    mkdirSync(paths.networkDir, { recursive: true, mode: DIR_MODE });
  } catch (err) {
    throw new HereaboutsError(ErrorKind.Io, `cannot create cache directory ${paths.networkDir}: ${messageOf(err)}`, {
      cause: err,
    });
  }
  const lease =
    ctx.whereaboutsLease !== undefined
      ? new WhereaboutsLease(ctx.api, pool, {
          timing: ctx.whereaboutsLease,
          node: ctx.node,
          cleanupTimeoutMs: ctx.cleanupTimeoutMs,
          log: ctx.log,
          forbidden: ctx.memory.forbiddenLeases,
          ...(hooks.mixed === undefined ? {} : { onMixed: hooks.mixed }),
        })
      : undefined;
  try {
    // The Lease is waited for outside the pool lock: the node's other processes go on meanwhile, and none waits for
    // it while holding the lock (the two never deadlock). Throws once LEASE_WAIT_MS have passed.
    await leaseStep(pool, () => lease?.prepare());
    for (;;) {
      try {
        return await updateLocked(ctx, pool, plan, { paths, hooks, ...(lease === undefined ? {} : { lease }) });
      } catch (err) {
        if (!(err instanceof LeaseNeeded) || lease === undefined) throw err;
      }
      await leaseStep(pool, () => lease.acquire()); // it was lost while the update ran
    }
  } finally {
    await lease?.release();
  }
}

/** A step on Whereabouts' Lease, its API failures reported as the store's (code 11 for an unreachable API). */
async function leaseStep(pool: PoolRef, step: () => Promise<void> | undefined): Promise<void> {
  try {
    await step();
  } catch (err) {
    throw toStoreError(err, `IPPool ${pool.name}`);
  }
}

/** One run of the update under the pool's file lock. */
async function updateLocked<T>(
  ctx: WriteContext,
  pool: PoolRef,
  plan: Plan<T>,
  options: { readonly paths: PoolPaths; readonly hooks: UpdateHooks; readonly lease?: WhereaboutsLease },
): Promise<T> {
  const { paths, lease, hooks } = options;
  const waited = async (): Promise<HeldLock> => {
    const held = await acquireLock(paths, ctx.lockTiming, { log: ctx.log });
    lease?.waitedForLock();
    return held;
  };
  const lock = tryAcquireLock(paths, ctx.lockTiming, { log: ctx.log }) ?? (await waited());
  try {
    const cached = readCachedPool(paths, pool, ctx.scope, (msg) => ctx.log.warning(msg));
    return await commitPool(ctx, pool, plan, {
      ...(cached === undefined ? {} : { initial: cached, contention: cached.contention }),
      // This node's own slice is written by this node alone (and the controller's releases, which only free
      // addresses); a sticky area every node writes is not.
      trustInitial: pool.sliceNode !== undefined && pool.sliceNode === ctx.node,
      beforeWrite: () => {
        lock.assertHeld();
        hooks.beforeWrite?.();
      },
      onSettled: (state, contention) => {
        if (state.resourceVersion !== cached?.resourceVersion || marked(contention, cached?.contention ?? {}))
          persist(paths, pool, ctx.scope, state, contention, lock);
      },
      // A write whose answer was lost, or a cache that could not be written: the next update on this node then starts
      // from a quorum read, not from a version older than its own write.
      onUncertain: () => forget(paths, ctx.log),
      ...(lease === undefined ? {} : { lease }),
      ...(hooks.unfollowed === undefined ? {} : { unfollowed: hooks.unfollowed }),
      ...(hooks.claimed === undefined ? {} : { claimed: hooks.claimed }),
      ...(hooks.knownReservation === undefined ? {} : { knownReservation: hooks.knownReservation }),
    });
  } finally {
    await lock.release();
  }
}

function persist(
  paths: PoolPaths,
  pool: PoolRef,
  scope: CacheScope,
  state: PoolState,
  contention: ContentionMarks,
  lock: HeldLock,
): void {
  // A retired pool is never served from the cache, which does not record the mark.
  if (state.resourceVersion === undefined || state.retired !== undefined) dropCachedPool(paths);
  else
    writeCachedPool(
      paths,
      pool,
      scope,
      { allocations: state.allocations, resourceVersion: state.resourceVersion, contention },
      lock,
    );
}

/** Contention this commit saw anew (a mark set or pushed on by more than a second): worth a cache write. */
function marked(now: ContentionMarks, cached: ContentionMarks): boolean {
  const later = (a: number | undefined, b: number | undefined) => a !== undefined && (b === undefined || a > b + 1_000);
  return later(now.collidedUntil, cached.collidedUntil) || later(now.busyUntil, cached.busyUntil);
}

function forget(paths: PoolPaths, log: Logger): void {
  try {
    dropCachedPool(paths);
  } catch (err) {
    log.warning(`cannot remove the pool cache ${paths.data}, which may be behind the API: ${messageOf(err)}`);
  }
}
