// `hereabouts check`: the consistency of pools, reservations, pods and node slices, from the listed objects (pure).
// Orphans and missing reservations are judged by the controller's own rules (what its next pass would release or
// re-create); the rest are states no writer should leave behind. Notices are informational, and never fail the
// check: a sticky address (docs/sticky.md) whose StatefulSet or VM no longer holds it is the controller's to release
// after its --sticky-grace, never an orphan.
import { formatIP } from '../ip/address.ts';
import { heldAddresses } from '../controller/orphans/cleanup-pass.ts';
import { missingReservations } from '../controller/reservations/repair.ts';
import { lastTakenMs } from '../controller/reservations/orphaned.ts';
import {
  CLAIM_RECORD_GRACE_MS,
  claimBlock,
  claimState,
  columns,
  describeClaim,
  podOf,
  reservationNetworkOf,
  reservationState,
  type ClaimKind,
  type Inventory,
} from './inventory.ts';
import { allocationVerdict, type Judging } from './orphans-report.ts';
import { warmHolder } from '../store/warm-record.ts';
import { claimHolder } from '../store/claim-record.ts';
import { formatCidr } from '../ip/cidr.ts';
import { bindingDetail, STICKY_GRACE } from './bindings.ts';
import { podState } from './ip-report.ts';
import { STICKY_AREA_NODE } from '../store/sticky-binding.ts';

export const PROBLEM_KINDS = [
  'unreadable-pool',
  'duplicate-address',
  'outside-node-slice',
  'orphan',
  'reservation-mismatch',
  'allocation-without-reservation',
  'reservation-without-allocation',
  'warm-of-gone-node',
  'pods-not-listed',
  'claim-gone',
  'claims-not-listed',
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** Informational findings: reported, never a problem (the exit status ignores them). */
export const NOTICE_KINDS = ['binding-released', 'bindings-not-read'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

export interface Notice {
  readonly kind: NoticeKind;
  readonly message: string;
  readonly pool?: string;
  readonly address?: string;
  readonly podRef?: string;
  /** For binding-released: the controller's reason (statefulset-gone, scaled-down, vm-gone). */
  readonly reason?: string;
  /** For binding-released: the binding, "StatefulSet/web/0" or "VirtualMachine/vm" (in the podref's namespace). */
  readonly binding?: string;
}

export interface Problem {
  readonly kind: ProblemKind;
  readonly message: string;
  readonly pool?: string;
  readonly address?: string;
  readonly reservation?: string;
  readonly podRef?: string;
  /** For an orphan: the controller's reason (pod-gone, pod-recreated, ...). */
  readonly reason?: string;
  /** For a claim record (DESIGN §12): the claim named, "IPAddressClaim ns/name" or "PrefixClaim ns/name". */
  readonly claim?: string;
}

export interface CheckReport {
  readonly namespace: string;
  readonly pools: number;
  readonly allocations: number;
  readonly reservations: number;
  readonly problems: readonly Problem[];
  /** Informational findings (absent: none). */
  readonly notices?: readonly Notice[];
}

export function checkReport(inv: Inventory, judging: Judging): CheckReport {
  const problems: Problem[] = [];
  const notices: Notice[] = [];
  let allocations = 0;
  let unread = 0; // sticky records whose workload could not be read
  if (inv.pods === undefined)
    problems.push({ kind: 'pods-not-listed', message: 'pods cannot be listed: orphans and nodes are not checked' });
  const byNetwork = new Map<string, string[]>(); // "<network>|<address>" -> pools holding it
  const unlisted = new Map<ClaimKind, number>(); // claim records whose kind could not be listed
  for (const pool of inv.pools) {
    const { view } = pool;
    for (const problem of view.problems) problems.push({ kind: 'unreadable-pool', pool: view.name, message: problem });
    const range = view.range;
    if (range === undefined) continue;
    for (const [address, record] of view.allocations) {
      allocations++;
      const ip = { family: range.family, value: address };
      const text = formatIP(ip);
      const at = { pool: view.name, address: text, ...(record.podRef === '' ? {} : { podRef: record.podRef }) };
      // Pools whose records share reservations may never hold one address twice (a claims pool's reservations
      // carry hereabouts-claims, whatever the pool).
      const network = reservationNetworkOf(pool);
      if (network !== undefined) {
        const key = `${network}|${text}`;
        byNetwork.set(key, [...(byNetwork.get(key) ?? []), view.name]);
      }
      const node = record.node ?? podOf(inv, record)?.node;
      // A sticky area's slice (STICKY_AREA_NODE's) is every node's: its addresses are held on any node.
      const sliced = pool.node !== undefined && pool.node !== STICKY_AREA_NODE;
      if (sliced && node !== undefined && node !== pool.node) {
        problems.push({
          kind: 'outside-node-slice',
          ...at,
          message: `${text} in IPPool ${view.name}, the node slice of ${pool.node}, is held by ${record.podRef || 'a container'} on node ${node}`,
        });
      }
      const verdict = allocationVerdict(inv, pool, address, record, judging.policy);
      if (verdict.now !== undefined) {
        problems.push({
          kind: 'orphan',
          ...at,
          reason: verdict.now,
          message: `${text} in IPPool ${view.name} is an orphan of ${record.podRef} (${verdict.now}): the controller releases it`,
        });
      }
      const warmNode = warmHolder(record);
      if (warmNode !== undefined && inv.nodes !== undefined && !inv.nodes.has(warmNode)) {
        problems.push({
          kind: 'warm-of-gone-node',
          ...at,
          message: `${text} in IPPool ${view.name} is held warm by the node agent of ${warmNode}, a node that no longer exists: the controller releases it`,
        });
      }
      // A claim's record is no pod's: its claim's existence is what keeps it (the controller's record pass releases it
      // once the claim is gone, RECORD_GRACE_MS after it was written).
      const holder = claimHolder(record);
      if (holder !== undefined) {
        const state = claimState(inv, holder);
        const writtenAt = view.allocatedAt.get(address);
        const young = writtenAt !== undefined && inv.nowMs - writtenAt < CLAIM_RECORD_GRACE_MS;
        if (state === 'unknown') unlisted.set(holder.kind, (unlisted.get(holder.kind) ?? 0) + 1);
        else if (state === 'gone' && !young) {
          const block = claimBlock(holder, range.family, address);
          const claim = describeClaim(holder);
          problems.push({
            kind: 'claim-gone',
            ...at,
            claim,
            message: `${block === undefined ? text : `the block ${formatCidr(block)}`} in IPPool ${view.name} is held by ${claim}, which no longer exists: the controller releases it`,
          });
        }
      }
      // A sticky address: never an orphan (orphanReason keeps it); its binding decides, with the controller's rule.
      const binding =
        inv.sticky === undefined
          ? undefined
          : bindingDetail(record, podState(inv, record.podRef, record.podUid).state, inv.sticky);
      if (binding?.state === 'unknown') unread++;
      else if (binding?.state === 'released') {
        notices.push({
          kind: 'binding-released',
          ...at,
          reason: binding.reason ?? 'released',
          binding: binding.binding,
          message: `${text} in IPPool ${view.name} is bound to ${binding.binding} in namespace ${binding.namespace}, whose workload no longer holds it (${binding.reason ?? 'released'}: ${binding.seen}): the controller releases it after its ${STICKY_GRACE}`,
        });
      }
      const reservation = reservationState(inv, pool, ip, record);
      if (reservation.state === 'other-attachment' && reservation.reservation !== undefined) {
        problems.push({
          kind: 'reservation-mismatch',
          ...at,
          reservation: reservation.reservation.name,
          message: `${text} in IPPool ${view.name} is ${record.podRef}'s, but reservation ${reservation.reservation.name} names ${reservation.reservation.podRef || '(no pod)'}`,
        });
      }
    }
  }
  if (unread > 0)
    notices.push({
      kind: 'bindings-not-read',
      message: `${unread} sticky address(es) are not checked against their workload: their StatefulSet, replica pod, VirtualMachine or VirtualMachineInstance could not be read`,
    });
  for (const [kind, count] of unlisted) {
    problems.push({
      kind: 'claims-not-listed',
      message: `${kind}s cannot be listed: ${count} record(s) held by ${kind}s are not checked against their claims`,
    });
  }
  for (const [key, pools] of byNetwork) {
    if (pools.length < 2) continue;
    const [network, address] = key.split('|') as [string, string];
    problems.push({
      kind: 'duplicate-address',
      address,
      message: `${address} is allocated in ${pools.length} pools of network ${network === '' ? '(unnamed)' : network}: ${pools.join(', ')}`,
    });
  }
  // The controller's rule for what to re-create, without its grace for records that carry no time (it has no
  // history here): a record younger than the grace may still be waiting for its reservation.
  const views = inv.pools.map((p) => p.view);
  const missing = missingReservations(views, inv.reservations.values(), {
    graceMs: 0,
    nowMs: inv.nowMs,
    monotonicNowMs: 0,
    firstMissing: new Map(),
  });
  for (const m of missing) {
    const at = views.find((v) => v.name === m.pool)?.allocatedAt.get(m.address);
    if (at !== undefined && inv.nowMs - at < judging.reservationGraceMs) continue;
    problems.push({
      kind: 'allocation-without-reservation',
      pool: m.pool,
      address: m.ip,
      reservation: m.name,
      podRef: m.record.podRef,
      message: `${m.ip} in IPPool ${m.pool} has no reservation ${m.name}: an overlapping range could hand it out again (the controller re-creates it)`,
    });
  }
  const held = heldAddresses(views);
  for (const r of inv.reservations.values()) {
    if (r.addresses.length === 0 || r.addresses.some((a) => held.has(a))) continue;
    if (inv.nowMs - lastTakenMs(r) < judging.reservationGraceMs) continue; // a writer reserves before its pool write
    problems.push({
      kind: 'reservation-without-allocation',
      reservation: r.name,
      address: r.addresses.join(' or '),
      ...(r.podRef === '' ? {} : { podRef: r.podRef }),
      message: `reservation ${r.name} of ${r.podRef || '(no pod)'} holds ${r.addresses.join(' or ')}, which no pool allocates: the address is blocked in overlapping ranges`,
    });
  }
  problems.sort((a, b) => PROBLEM_KINDS.indexOf(a.kind) - PROBLEM_KINDS.indexOf(b.kind));
  return {
    namespace: inv.namespace,
    pools: inv.pools.length,
    allocations,
    reservations: inv.reservations.size,
    problems,
    notices,
  };
}

export function formatCheck(report: CheckReport): string {
  let out = `namespace ${report.namespace}: ${report.pools} pool(s), ${report.allocations} allocation(s), ${report.reservations} reservation(s): `;
  const notices = report.notices ?? [];
  out += report.problems.length === 0 ? 'consistent' : `${report.problems.length} problem(s)`;
  out += notices.length === 0 ? '\n' : `, ${notices.length} notice(s)\n`;
  if (report.problems.length > 0)
    out += columns([['PROBLEM', 'DETAILS'], ...report.problems.map((p) => [p.kind, p.message])]);
  if (notices.length > 0) out += columns([['NOTICE', 'DETAILS'], ...notices.map((n) => [n.kind, n.message])]);
  return out;
}
