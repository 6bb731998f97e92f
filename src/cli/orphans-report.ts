// `hereabouts orphans`: what the controller would release, decided by its own rules (controller/orphans/orphans.ts for
// allocations, controller/reservations/orphaned.ts for reservations) on the listed objects (pure). What a grace period still
// holds back is listed with the instant the rule releases it, if nothing else changes meanwhile.
import { formatIP } from '../ip/address.ts';
import {
  orphanAfterGrace,
  orphanReason,
  type CleanupPolicy,
  type OrphanReason,
} from '../controller/orphans/orphans.ts';
import { heldAddresses } from '../controller/orphans/cleanup-pass.ts';
import {
  judgeReservation,
  reservationAfterGrace,
  type ReservationReason,
} from '../controller/reservations/orphaned.ts';
import type { AllocationRecord } from '../store/store.ts';
import { columns, inTime, type Inventory, type PoolInfo } from './inventory.ts';

export interface Judging {
  readonly policy: CleanupPolicy;
  /** The controller's --reservation-grace. */
  readonly reservationGraceMs: number;
}

/** The rule's verdict on one allocation: released now, or once a grace period ends, or kept. */
export interface Verdict {
  readonly now?: OrphanReason;
  readonly later?: { readonly reason: OrphanReason; readonly atMs: number };
}

export function allocationVerdict(
  inv: Inventory,
  pool: PoolInfo,
  address: bigint,
  record: AllocationRecord,
  policy: CleanupPolicy,
): Verdict {
  const range = pool.view.range;
  if (range === undefined || inv.pods === undefined) return {};
  const ip = formatIP({ family: range.family, value: address });
  const pod = inv.pods.get(record.podRef)?.view;
  const allocatedAt = pool.view.allocatedAt.get(address);
  const now = orphanReason(record, ip, pod, policy, inv.nowMs, allocatedAt);
  if (now !== undefined) return { now };
  const later = orphanAfterGrace(record, ip, pod, policy, inv.nowMs, allocatedAt);
  return later === undefined ? {} : { later };
}

export interface OrphanRow {
  readonly pool: string;
  readonly address: string;
  readonly podRef: string;
  readonly containerId: string;
  readonly reason: OrphanReason;
  /** Absent: released now. Present: when the grace period ends (RFC 3339). */
  readonly releasableAt?: string;
}

export interface ReservationRow {
  readonly name: string;
  readonly podRef: string;
  readonly reason: ReservationReason;
  readonly releasableAt?: string;
}

export interface OrphansReport {
  readonly namespace: string;
  readonly policy: CleanupPolicy & { readonly reservationGraceMs: number };
  /** Allocations the controller releases on its next pass. */
  readonly allocations: readonly OrphanRow[];
  /** Allocations a grace period holds back, and when it ends. */
  readonly waiting: readonly OrphanRow[];
  /** Reservations the controller deletes on its next pass, and those a grace period holds back. */
  readonly reservations: readonly ReservationRow[];
  readonly reservationsWaiting: readonly ReservationRow[];
}

export function orphansReport(inv: Inventory, judging: Judging): OrphansReport {
  const allocations: OrphanRow[] = [];
  const waiting: OrphanRow[] = [];
  const releasing = new Set<string>();
  for (const pool of inv.pools) {
    const range = pool.view.range;
    if (range === undefined) continue;
    for (const [address, record] of pool.view.allocations) {
      const verdict = allocationVerdict(inv, pool, address, record, judging.policy);
      const base = {
        pool: pool.view.name,
        address: formatIP({ family: range.family, value: address }),
        podRef: record.podRef,
        containerId: record.containerId,
      };
      if (verdict.now !== undefined) {
        allocations.push({ ...base, reason: verdict.now });
        releasing.add(`${pool.view.name}|${address}`);
      } else if (verdict.later !== undefined) {
        waiting.push({
          ...base,
          reason: verdict.later.reason,
          releasableAt: new Date(verdict.later.atMs).toISOString(),
        });
      }
    }
  }
  // As the controller does: reservations are judged as if this pass's releases were done.
  const held = heldAddresses(
    inv.pools.map((p) => p.view),
    releasing,
  );
  const judge = {
    networkNames: inv.networkNames,
    policy: judging.policy,
    graceMs: judging.reservationGraceMs,
    now: inv.nowMs,
  };
  const reservations: ReservationRow[] = [];
  const reservationsWaiting: ReservationRow[] = [];
  for (const view of inv.reservations.values()) {
    const pod = inv.pods === undefined ? undefined : (inv.pods.get(view.podRef)?.view ?? null);
    const reason = judgeReservation(view, pod, held, judge);
    if (reason !== undefined) {
      reservations.push({ name: view.name, podRef: view.podRef, reason });
      continue;
    }
    const later = reservationAfterGrace(view, pod, held, judge);
    if (later !== undefined)
      reservationsWaiting.push({
        name: view.name,
        podRef: view.podRef,
        reason: later.reason,
        releasableAt: new Date(later.atMs).toISOString(),
      });
  }
  return {
    namespace: inv.namespace,
    policy: { ...judging.policy, reservationGraceMs: judging.reservationGraceMs },
    allocations,
    waiting,
    reservations,
    reservationsWaiting,
  };
}

export function formatOrphans(report: OrphansReport, nowMs: number): string {
  const when = (at: string | undefined): string =>
    at === undefined ? 'now' : `${inTime(Date.parse(at), nowMs)} (${at})`;
  const rows = [...report.allocations, ...report.waiting];
  let out = `namespace ${report.namespace}: ${report.allocations.length} allocation(s) to release now, ${report.waiting.length} in a grace period\n`;
  if (rows.length > 0) {
    out += columns([
      ['POOL', 'ADDRESS', 'POD', 'REASON', 'RELEASED'],
      ...rows.map((r) => [r.pool, r.address, r.podRef, r.reason, when(r.releasableAt)]),
    ]);
  }
  const reservations = [...report.reservations, ...report.reservationsWaiting];
  out += `${report.reservations.length} reservation(s) to delete now, ${report.reservationsWaiting.length} in a grace period\n`;
  if (reservations.length > 0) {
    out += columns([
      ['RESERVATION', 'POD', 'REASON', 'DELETED'],
      ...reservations.map((r) => [r.name, r.podRef, r.reason, when(r.releasableAt)]),
    ]);
  }
  return out;
}
