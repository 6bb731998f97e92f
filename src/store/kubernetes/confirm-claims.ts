// Before a commit reports success (DESIGN §9, "in-flight work is visible"): the reservation its committed claim relies
// on still exists as the commit left it. Between the reservation and the pool write it can go: Whereabouts' DEL
// deletes reservations by name, unconditionally, and a controller may have judged it orphaned. Once the pool write
// landed the pool is the truth: a reservation that is gone is created again; one that names another attachment now
// (which may hold the address in an overlapping range) makes the commit give the address back and plan again.
import { monotonicMs, sleep } from '../../clock.ts';
import { formatIP, type IPAddress } from '../../ip/address.ts';
import { isTransient } from '../../kube/errors.ts';
import type { AllocationRecord, Plan, PoolRef } from '../store.ts';
import type { CommitContext } from './commit.ts';
import type { Relied } from './pool-commit.ts';
import { confirmReservation, type Confirmed, type Held } from './reservations.ts';

/** The first pause after a confirmation failed for a passing reason; doubled each time, at most CONFIRM_CAP_MS. */
const CONFIRM_BASE_MS = 50;
const CONFIRM_CAP_MS = 1_000;

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
    const outcome = await confirmOne(ctx, pool, { ip, held, record }, deadlineMs);
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

/** One confirmation (a read, and a create of what is missing: both safe to repeat), tried again while it may pass. */
async function confirmOne(
  ctx: CommitContext,
  pool: PoolRef,
  claim: { readonly ip: IPAddress; readonly held: Held; readonly record: AllocationRecord },
  deadlineMs: number,
): Promise<Confirmed> {
  for (let pause = CONFIRM_BASE_MS; ; pause = Math.min(CONFIRM_CAP_MS, pause * 2)) {
    try {
      return await confirmReservation(ctx.api, pool, claim.ip, claim.held, claim.record);
    } catch (err) {
      if (!isTransient(err) || monotonicMs() + pause > deadlineMs) throw err;
      await sleep(pause);
    }
  }
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
