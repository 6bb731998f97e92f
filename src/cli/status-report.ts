// `hereabouts status`: what the pools look like, decided from listed objects only (pure). Counts are bigints: JSON
// prints them as numbers, or as decimal strings where an IPv6 range makes them exceed 2^53 - 1 (connect.ts toJson).
import { warmHolder } from '../store/warm-record.ts';
import { claimHolder } from '../store/claim-record.ts';
import { capacity, freeCount } from '../allocator/capacity.ts';
import { HereaboutsError } from '../errors.ts';
import { DEFAULT_POLICY, orphanReason, type CleanupPolicy } from '../controller/orphans/orphans.ts';
import type { PodView } from '../controller/orphans/pod-view.ts';
import { createdTimes } from '../controller/pools/view.ts';
import { formatIP } from '../ip/address.ts';
import { formatCidr, masked, parseCidr, type Cidr } from '../ip/cidr.ts';
import { usableSpan } from '../ip/range.ts';
import type { RangeConfig } from '../config/types.ts';
import { decodeAllocations } from '../store/kubernetes/pool-object.ts';
import { poolName } from '../config/names.ts';
import { columns } from './inventory.ts';
import { recordOf } from '../record.ts';
import type { AllocationRecord } from '../store/store.ts';

/** "namespace/name" -> every pod in the cluster; undefined when pods could not be listed. */
export type LivePods = ReadonlyMap<string, PodView> | undefined;

/** What orphans are judged with: the controller's rule and policy, at one instant. */
export interface OrphanJudge {
  readonly policy: CleanupPolicy;
  readonly nowMs: number;
}

export interface PoolRow {
  readonly name: string;
  readonly range: string;
  /** Addresses the range can hand out (its usable span: exclusions and gateways live in the NADs, not the pool). */
  readonly capacity: bigint | null;
  readonly used: number;
  /** Of `used`: warm addresses node agents hold, not handed to a pod yet (DESIGN §11). */
  readonly warm: number;
  /** Of `used`: addresses held by Cluster API IPAddressClaims (DESIGN §12), one record each. */
  readonly claims: number;
  /** Of `used`: PrefixClaims, one record each (at its block's first address; the block is the claim's). */
  readonly prefixes: number;
  /** Of `used`: sticky addresses (docs/sticky.md), bound to a StatefulSet replica or a VM; never orphans. */
  readonly sticky: number;
  readonly free: bigint | null;
  /** Allocations the controller (default flags) would release now; null when pods could not be listed. */
  readonly orphans: number | null;
  /** The node owning this pool when it is a node slice. */
  readonly node?: string;
  readonly problems: readonly string[];
}

export interface SliceRow {
  readonly network: string;
  readonly range: string;
  readonly sliceSize: string;
  readonly assigned: number;
  readonly free: number;
  readonly nodes: ReadonlyArray<{ readonly nodeName: string; readonly sliceRange: string }>;
}

export interface StatusReport {
  readonly namespace: string;
  readonly pools: readonly PoolRow[];
  readonly slices: readonly SliceRow[];
  readonly warnings: readonly string[];
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const nameOf = (item: unknown): string => str(recordOf(recordOf(item)['metadata'])['name']);

export function buildReport(
  namespace: string,
  ippools: readonly unknown[],
  nodeSlicePools: readonly unknown[],
  pods: LivePods,
  judge: OrphanJudge = { policy: DEFAULT_POLICY, nowMs: Date.now() },
): StatusReport {
  const owners = new Map<string, string>(); // IPPool name -> node
  const slices = nodeSlicePools.map((item) => sliceRow(item, owners));
  const pools = ippools.map((item) => poolRow(item, pods, owners, judge)).sort((a, b) => a.name.localeCompare(b.name));
  const warnings: string[] = [];
  if (pods === undefined) warnings.push('pods could not be listed: orphans are not counted');
  if (pools.length === 0)
    warnings.push(`no IPPools in namespace ${namespace} (the plugin's kubeconfig context namespace; try --namespace)`);
  for (const p of pools) warnings.push(...p.problems);
  return { namespace, pools, slices: slices.sort((a, b) => a.network.localeCompare(b.network)), warnings };
}

function sliceRow(item: unknown, owners: Map<string, string>): SliceRow {
  const network = nameOf(item);
  const spec = recordOf(recordOf(item)['spec']);
  const entries = recordOf(recordOf(item)['status'])['allocations'];
  const nodes: Array<{ nodeName: string; sliceRange: string }> = [];
  let free = 0;
  for (const entry of Array.isArray(entries) ? entries : []) {
    const nodeName = str(recordOf(entry)['nodeName']);
    const sliceRange = str(recordOf(entry)['sliceRange']);
    if (nodeName === '') {
      free++;
      continue;
    }
    nodes.push({ nodeName, sliceRange });
    let slice: Cidr;
    try {
      slice = masked(parseCidr(sliceRange));
    } catch {
      continue; // an unreadable slice names no pool; the row still shows it
    }
    // The pool carries the network prefix only when the NADs set network_name; either name may be the one in use.
    owners.set(poolName(slice, { node: nodeName }), nodeName);
    owners.set(poolName(slice, { networkName: network, node: nodeName }), nodeName);
  }
  return { network, range: str(spec['range']), sliceSize: str(spec['sliceSize']), assigned: nodes.length, free, nodes };
}

function poolRow(item: unknown, pods: LivePods, owners: ReadonlyMap<string, string>, judge: OrphanJudge): PoolRow {
  const name = nameOf(item);
  const spec = recordOf(recordOf(item)['spec']);
  const rangeText = str(spec['range']);
  const node = owners.get(name);
  const base = { name, ...(node === undefined ? {} : { node }) };
  let cidr: Cidr;
  try {
    cidr = masked(parseCidr(rangeText));
  } catch {
    return {
      ...base,
      range: rangeText,
      capacity: null,
      used: 0,
      warm: 0,
      claims: 0,
      prefixes: 0,
      sticky: 0,
      free: null,
      orphans: null,
      problems: [`IPPool ${name}: spec.range ${JSON.stringify(rangeText)} is not a CIDR`],
    };
  }
  const problems: string[] = [];
  let allocations;
  try {
    allocations = decodeAllocations(spec['allocations'] ?? {}, cidr, {
      where: `IPPool ${name}`,
      warn: (m) => problems.push(m),
      strict: false,
    });
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    return {
      ...base,
      range: formatCidr(cidr),
      capacity: null,
      used: 0,
      warm: 0,
      claims: 0,
      prefixes: 0,
      sticky: 0,
      free: null,
      orphans: null,
      problems: [err.message],
    };
  }
  let orphans: number | null = null;
  if (pods !== undefined) {
    orphans = 0;
    const createdAt = createdTimes(spec['allocations'], cidr);
    for (const [address, record] of allocations) {
      const ip = formatIP({ family: cidr.family, value: address });
      if (
        orphanReason(record, ip, pods.get(record.podRef), judge.policy, judge.nowMs, createdAt.get(address)) !==
        undefined
      )
        orphans++;
    }
  }
  const span = usableSpan(cidr);
  const range: RangeConfig = { cidr, start: span.first, end: span.last, exclude: [] };
  return {
    ...base,
    range: formatCidr(cidr),
    capacity: capacity(range),
    used: allocations.size,
    ...holderCounts(allocations.values()),
    free: freeCount(range, allocations),
    orphans,
    problems,
  };
}

/** How many records node agents hold warm, IPAddressClaims hold, and PrefixClaims hold, and how many are bound. */
function holderCounts(records: Iterable<AllocationRecord>): {
  warm: number;
  claims: number;
  prefixes: number;
  sticky: number;
} {
  const counts = { warm: 0, claims: 0, prefixes: 0, sticky: 0 };
  for (const record of records) {
    if (warmHolder(record) !== undefined) counts.warm++;
    if (record.binding !== undefined) counts.sticky++;
    const kind = claimHolder(record)?.kind;
    if (kind === 'IPAddressClaim') counts.claims++;
    else if (kind === 'PrefixClaim') counts.prefixes++;
  }
  return counts;
}

/** Aligned columns: the pools, then the node-slice pools, then warnings. */
export function formatTable(report: StatusReport): string {
  const rows = [
    ['POOL', 'RANGE', 'CAPACITY', 'USED', 'WARM', 'CLAIMS', 'PREFIXES', 'STICKY', 'FREE', 'ORPHANS', 'NODE'],
    ...report.pools.map((p) => [
      p.name,
      p.range,
      p.capacity?.toString() ?? '?',
      String(p.used),
      String(p.warm),
      String(p.claims),
      String(p.prefixes),
      String(p.sticky),
      p.free?.toString() ?? '?',
      p.orphans === null ? '?' : String(p.orphans),
      p.node ?? '-',
    ]),
  ];
  let out = `namespace ${report.namespace}: ${report.pools.length} pool(s)\n${columns(rows)}`;
  if (report.slices.length > 0) {
    const sliceRows = [
      ['NETWORK', 'RANGE', 'SLICE', 'ASSIGNED', 'FREE'],
      ...report.slices.map((s) => [s.network, s.range, s.sliceSize, String(s.assigned), String(s.free)]),
    ];
    out += `\nnode slices:\n${columns(sliceRows)}`;
  }
  for (const warning of report.warnings) out += `warning: ${warning}\n`;
  return out;
}
