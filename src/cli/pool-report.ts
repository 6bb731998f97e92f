// `hereabouts pool <name>`: every allocation of one IPPool with its pod (or the node agent or claim holding it), node,
// age, reservation and the controller's verdict (pure). A sticky address (docs/sticky.md) names its binding, whether
// a pod holds it now (parked: none does) and, once its workload no longer holds it, the controller's reason.
import { warmHolder } from '../store/warm-record.ts';
import { claimHolder } from '../store/claim-record.ts';
import { formatCidr } from '../ip/cidr.ts';
import { formatIP } from '../ip/address.ts';
import type { OrphanReason } from '../controller/orphans/orphans.ts';
import {
  age,
  claimBlock,
  claimState,
  columns,
  describeClaim,
  inTime,
  podOf,
  reservationState,
  type ClaimKind,
  type ClaimState,
  type Inventory,
  type PoolInfo,
  type ReservationState,
} from './inventory.ts';
import { podState, type PodState } from './ip-report.ts';
import { allocationVerdict, type Judging } from './orphans-report.ts';
import { bindingDetail, type BindingDetail } from './bindings.ts';
import { STICKY_AREA_NODE } from '../store/sticky-binding.ts';

export interface AllocationRow {
  readonly address: string;
  readonly podRef: string;
  readonly containerId: string;
  /** A warm record (DESIGN §11): the node whose agent holds the address, not handed to a pod yet. */
  readonly warm?: string;
  /** A claim record (DESIGN §12): the claim holding the address (a PrefixClaim: the block it holds), not a pod. */
  readonly claim?: ClaimRow;
  /** A sticky address (docs/sticky.md): its binding, whether a pod holds it now, and whether the binding holds. */
  readonly binding?: BindingDetail;
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

export interface ClaimRow {
  readonly kind: ClaimKind;
  readonly namespace: string;
  readonly name: string;
  /** A PrefixClaim's block: the record sits at its first address. */
  readonly block?: string;
  readonly state: ClaimState;
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
  /** Of `used`: addresses held by IPAddressClaims, and PrefixClaims (one record each, holding its block). */
  readonly claims: number;
  readonly prefixes: number;
  /** Of `used`: sticky addresses (bound records), and of those the ones no pod holds now. */
  readonly sticky: number;
  readonly parked: number;
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
      const holder = claimHolder(record);
      const block = holder === undefined ? undefined : claimBlock(holder, range.family, address);
      const claim: ClaimRow | undefined =
        holder === undefined
          ? undefined
          : {
              kind: holder.kind,
              namespace: holder.namespace,
              name: holder.name,
              ...(block === undefined ? {} : { block: formatCidr(block) }),
              state: claimState(inv, holder),
            };
      const reservation = reservationState(inv, pool, ip, record);
      const verdict = allocationVerdict(inv, pool, address, record, judging.policy);
      const orphan =
        verdict.now !== undefined
          ? { reason: verdict.now }
          : verdict.later === undefined
            ? undefined
            : { reason: verdict.later.reason, releasableAt: new Date(verdict.later.atMs).toISOString() };
      const pod = podState(inv, record.podRef, record.podUid);
      const binding = bindingDetail(record, pod.state, inv.sticky);
      rows.push({
        address: formatIP(ip),
        podRef: record.podRef,
        containerId: record.containerId,
        ...(warm === undefined ? {} : { warm }),
        ...(claim === undefined ? {} : { claim }),
        ...(binding === undefined ? {} : { binding }),
        ifname: record.ifname,
        ...(node === undefined ? {} : { node }),
        pod,
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
    claims: rows.filter((r) => r.claim?.kind === 'IPAddressClaim').length,
    prefixes: rows.filter((r) => r.claim?.kind === 'PrefixClaim').length,
    sticky: rows.filter((r) => r.binding !== undefined).length,
    parked: rows.filter((r) => r.binding?.pod === 'parked').length,
    free: pool.view.free,
    allocations: rows,
    problems: pool.view.problems,
  };
}

export function formatPool(report: PoolReport, nowMs: number): string {
  const network = report.network === null ? '?' : report.network === '' ? '(unnamed)' : report.network;
  const held = [
    report.warm === 0 ? '' : `${report.warm} warm`,
    report.claims === 0 ? '' : `${report.claims} by IPAddressClaims`,
    report.prefixes === 0 ? '' : `${report.prefixes} PrefixClaim block${report.prefixes === 1 ? '' : 's'}`,
    report.sticky === 0
      ? ''
      : `${report.sticky} sticky${report.parked === 0 ? '' : `, ${report.parked} of them parked`}`,
  ].filter((part) => part !== '');
  let out =
    `IPPool ${report.name}: range ${report.range}, network ${network}${sliceText(report.node)}; ` +
    `${report.used} used of ${report.capacity}${held.length === 0 ? '' : ` (${held.join(', ')})`}, ${report.free} free\n`;
  const short = (id: string): string => (id.length > 12 ? id.slice(0, 12) : id === '' ? '-' : id);
  const orphan = (r: AllocationRow): string =>
    r.binding !== undefined
      ? bindingCell(r.binding)
      : r.orphan === undefined
        ? '-'
        : r.orphan.releasableAt === undefined
          ? `${r.orphan.reason} (now)`
          : `${r.orphan.reason} (${inTime(Date.parse(r.orphan.releasableAt), nowMs)})`;
  if (report.allocations.length > 0) {
    out += columns([
      ['ADDRESS', 'POD', 'POD STATE', 'NODE', 'AGE', 'CONTAINER', 'IFNAME', 'RESERVATION', 'ORPHAN'],
      ...report.allocations.map((r) => [
        r.address,
        holderOf(r),
        r.claim !== undefined ? `claim ${r.claim.state}` : r.binding?.pod === 'parked' ? 'parked' : r.pod.state,
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

/** ", node slice of node-a"; the sticky area's slice is every node's (docs/sticky.md). */
function sliceText(node: string | undefined): string {
  if (node === undefined) return '';
  return node === STICKY_AREA_NODE
    ? `, the sticky area (the slice of ${node}: every node's sticky addresses)`
    : `, node slice of ${node}`;
}

/**
 * The POD cell: the pod, "(warm)", the claim ("IPAddressClaim ns/name", "PrefixClaim ns/name 10.0.0.64/26"), or a
 * sticky address's pod and binding ("ns/web-0 bound to StatefulSet/web/0"; "pre-bound" until its replica takes it).
 */
function holderOf(r: AllocationRow): string {
  if (r.warm !== undefined) return '(warm)';
  if (r.claim !== undefined) return describeClaim(r.claim, r.claim.block);
  if (r.binding !== undefined)
    return `${r.podRef || '-'} ${r.binding.prebound === true ? 'pre-bound' : 'bound'} to ${r.binding.binding}`;
  return r.podRef === '' ? '-' : r.podRef;
}

/**
 * The ORPHAN cell of a sticky address: "-" while its binding holds, the controller's reason once it no longer does
 * (it releases the address after its --sticky-grace), "?" when what the binding depends on could not be read.
 */
function bindingCell(b: BindingDetail): string {
  if (b.state === 'holds') return '-';
  return b.state === 'released' ? `${b.reason ?? 'released'} (after sticky grace)` : '?';
}
