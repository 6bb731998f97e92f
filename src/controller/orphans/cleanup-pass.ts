// One cleanup pass: orphaned allocations, then reservations (orphaned ones deleted, missing ones re-created).
// Suspects come from the caches (cheap: no LIST); every pod a removal depends on is then read live, every pool write
// is conditional on the version read, and whether an address is held is read from a fresh list of the pools.
import { poolViewsNow } from '../pools/list.ts';
import { monotonicMs } from '../../clock.ts';
import { formatIP } from '../../ip/address.ts';
import type { ApiClient } from '../../kube/api.ts';
import { getObject } from '../../store/kubernetes/objects.ts';
import type { Log } from '../../log/json-log.ts';
import { orphanReason, type CleanupPolicy, type OrphanReason } from './orphans.ts';
import { eachLimited } from '../runtime/parallel.ts';
import { readGoneNodes, readLivePods } from './pod-confirm.ts';
import { warmHolder } from '../../store/warm-record.ts';
import type { PodView } from './pod-view.ts';
import { releaseFromPool, type Candidate, type Released } from './pool-release.ts';
import type { PoolView } from '../pools/view.ts';
import {
  missingReservations,
  recreateReservation,
  reservationNaming,
  takenAtOf,
  sameAttachment,
  type MissingReservation,
} from '../reservations/repair.ts';
import {
  deleteReservation,
  judgeReservation,
  reservationSuspects,
  type ReservationReason,
} from '../reservations/orphaned.ts';
import { reservationView, type ReservationView } from '../runtime/views.ts';
import { bindingKey, namespaceOfPodRef } from '../../store/sticky-binding.ts';
import { bindingReleaseReason, type StickyWorld } from '../sticky/verdict.ts';
import { readStickyWorld } from '../sticky/caches.ts';

export interface CleanupInput {
  readonly pods: ReadonlyMap<string, PodView>;
  /** The nodes the cache holds (its keys): a warm record of a node not among them is a suspect. */
  readonly nodes: ReadonlyMap<string, unknown>;
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly reservations: ReadonlyMap<string, ReservationView>;
  readonly networkNames: ReadonlySet<string>;
  readonly policy: CleanupPolicy;
  readonly reservationGraceMs: number;
  /** Records seen missing their reservation, and since when (monotonic): kept by the controller across passes. */
  readonly firstMissing?: Map<string, number>;
  /** Sticky addresses (docs/sticky.md); absent (their caches not synced): every bound record is kept. */
  readonly sticky?: StickyInput;
  /** Checked before every write: a replica that lost the lease stops at once. */
  readonly leading: () => boolean;
  readonly log: Log;
}

export interface StickyInput {
  /** What the caches show of StatefulSets, their replicas and VMs. */
  readonly world: StickyWorld;
  /** The namespaces whose bindings this controller judges (--sticky); the others' are kept. */
  readonly serves: (namespace: string) => boolean;
  /** How long a binding must be seen released before its address goes (the controller's --sticky-grace). */
  readonly graceMs: number;
  /** "pool|address|binding" -> since when (monotonic) its binding is seen released: kept across passes. */
  readonly firstReleasable: Map<string, number>;
}

export interface CleanupResult {
  readonly released: readonly Released[];
  readonly reservationsDeleted: ReadonlyArray<{
    readonly name: string;
    readonly podRef: string;
    readonly reason: ReservationReason;
  }>;
  /** Missing reservations of held addresses, re-created. */
  readonly reservationsRecreated: readonly MissingReservation[];
  /** Pods read live to confirm a suspicion. */
  readonly podsRead: number;
  /** Milliseconds spent reading pods live, writing pools, judging and deleting reservations. */
  readonly timings: { readonly readMs: number; readonly releaseMs: number; readonly reservationsMs: number };
}

/** The canonical text of every address the pools' records hold, but those of the `except` "pool|address" keys. */
export function heldAddresses(pools: Iterable<PoolView>, except: ReadonlySet<string> = new Set()): Set<string> {
  const held = new Set<string>();
  for (const pool of pools) {
    if (pool.range === undefined) continue;
    for (const address of pool.allocations.keys()) {
      if (!except.has(`${pool.name}|${address}`)) held.add(formatIP({ family: pool.range.family, value: address }));
    }
  }
  return held;
}

export async function cleanupPass(api: ApiClient, input: CleanupInput): Promise<CleanupResult> {
  const now = Date.now();
  const { byPool, suspectPods, suspectNodes, suspectBindings, releasing, reservedBy } = orphanSuspects(input, now);
  const judge = { networkNames: input.networkNames, policy: input.policy, graceMs: input.reservationGraceMs, now };
  // Judged as if the suspected allocations were gone already: the reservation of a released address goes too.
  const suspects = reservationSuspects(
    input.reservations.values(),
    input.pods,
    heldAddresses(input.pools.values(), releasing),
    judge,
  );
  for (const r of suspects) suspectPods.add(r.podRef);
  const missing = missingReservations(input.pools.values(), input.reservations.values(), {
    graceMs: input.reservationGraceMs,
    nowMs: now,
    monotonicNowMs: monotonicMs(),
    firstMissing: input.firstMissing ?? new Map<string, number>(),
  });
  const nothing = {
    released: [],
    reservationsDeleted: [],
    reservationsRecreated: [],
    podsRead: 0,
    timings: { readMs: 0, releaseMs: 0, reservationsMs: 0 },
  };
  const idle = suspectPods.size === 0 && suspectNodes.size === 0 && suspectBindings.size === 0 && missing.length === 0;
  if (idle || !input.leading()) return nothing;

  const t0 = performance.now();
  const live = await readLivePods(api, suspectPods, { log: input.log });
  const goneNodes = await readGoneNodes(api, suspectNodes, { log: input.log });
  const reservedAt = await readLiveReservations(api, reservedBy, suspectPods);
  const bound = suspectBindings.size === 0 ? undefined : await readStickyWorld(api, suspectBindings, input.log);
  const t1 = performance.now();
  const judgeRecord = (record: Candidate['record'], ip: string): OrphanReason | undefined => {
    if (record.binding !== undefined) {
      return bound === undefined
        ? undefined
        : bindingReleaseReason(namespaceOfPodRef(record.podRef), record.binding, bound);
    }
    const holder = warmHolder(record);
    if (holder !== undefined) return goneNodes.has(holder) ? 'node-gone' : undefined;
    const pod = live.get(record.podRef);
    if (pod === undefined) return undefined;
    return orphanReason(
      record,
      ip,
      pod ?? undefined,
      input.policy,
      Date.now(),
      undefined,
      reservedAt.get(`${ip}|${record.podRef}`),
    );
  };
  const released: Released[] = [];
  await eachLimited([...byPool], 4, async ([pool, candidates]) => {
    const done = await releaseFromPool(api, pool, candidates, judgeRecord, { leading: input.leading, log: input.log });
    for (const r of done)
      input.log.info(`released ${r.ip} of ${r.podRef} from IPPool ${r.pool}: ${r.reason}`, {
        pool: r.pool,
        ip: r.ip,
        pod: r.podRef,
        reason: r.reason,
      });
    released.push(...done);
  });

  const t2 = performance.now();
  const reservationsDeleted: Array<CleanupResult['reservationsDeleted'][number]> = [];
  const reservationsRecreated: MissingReservation[] = [];
  if (suspects.length > 0 || missing.length > 0) {
    // Held or not must hold now, not in a cache: the pools listed afresh, once, after this pass's releases.
    const fresh = await poolsNow(api, input.log);
    const held = heldAddresses(fresh.values());
    await eachLimited(suspects, 8, async (view) => {
      const reason = judgeReservation(view, live.get(view.podRef), held, { ...judge, now: Date.now() });
      if (reason === undefined || !(await deleteReservation(api, view, { leading: input.leading, log: input.log })))
        return;
      reservationsDeleted.push({ name: view.name, podRef: view.podRef, reason });
      input.log.info(`deleted OverlappingRangeIPReservation ${view.name} of ${view.podRef}: ${reason}`, {
        reservation: view.name,
        pod: view.podRef,
        reason,
      });
    });
    await eachLimited(missing, 8, async (m) => {
      const record = fresh.get(m.pool)?.allocations.get(m.address);
      if (record === undefined || !sameAttachment(record, m.record)) return; // released or replaced meanwhile
      if (!(await recreateReservation(api, m, { leading: input.leading, log: input.log }))) return;
      reservationsRecreated.push(m);
      input.log.warning(
        `re-created missing OverlappingRangeIPReservation ${m.name} for ${m.ip} of ${m.record.podRef} held in IPPool ${m.pool}`,
        { reservation: m.name, pool: m.pool, ip: m.ip, pod: m.record.podRef },
      );
    });
  }
  const timings = {
    readMs: Math.round(t1 - t0),
    releaseMs: Math.round(t2 - t1),
    reservationsMs: Math.round(performance.now() - t2),
  };
  return { released, reservationsDeleted, reservationsRecreated, podsRead: suspectPods.size, timings };
}

/** Pool name -> its view, listed now. */
async function poolsNow(api: ApiClient, log: Log): Promise<Map<string, PoolView>> {
  const views = await poolViewsNow(api);
  log.debug(`listed ${views.size} IPPools to judge reservations`);
  return views;
}

/** What the caches show orphaned, before anything is read live: the suspects of this pass. */
interface OrphanSuspects {
  readonly byPool: Map<PoolView, Candidate[]>;
  /** The pods whose live state decides a release. */
  readonly suspectPods: Set<string>;
  /** "pool|address" of the suspected allocations. */
  readonly releasing: Set<string>;
  /** Nodes of warm records the node cache does not hold: read live before a release. */
  readonly suspectNodes: Set<string>;
  /** "namespace binding" of sticky addresses released for their grace period by the caches: read live before. */
  readonly suspectBindings: Set<string>;
  /**
   * Uid-less records (Whereabouts'): "ip|podref" -> the reservation naming that pod, which tells whether the address
   * was taken before the pod of that name was created (orphanReason). From the cache here, read live before a release.
   */
  readonly reservedBy: Map<string, ReservationView>;
}

function orphanSuspects(input: CleanupInput, now: number): OrphanSuspects {
  const out: OrphanSuspects = {
    byPool: new Map(),
    suspectPods: new Set(),
    suspectNodes: new Set(),
    suspectBindings: new Set(),
    releasing: new Set(),
    reservedBy: new Map(),
  };
  const byName = new Map([...input.reservations.values()].map((view) => [view.name, view])); // one namespace
  const seenReleasable = new Set<string>();
  const suspect = (pool: PoolView, address: bigint, record: Candidate['record']): void => {
    const list = out.byPool.get(pool) ?? [];
    if (list.length === 0) out.byPool.set(pool, list);
    list.push({ address, record });
    out.releasing.add(`${pool.name}|${address}`);
  };
  for (const pool of input.pools.values()) {
    const range = pool.range;
    if (range === undefined) continue;
    for (const [address, record] of pool.allocations) {
      const binding = bindingKey(record);
      if (binding !== undefined) {
        const sticky = input.sticky;
        if (sticky === undefined || !sticky.serves(namespaceOfPodRef(record.podRef))) continue;
        const key = `${pool.name}|${address}|${binding}`;
        if (bindingReleaseReason(namespaceOfPodRef(record.podRef), record.binding ?? '', sticky.world) === undefined)
          continue;
        seenReleasable.add(key);
        const since = sticky.firstReleasable.get(key) ?? monotonicMs();
        sticky.firstReleasable.set(key, since);
        if (monotonicMs() - since < sticky.graceMs) continue;
        suspect(pool, address, record);
        out.suspectBindings.add(binding);
        continue;
      }
      const holder = warmHolder(record);
      if (holder !== undefined) {
        // A warm record is held while its node exists, whatever the pods (DESIGN §11).
        if (input.nodes.has(holder)) continue;
        suspect(pool, address, record);
        out.suspectNodes.add(holder);
        continue;
      }
      const ip = formatIP({ family: range.family, value: address });
      const reservation =
        (record.podUid ?? '') === ''
          ? reservationNaming(byName, pool.name, { family: range.family, value: address }, record.podRef)
          : undefined;
      if (reservation !== undefined) out.reservedBy.set(`${ip}|${record.podRef}`, reservation);
      const pod = input.pods.get(record.podRef);
      const takenAt = reservation === undefined ? undefined : takenAtOf(reservation);
      if (orphanReason(record, ip, pod, input.policy, now, pool.allocatedAt.get(address), takenAt) === undefined)
        continue;
      suspect(pool, address, record);
      out.suspectPods.add(record.podRef);
    }
  }
  // A binding that holds again (scaled back up, re-created) starts its grace afresh when next released.
  const firstReleasable = input.sticky?.firstReleasable;
  if (firstReleasable !== undefined)
    for (const key of firstReleasable.keys()) if (!seenReleasable.has(key)) firstReleasable.delete(key);
  return out;
}

/**
 * The reservations the judgement of uid-less records leans on, read live (a cached one may be an earlier pod's that
 * was deleted and taken again since): "ip|podref" -> when it was taken, for the suspects' pods; a reservation gone
 * or naming another pod now leaves its record to the other rules.
 */
async function readLiveReservations(
  api: ApiClient,
  reservedBy: ReadonlyMap<string, ReservationView>,
  pods: ReadonlySet<string>,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  await eachLimited(
    [...reservedBy].filter(([key]) => pods.has(key.slice(key.indexOf('|') + 1))),
    4,
    async ([key, view]) => {
      const object = await getObject(api, 'overlappingrangeipreservations', view.name);
      if (object === undefined) return;
      const now = reservationView(object);
      if (now.podRef === view.podRef) out.set(key, takenAtOf(now));
    },
  );
  return out;
}
