// `hereabouts pool <name>`: every allocation of one IPPool with its pod, node, age, reservation and the controller's
// verdict (pure).
import { warmHolder } from '../store/warm-record.ts';
import { formatCidr } from '../ip/cidr.ts';
import { formatIP } from '../ip/address.ts';
import type { OrphanReason } from '../controller/orphans/orphans.ts';
import {
  age,
  columns,
  inTime,
  podOf,
  reservationState,
  type Inventory,
  type PoolInfo,
  type ReservationState,
} from './inventory.ts';
import { podState, type PodState } from './ip-report.ts';
import { allocationVerdict, type Judging } from './orphans-report.ts';

export interface AllocationRow {
  readonly address: string;
  readonly podRef: string;
  readonly containerId: string;
  /** A warm record (DESIGN §11): the node whose agent holds the address, not handed to a pod yet. */
  readonly warm?: string;
  readonly ifname: string;
  readonly node?: string;
  readonly pod: PodState;
  readonly since?: string;
  /** Seconds since it was allocated, when recorded. */
  readonly ageSeconds?: number;
  readonly reservation: { readonly name: string | null; readonly state: ReservationState };
  /** The controller's verdict: released now, or once a grace period ends. */
  readonly orphan?: { readonly reason: OrphanReason; readonly releasableAt?: string };
}

export interface PoolReport {
  readonly name: string;
  readonly namespace: string;
  readonly range: string;
  readonly network: string | null;
  readonly node?: string;
  readonly capacity: bigint;
  readonly used: number;
  /** Of `used`: warm records, held by node agents for their next ADDs. */
  readonly warm: number;
  readonly free: bigint;
  readonly allocations: readonly AllocationRow[];
  readonly problems: readonly string[];
}

export function poolReport(inv: Inventory, pool: PoolInfo, judging: Judging): PoolReport {
  const range = pool.view.range;
  const rows: AllocationRow[] = [];
  if (range !== undefined) {
    const sorted = [...pool.view.allocations].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [address, record] of sorted) {
      const ip = { family: range.family, value: address };
      const allocatedAt = pool.view.allocatedAt.get(address);
      const node = record.node ?? podOf(inv, record)?.node;
      const warm = warmHolder(record);
      const reservation = reservationState(inv, pool, ip, record);
      const verdict = allocationVerdict(inv, pool, address, record, judging.policy);
      const orphan =
        verdict.now !== undefined
          ? { reason: verdict.now }
          : verdict.later === undefined
            ? undefined
            : { reason: verdict.later.reason, releasableAt: new Date(verdict.later.atMs).toISOString() };
      rows.push({
        address: formatIP(ip),
        podRef: record.podRef,
        containerId: record.containerId,
        ...(warm === undefined ? {} : { warm }),
        ifname: record.ifname,
        ...(node === undefined ? {} : { node }),
        pod: podState(inv, record.podRef, record.podUid),
        ...(allocatedAt === undefined
          ? {}
          : {
              since: new Date(allocatedAt).toISOString(),
              ageSeconds: Math.max(0, Math.floor((inv.nowMs - allocatedAt) / 1000)),
            }),
        reservation: { name: reservation.name ?? null, state: reservation.state },
        ...(orphan === undefined ? {} : { orphan }),
      });
    }
  }
  return {
    name: pool.view.name,
    namespace: inv.namespace,
    range: range === undefined ? '?' : formatCidr(range),
    network: pool.network ?? null,
    ...(pool.node === undefined ? {} : { node: pool.node }),
    capacity: pool.view.capacity,
    used: pool.view.allocations.size,
    warm: rows.filter((r) => r.warm !== undefined).length,
    free: pool.view.free,
    allocations: rows,
    problems: pool.view.problems,
  };
}

export function formatPool(report: PoolReport, nowMs: number): string {
  const network = report.network === null ? '?' : report.network === '' ? '(unnamed)' : report.network;
  let out =
    `IPPool ${report.name}: range ${report.range}, network ${network}${report.node === undefined ? '' : `, node slice of ${report.node}`}; ` +
    `${report.used} used of ${report.capacity}${report.warm === 0 ? '' : ` (${report.warm} warm)`}, ${report.free} free\n`;
  const short = (id: string): string => (id.length > 12 ? id.slice(0, 12) : id === '' ? '-' : id);
  const orphan = (r: AllocationRow): string =>
    r.orphan === undefined
      ? '-'
      : r.orphan.releasableAt === undefined
        ? `${r.orphan.reason} (now)`
        : `${r.orphan.reason} (${inTime(Date.parse(r.orphan.releasableAt), nowMs)})`;
  if (report.allocations.length > 0) {
    out += columns([
      ['ADDRESS', 'POD', 'POD STATE', 'NODE', 'AGE', 'CONTAINER', 'IFNAME', 'RESERVATION', 'ORPHAN'],
      ...report.allocations.map((r) => [
        r.address,
        r.warm !== undefined ? '(warm)' : r.podRef === '' ? '-' : r.podRef,
        r.pod.state,
        r.node ?? '-',
        age(r.since === undefined ? undefined : Date.parse(r.since), nowMs),
        short(r.containerId),
        r.ifname || '-',
        r.reservation.state,
        orphan(r),
      ]),
    ]);
  }
  for (const problem of report.problems) out += `warning: ${problem}\n`;
  return out;
}
