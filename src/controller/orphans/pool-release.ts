// Releasing orphaned allocations from one IPPool through the store's write path (writer.ts, commit.ts): the plan keeps of the
// candidates only those still holding the same record and still orphaned on the pool as cached, and the write is
// conditional on that version. A 409 (a node allocated or released meanwhile) reads again and decides again; an
// allocation that appeared in between was never a candidate, so it is never removed in this pass. Reservations of
// released addresses are left to the reservation pass, which deletes one only once its address is free everywhere.
import { HereaboutsError } from '../../errors.ts';
import { formatIP } from '../../ip/address.ts';
import { lastOf, networkOf, type Cidr } from '../../ip/cidr.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { AllocationRecord, PoolRef } from '../../store/store.ts';
import type { Log } from '../../log/json-log.ts';
import type { OrphanReason } from './orphans.ts';
import type { PoolView } from '../pools/view.ts';

export interface Candidate {
  readonly address: bigint;
  readonly record: AllocationRecord;
}

export interface Released {
  readonly pool: string;
  readonly ip: string;
  readonly podRef: string;
  readonly reason: OrphanReason;
}

export interface ReleaseOptions {
  /** Checked right before every write: a replica that lost the lease stops at once. */
  readonly leading: () => boolean;
  readonly log: Log;
  /** Time spent on conflicts before the pool's orphans wait for the next pass. */
  readonly budgetMs?: number;
}

export type Judge = (record: AllocationRecord, ip: string) => OrphanReason | undefined;

const DEFAULT_BUDGET_MS = 5_000;

class NotLeading extends Error {}

/** The same attachment: a record re-written for another container or pod is not the one judged. */
export const sameRecord = (a: AllocationRecord, b: AllocationRecord): boolean =>
  a.containerId === b.containerId &&
  a.podRef === b.podRef &&
  a.ifname === b.ifname &&
  (a.podUid ?? '') === (b.podUid ?? '');

/** A pool to free addresses in: the range's bounds and exclusions play no part (the controller, `hereabouts release`). */
export function releaseRef(name: string, cidr: Cidr, network: string): PoolRef {
  return {
    name,
    network,
    networkNamed: network !== '',
    range: { cidr, start: networkOf(cidr), end: lastOf(cidr), exclude: [] },
  };
}

/** The allocations released (empty when none was still an orphan, the pool kept changing, or leadership was lost). */
export async function releaseFromPool(
  api: ApiClient,
  pool: PoolView,
  candidates: readonly Candidate[],
  judge: Judge,
  options: ReleaseOptions,
): Promise<Released[]> {
  const range = pool.range;
  if (range === undefined || !options.leading()) return [];
  const ref = releaseRef(pool.name, range, '');
  try {
    return await new PoolWriter(api).commit(
      ref,
      (current) => {
        const released: Released[] = [];
        const addresses: bigint[] = [];
        for (const candidate of candidates) {
          const now = current.get(candidate.address);
          if (now === undefined || !sameRecord(now, candidate.record)) continue; // released or re-allocated meanwhile
          const ip = formatIP({ family: range.family, value: candidate.address });
          const reason = judge(now, ip);
          if (reason === undefined) continue;
          addresses.push(candidate.address);
          released.push({ pool: pool.name, ip, podRef: now.podRef, reason });
        }
        return { change: addresses.length === 0 ? null : { release: addresses }, value: released };
      },
      {
        budgetMs: options.budgetMs ?? DEFAULT_BUDGET_MS,
        log: options.log,
        // Planned on the cached pool and written conditionally on its version: no read of a pool that has not
        // changed since (a 1 000-address pool is 100 KB); one that has is refused, read and judged again.
        ...(pool.resourceVersion === ''
          ? {}
          : {
              initial: { allocations: new Map(pool.allocations), resourceVersion: pool.resourceVersion, fresh: false },
            }),
        beforeWrite: () => {
          if (!options.leading()) throw new NotLeading();
        },
      },
    );
  } catch (err) {
    if (err instanceof NotLeading) return [];
    // The pool kept changing (code 11), or its spec.range no longer is this range: its orphans wait for the next pass.
    if (err instanceof HereaboutsError) {
      options.log.info(`IPPool ${pool.name}: nothing released this pass: ${err.message}`);
      return [];
    }
    throw err;
  }
}
