// Before a commit reports success (DESIGN §9, "in-flight work is visible"): the reservation its committed claim relies
// on still exists as the commit left it. Between the reservation and the pool write it can go: Whereabouts' DEL
// deletes reservations by name, unconditionally, and a controller may have judged it orphaned. Once the pool write
// landed the pool is the truth: a reservation that is gone is created again; one that names another attachment now
// (which may hold the address in an overlapping range) makes the commit give the address back and plan again.
import { monotonicMs } from '../../clock.ts';
import { formatIP } from '../../ip/address.ts';
import { retryTransient } from '../../kube/retry.ts';
import type { AllocationRecord, Plan, PoolRef } from '../store.ts';
import type { CommitContext } from './commit.ts';
import type { Relied } from './pool-commit.ts';
import { confirmReservation } from './reservations.ts';

/**
 * Confirms each relied-on reservation (re-creating a missing one); the addresses whose reservation is taken. A
 * confirmation that fails for a passing reason (unreachable, 5xx, 429) is tried again until `deadlineMs`
 * (monotonic): the pool write has landed, and only a confirmed claim may be reported.
 */
export async function confirmClaims(
  ctx: CommitContext,
  pool: PoolRef,
  relied: ReadonlyMap<bigint, Relied>,
  deadlineMs: number,
): Promise<bigint[]> {
  const lost: bigint[] = [];
  for (const [value, { held, record }] of relied) {
    const ip = { family: pool.range.cidr.family, value };
    // A read, and a create of what is missing: both safe to repeat.
    const outcome = await retryTransient(() => confirmReservation(ctx.api, pool, ip, held, record), {
      budgetMs: Math.max(0, deadlineMs - monotonicMs()),
    });
    if (outcome === 'restored')
      ctx.log.warning(
        `IPPool ${pool.name}: the reservation ${held.name} of ${formatIP(ip)} was deleted while this request relied on it; created it again`,
      );
    if (outcome === 'taken') {
      ctx.log.warning(
        `IPPool ${pool.name}: the reservation ${held.name} of ${formatIP(ip)} names another attachment now; giving the address back and planning again`,
      );
      lost.push(value);
    }
  }
  return lost;
}

/** Releases `addresses` where the pool still holds them for the records this commit wrote, and nothing else. */
export function giveBack(relied: ReadonlyMap<bigint, Relied>, addresses: readonly bigint[]): Plan<null> {
  return (current) => {
    const release = addresses.filter((address) => {
      const now = current.get(address);
      const mine = relied.get(address)?.record;
      return now !== undefined && mine !== undefined && sameAttachment(now, mine);
    });
    return { value: null, change: release.length === 0 ? null : { release } };
  };
}

function sameAttachment(a: AllocationRecord, b: AllocationRecord): boolean {
  return a.containerId === b.containerId && a.podRef === b.podRef && a.ifname === b.ifname;
}
