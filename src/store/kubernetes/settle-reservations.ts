// What a commit does with the reservations it held once its pool write is settled (commit.ts, pool-commit.ts): the
// ones it held but did not commit, and those of the addresses its write released or rewrote.
import { formatIP } from '../../ip/address.ts';
import { retryTransient } from '../../kube/retry.ts';
import { messageOf } from '../../errors.ts';
import type { Allocations, PoolChange, PoolRef } from '../store.ts';
import type { CommitContext } from './commit.ts';
import { dropCreated, followRecord, handOver, releaseReservation, type Held } from './reservations.ts';

/**
 * Reservations held but not committed. One the pool now holds for another attachment (another writer, e.g.
 * Whereabouts, committed it first and reserves only after its pool write) is handed to that holder: deleting it
 * would leave a committed address unreserved. Otherwise a created one is removed on the version created, and an
 * adopted one stays as it was found (its pod's; the controller judges it).
 */
export async function settleUnused(
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
      ctx.log.warning(
        `IPPool ${pool.name}: could not settle the unused reservation ${reservation.name} (the controller will): ${messageOf(err)}`,
      );
    }
  }
}

/** After the pool write (the pool is the truth): released addresses lose their reservation, rewritten records' follow. */
export async function settleWritten(
  ctx: CommitContext,
  pool: PoolRef,
  change: PoolChange,
  before: Allocations,
  options: {
    readonly mayCreate?: () => Promise<boolean>;
    /** Told of a released or rewritten record whose reservation could not be brought in step (the caller may try again). */
    readonly unfollowed?: (address: bigint) => void;
    /** The reservation of an address as the caller last wrote it, if it knows (followRecord's `known`). */
    readonly known?: (address: bigint) => Held | undefined;
  } = {},
): Promise<void> {
  const family = pool.range.cidr.family;
  for (const value of change.release ?? []) {
    const record = before.get(value);
    if (record === undefined) continue;
    try {
      // Tried again on a passing failure (a delete whose answer was lost finds it gone): a DEL that succeeded must
      // leave no reservation naming its attachment (issue 42); the controller's pass is for what still fails.
      const result = await retryTransient(() => releaseReservation(ctx.api, pool, { family, value }, record), {
        budgetMs: ctx.cleanupTimeoutMs,
      });
      if (result === 'kept')
        ctx.log.info(
          `IPPool ${pool.name}: the reservation of ${formatIP({ family, value })} names another attachment now; kept`,
        );
    } catch (err) {
      // The address is free in the pool; its stale reservation blocks it until the caller tries again or the
      // controller removes it.
      options.unfollowed?.(value);
      ctx.log.warning(
        `IPPool ${pool.name}: released ${formatIP({ family, value })} but could not delete its reservation: ${messageOf(err)}`,
      );
    }
  }
  for (const { address, record } of change.update ?? []) {
    try {
      // Tried again on a passing failure: an address this attachment holds without its reservation (a crash in
      // another writer's window) is open to an overlapping range until it has one.
      const previous = before.get(address);
      const known = options.known?.(address);
      const follow = {
        ...(options.mayCreate === undefined ? {} : { mayCreate: options.mayCreate }),
        ...(previous === undefined ? {} : { previous }),
        ...(known === undefined ? {} : { known }),
      };
      await retryTransient(() => followRecord(ctx.api, pool, { family, value: address }, record, follow), {
        budgetMs: ctx.cleanupTimeoutMs,
      });
    } catch (err) {
      options.unfollowed?.(address);
      ctx.log.warning(
        `IPPool ${pool.name}: could not bring the reservation of ${formatIP({ family, value: address })} in step: ${messageOf(err)}`,
      );
    }
  }
}
