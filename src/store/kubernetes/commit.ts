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
// reservation (a leak the controller reclaims, not a duplicate). Before it reports success, it confirms that the
// reservation its committed claim relies on still exists (confirm-claims.ts): one deleted meanwhile is created again,
// one another attachment holds now makes it give the address back and plan again without it. A caller's cache that
// cannot be written after the write landed does not fail the commit (the API is the truth): the caller drops it.
//
// The steps are PoolCommit's (pool-commit.ts); this is the entry, and the terms a caller commits on.
import { ErrorKind, HereaboutsError, isKind, messageOf } from '../../errors.ts';
import type { Allocations, Plan, PoolRef } from '../store.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { ContentionMarks, WriteMemory } from './contention.ts';
import { toStoreError } from './api-errors.ts';
import type { PoolState } from './pool-object.ts';
import { PoolCommit, type Settled } from './pool-commit.ts';
import { retryOnConflict, retryTransient } from '../../kube/retry.ts';
import { monotonicMs } from '../../clock.ts';
import { confirmClaims, giveBack } from './confirm-claims.ts';
import type { WhereaboutsLease } from './whereabouts-lease.ts';
import type { Held } from './reservations.ts';

export { fetchPool } from './pool-read.ts';

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
  /**
   * The caller's cache may be behind what the API holds: a write failed in a way that may have applied it (its answer
   * was lost), or onSettled threw. The caller drops its cache.
   */
  readonly onUncertain?: () => void;
  /** Told of a released or rewritten record whose reservation the commit could not bring in step (settle-reservations.ts). */
  readonly unfollowed?: (address: bigint) => void;
  /** Told of each claim the commit landed and confirmed, with its reservation as the commit left it. */
  readonly claimed?: (address: bigint, held: Held) => void;
  /** The reservation of an address as the caller last wrote it, if it knows: a rewritten record's follows unread. */
  readonly knownReservation?: (address: bigint) => Held | undefined;
  /**
   * Whereabouts' Lease of the pool (whereabouts-lease.ts): the commit writes only when it allows, else it throws
   * LeaseNeeded for the caller to wait for the Lease outside its pool lock and run it again.
   */
  readonly lease?: WhereaboutsLease;
}

/** How a commit backs off: paced by its own attempts' durations, at most 3 s between two (retry.ts). */
export const COMMIT_RETRY = { stepFromAttempt: true, capMs: 3_000 } as const;

/** Commits `plan` on `pool`: attempts until one is not refused (or the budget is spent), confirms, then settles. */
export async function commitPool<T>(
  ctx: CommitContext,
  pool: PoolRef,
  plan: Plan<T>,
  options: CommitOptions = {},
): Promise<T> {
  const commit = new PoolCommit(ctx, pool, plan, options);
  const deadline = monotonicMs() + ctx.budgetMs;
  let settled: Settled<T>;
  let landed: Settled<T> | undefined; // a write of this commit that landed, while its claims are not confirmed
  try {
    for (;;) {
      settled = await attempts(ctx, pool, commit, deadline);
      landed = settled;
      // A landed write deserves its confirmation even when the budget is spent: a few more seconds at most.
      const lost = await confirmClaims(
        ctx,
        pool,
        commit.relied,
        Math.max(deadline, monotonicMs() + ctx.cleanupTimeoutMs),
      );
      if (lost.length === 0) break;
      await withdraw(ctx, pool, commit, { settled, lost, deadline, options });
    }
  } catch (err) {
    await commit.settleUnused(await undo(ctx, pool, commit, landed, options));
    throw toStoreError(err, `IPPool ${pool.name}`); // LeaseNeeded passes as it is
  }
  await commit.settle(settled);
  for (const [address, { held }] of commit.relied) options.claimed?.(address, held);
  return settled.value;
}

/**
 * The commit fails after one of its writes landed (its claims could not be confirmed, or given back), or after a
 * write whose answer was lost: the request reports failure, so the claims go back too, or a retry of the same pod
 * would find its record and use an address whose reservation may be gone. Best effort within the cleanup timeout.
 * Answers the allocations the pool holds afterwards as far as known (undefined: unknown), so that settleUnused()
 * keeps a reservation whose claim may have stayed and removes one this commit created for a claim given back.
 */
async function undo<T>(
  ctx: CommitContext,
  pool: PoolRef,
  commit: PoolCommit<T>,
  landed: Settled<T> | undefined,
  options: CommitOptions,
): Promise<Allocations | undefined> {
  const claims = new Map(commit.relied);
  for (const lost of commit.uncertain) claims.set(lost.address, lost);
  // What the pool held after this commit's last write that landed, if one did; the give-back reads the pool afresh.
  const known = landed === undefined ? undefined : (commit.state ?? landed.state);
  if (claims.size === 0) return known?.allocations;
  const { beforeWrite, onUncertain } = options;
  let after: PoolState | undefined;
  try {
    // A conditional release planned on a fresh read each time: safe to repeat after a passing failure.
    const giveBackOnce = () =>
      commitPool(
        { ...ctx, reservations: false, budgetMs: ctx.cleanupTimeoutMs },
        pool,
        giveBack(claims, [...claims.keys()]),
        {
          ...(beforeWrite === undefined ? {} : { beforeWrite }),
          ...(onUncertain === undefined ? {} : { onUncertain }),
          onSettled: (state) => {
            after = state;
          },
        },
      );
    await retryTransient(giveBackOnce, {
      budgetMs: ctx.cleanupTimeoutMs,
      passing: (err) => isKind(err, ErrorKind.Unavailable), // the store's word for a passing API failure
    });
  } catch (err) {
    onUncertain?.();
    ctx.log.warning(
      `IPPool ${pool.name}: could not give back the claims of this failed request (its DEL, or the controller, releases them): ${messageOf(err)}`,
    );
    return known?.allocations;
  }
  for (const [address, claim] of claims) if (claim.created) commit.created.set(address, claim.held);
  return after?.allocations;
}

/** The commit's attempts until a write lands or nothing is to be written (retry.ts), within the deadline. */
async function attempts<T>(
  ctx: CommitContext,
  pool: PoolRef,
  commit: PoolCommit<T>,
  deadline: number,
): Promise<Settled<T>> {
  const outcome = await retryOnConflict(() => commit.attempt(), { ...COMMIT_RETRY, budgetMs: remaining(deadline) });
  if (outcome.kind !== 'done') {
    throw new HereaboutsError(
      ErrorKind.Conflict,
      `IPPool ${pool.name}: gave up after ${outcome.conflicts} conflicting writes in ${ctx.budgetMs} ms`,
      {
        details: 'other writers keep changing this pool; retry the request',
      },
    );
  }
  return outcome.value;
}

/**
 * Gives back the claims whose reservation another attachment holds now: a conditional write (through this same path,
 * creating no reservation) releases them where the pool still holds them for this commit's records. The commit then
 * plans again on the pool as that write left it, with those addresses refused.
 */
async function withdraw<T>(
  ctx: CommitContext,
  pool: PoolRef,
  commit: PoolCommit<T>,
  turn: { settled: Settled<T>; lost: readonly bigint[]; deadline: number; options: CommitOptions },
): Promise<void> {
  const { beforeWrite, onUncertain } = turn.options;
  await commitPool(
    { ...ctx, reservations: false, budgetMs: remaining(turn.deadline) },
    pool,
    giveBack(commit.relied, turn.lost),
    {
      initial: turn.settled.state,
      ...(beforeWrite === undefined ? {} : { beforeWrite }),
      ...(onUncertain === undefined ? {} : { onUncertain }),
      onSettled: (state) => {
        commit.state = state;
      },
    },
  );
  for (const address of turn.lost) {
    commit.refused.add(address);
    commit.relied.delete(address);
  }
}

function remaining(deadline: number): number {
  return Math.max(0, deadline - monotonicMs());
}
