// `hereabouts status`: what the pools look like, decided from listed objects only (pure, unit-tested).
import { formatCidr, masked, parseCidr, type Cidr } from '../ip/cidr.ts';
import { blockSize } from '../ip/block.ts';
import { usableSpan } from '../ip/range.ts';
import { decodeAllocations } from '../store/kubernetes/pool-object.ts';

export interface LivePod {
  readonly uid: string;
}

export interface PoolRow {
  readonly name: string;
  readonly range: string;
  /** Usable addresses of the range (decimal: an IPv6 range exceeds 2^53). */
  readonly capacity: string;
  readonly used: number;
  readonly free: string;
  /** Allocations whose pod is gone (or was re-created with another UID). */
  readonly orphans: number;
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
}

export interface StatusReport {
  readonly namespace: string;
  readonly pools: readonly PoolRow[];
  readonly slices: readonly SliceRow[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** `pods` maps "namespace/name" to the live pod. */
export function buildReport(namespace: string, ippools: readonly unknown[], nodeSlicePools: readonly unknown[], pods: ReadonlyMap<string, LivePod>): StatusReport {
  const sliceOwners = new Map<string, string>();
  const slices = nodeSlicePools.map((item): SliceRow => {
    const spec = obj(obj(item)['spec']);
    const allocations = Array.isArray(obj(obj(item)['status'])['allocations']) ? (obj(obj(item)['status'])['allocations'] as unknown[]) : [];
    let assigned = 0;
    for (const a of allocations) {
      const node = str(obj(a)['nodeName']);
      if (node === '') continue;
      assigned++;
      sliceOwners.set(str(obj(a)['sliceRange']), node);
    }
    return { network: str(obj(obj(item)['metadata'])['name']), range: str(spec['range']), sliceSize: str(spec['sliceSize']), assigned, free: allocations.length - assigned };
  });
  const pools = ippools.map((item) => poolRow(item, pods, sliceOwners));
  return { namespace, pools: pools.sort((a, b) => a.name.localeCompare(b.name)), slices };
}

function poolRow(item: unknown, pods: ReadonlyMap<string, LivePod>, sliceOwners: ReadonlyMap<string, string>): PoolRow {
  const name = str(obj(obj(item)['metadata'])['name']);
  const spec = obj(obj(item)['spec']);
  const rangeText = str(spec['range']);
  const problems: string[] = [];
  let cidr: Cidr;
  try {
    cidr = masked(parseCidr(rangeText));
  } catch {
    return { name, range: rangeText, capacity: '?', used: 0, free: '?', orphans: 0, problems: [`spec.range ${JSON.stringify(rangeText)} is not a CIDR`] };
  }
  const allocations = decodeAllocations(spec['allocations'] ?? {}, cidr, { where: `IPPool ${name}`, warn: (m) => problems.push(m), strict: false });
  let orphans = 0;
  for (const record of allocations.values()) {
    const pod = pods.get(record.podRef);
    if (record.podRef !== '' && (pod === undefined || (record.podUid !== undefined && record.podUid !== pod.uid))) orphans++;
  }
  const capacity = blockSize(usableSpan(cidr));
  const used = allocations.size;
  const free = capacity > BigInt(used) ? capacity - BigInt(used) : 0n;
  const node = sliceOwners.get(formatCidr(cidr));
  return { name, range: formatCidr(cidr), capacity: String(capacity), used, free: String(free), orphans, ...(node === undefined ? {} : { node }), problems };
}

/** Aligned columns, one pool a line, then the node-slice pools. */
export function formatTable(report: StatusReport): string {
  const rows = [
    ['POOL', 'RANGE', 'CAPACITY', 'USED', 'FREE', 'ORPHANS', 'NODE'],
    ...report.pools.map((p) => [p.name, p.range, p.capacity, String(p.used), p.free, String(p.orphans), p.node ?? '-']),
  ];
  let out = `namespace ${report.namespace}: ${report.pools.length} pool(s)\n${columns(rows)}`;
  if (report.slices.length > 0) {
    const sliceRows = [['NETWORK', 'RANGE', 'SLICE', 'ASSIGNED', 'FREE'], ...report.slices.map((s) => [s.network, s.range, s.sliceSize, String(s.assigned), String(s.free)])];
    out += `\nnode slices:\n${columns(sliceRows)}`;
  }
  for (const p of report.pools) for (const problem of p.problems) out += `warning: ${problem}\n`;
  return out;
}

function columns(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
