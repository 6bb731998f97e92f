// One cleanup pass: orphaned allocations, then orphaned reservations. Suspects come from the caches (cheap: no
// LIST); every pod a removal depends on is then read live, every pool write is conditional on the version read,
// and a reservation is judged "not held" only against a fresh list of the pools.
import { formatIP } from '../ip/address.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { listAll } from '../store/kubernetes/list.ts';
import { objectPath } from '../store/kubernetes/resources.ts';
import type { Log } from './log.ts';
import { orphanReason, type CleanupPolicy } from './orphans.ts';
import { eachLimited } from './parallel.ts';
import { readLivePods } from './pod-confirm.ts';
import type { PodView } from './pod-view.ts';
import { releaseFromPool, type Candidate, type Released } from './pool-release.ts';
import { poolView, type PoolView } from './pool-view.ts';
import { deleteReservation, judgeReservation, reservationSuspects, type ReservationReason } from './reservations.ts';
import type { ReservationView } from './views.ts';

export interface CleanupInput {
  readonly pods: ReadonlyMap<string, PodView>;
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly reservations: ReadonlyMap<string, ReservationView>;
  readonly networkNames: ReadonlySet<string>;
  readonly policy: CleanupPolicy;
  readonly reservationGraceMs: number;
  /** Checked before every write: a replica that lost the lease stops at once. */
  readonly leading: () => boolean;
  readonly log: Log;
}

export interface CleanupResult {
  readonly released: readonly Released[];
  readonly reservationsDeleted: ReadonlyArray<{ readonly name: string; readonly podRef: string; readonly reason: ReservationReason }>;
  /** Pods read live to confirm a suspicion. */
  readonly podsRead: number;
  /** Milliseconds spent reading pods live, writing pools, judging and deleting reservations. */
  readonly timings: { readonly readMs: number; readonly releaseMs: number; readonly reservationsMs: number };
}

/** "podRef|ip" of every allocation of the pools. */
export function heldPairs(pools: Iterable<PoolView>, except: ReadonlySet<string> = new Set()): Set<string> {
  const held = new Set<string>();
  for (const pool of pools) {
    if (pool.range === undefined) continue;
    for (const [address, record] of pool.allocations) {
      const pair = `${record.podRef}|${formatIP({ family: pool.range.family, value: address })}`;
      if (!except.has(pair)) held.add(pair);
    }
  }
  return held;
}

export async function cleanupPass(api: ApiClient, input: CleanupInput): Promise<CleanupResult> {
  const now = Date.now();
  const byPool = new Map<PoolView, Candidate[]>();
  const suspectPods = new Set<string>();
  const releasing = new Set<string>();
  for (const pool of input.pools.values()) {
    if (pool.range === undefined) continue;
    for (const [address, record] of pool.allocations) {
      const ip = formatIP({ family: pool.range.family, value: address });
      if (orphanReason(record, ip, input.pods.get(record.podRef), input.policy, now, pool.allocatedAt.get(address)) === undefined) continue;
      const list = byPool.get(pool) ?? [];
      if (list.length === 0) byPool.set(pool, list);
      list.push({ address, record });
      suspectPods.add(record.podRef);
      releasing.add(`${record.podRef}|${ip}`);
    }
  }
  const judge = { networkNames: input.networkNames, policy: input.policy, graceMs: input.reservationGraceMs, now };
  // Judged as if the suspected allocations were gone already: the reservation of a released address goes too.
  const suspects = reservationSuspects(input.reservations.values(), input.pods, heldPairs(input.pools.values(), releasing), judge);
  for (const r of suspects) suspectPods.add(r.podRef);
  if (suspectPods.size === 0 || !input.leading()) return { released: [], reservationsDeleted: [], podsRead: 0, timings: { readMs: 0, releaseMs: 0, reservationsMs: 0 } };

  const t0 = performance.now();
  const live = await readLivePods(api, suspectPods, { log: input.log });
  const t1 = performance.now();
  const judgeRecord = (record: Candidate['record'], ip: string) => {
    const pod = live.get(record.podRef);
    return pod === undefined ? undefined : orphanReason(record, ip, pod ?? undefined, input.policy, Date.now());
  };
  const released: Released[] = [];
  await eachLimited([...byPool], 4, async ([pool, candidates]) => {
    const done = await releaseFromPool(api, pool, candidates, judgeRecord, { leading: input.leading, log: input.log });
    for (const r of done) input.log.info(`released ${r.ip} of ${r.podRef} from IPPool ${r.pool}: ${r.reason}`, { pool: r.pool, ip: r.ip, pod: r.podRef, reason: r.reason });
    released.push(...done);
  });

  const t2 = performance.now();
  const reservationsDeleted: Array<CleanupResult['reservationsDeleted'][number]> = [];
  // "Not held" must hold now, not in a cache: list the pools afresh, once, when a living pod's reservation is suspect.
  const needHeld = suspects.some((r) => live.get(r.podRef) !== null && live.get(r.podRef) !== undefined);
  const held = needHeld ? await heldNow(api, input.log) : new Set<string>();
  await eachLimited(suspects, 8, async (view) => {
    const reason = judgeReservation(view, live.get(view.podRef), held, { ...judge, now: Date.now() });
    if (reason === undefined || !(await deleteReservation(api, view, { leading: input.leading, log: input.log }))) return;
    reservationsDeleted.push({ name: view.name, podRef: view.podRef, reason });
    input.log.info(`deleted OverlappingRangeIPReservation ${view.name} of ${view.podRef}: ${reason}`, { reservation: view.name, pod: view.podRef, reason });
  });
  const timings = { readMs: Math.round(t1 - t0), releaseMs: Math.round(t2 - t1), reservationsMs: Math.round(performance.now() - t2) };
  return { released, reservationsDeleted, podsRead: suspectPods.size, timings };
}

async function heldNow(api: ApiClient, log: Log): Promise<Set<string>> {
  const views: PoolView[] = [];
  for (const item of await listAll(api, objectPath(api.namespace, 'ippools'))) {
    const view = poolView(item);
    if (view !== undefined) views.push(view);
  }
  log.debug(`listed ${views.length} IPPools to judge reservations`);
  return heldPairs(views);
}
