// What the operator commands judge: the IPPools, reservations and NodeSlicePools of one namespace and the pods they
// name, as listed at one instant, with each pool's network (the `network_name` prefix of its object names) and, for
// a node-slice pool, its node. Pure: the reads are in inventory-read.ts.
import type { IPAddress } from '../ip/address.ts';
import { contains } from '../ip/cidr.ts';
import type { PodView } from '../controller/orphans/pod-view.ts';
import { poolIdentity as identity, sliceOwners } from '../controller/pools/identity.ts';
import { poolView, type PoolView } from '../controller/pools/view.ts';
import { reservedAddresses } from '../controller/reservations/orphaned.ts';
import {
  nodeSlicePoolView,
  reservationView,
  type NodeSlicePoolView,
  type ReservationView,
} from '../controller/runtime/views.ts';
import { reservationName } from '../config/names.ts';
import type { AllocationRecord } from '../store/store.ts';
import { recordOf } from '../record.ts';

export interface PodInfo {
  readonly view: PodView;
  /** spec.nodeName; absent while unscheduled. */
  readonly node?: string;
}

/** podRef -> pod; undefined when pods could not be listed. */
export type Pods = ReadonlyMap<string, PodInfo> | undefined;

export interface PoolInfo {
  readonly view: PoolView;
  /** The network_name prefix of its objects ('' for none); undefined when its name follows no naming rule. */
  readonly network?: string;
  /** The node owning it, for a node-slice pool. */
  readonly node?: string;
}

export interface ReservationInfo extends ReservationView {
  readonly containerId: string;
  readonly ifname: string;
  /** The canonical addresses its name may stand for (one, unless the name is ambiguous). */
  readonly addresses: readonly string[];
}

export interface Inventory {
  readonly namespace: string;
  readonly nowMs: number;
  readonly pools: readonly PoolInfo[];
  readonly reservations: ReadonlyMap<string, ReservationInfo>;
  readonly slices: readonly NodeSlicePoolView[];
  readonly pods: Pods;
  /** The network names the NADs declare and the pools' prefixes: they decide how reservation names split. */
  readonly networkNames: ReadonlySet<string>;
  /** The cluster's nodes by name; undefined when they were not listed (not asked for, or not allowed). */
  readonly nodes?: ReadonlySet<string>;
}

export interface Listed {
  readonly namespace: string;
  readonly nowMs: number;
  readonly ippools: readonly unknown[];
  readonly reservations: readonly unknown[];
  readonly nodeSlicePools: readonly unknown[];
  readonly pods: Pods;
  readonly nadNetworkNames: readonly string[];
  readonly nodes?: readonly string[] | undefined;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export function buildInventory(listed: Listed): Inventory {
  const slices = listed.nodeSlicePools.map(nodeSlicePoolView).sort((a, b) => a.name.localeCompare(b.name));
  const owners = sliceOwners(slices);
  const pools: PoolInfo[] = [];
  for (const item of listed.ippools) {
    const view = poolView(item);
    if (view !== undefined) pools.push({ view, ...identity(view, owners) });
  }
  pools.sort((a, b) => a.view.name.localeCompare(b.view.name));
  const networkNames = new Set(listed.nadNetworkNames);
  for (const p of pools) if (p.network !== undefined && p.network !== '') networkNames.add(p.network);
  const reservations = new Map<string, ReservationInfo>();
  for (const item of listed.reservations) {
    const spec = recordOf(recordOf(item)['spec']);
    const view = reservationView(item);
    reservations.set(view.name, {
      ...view,
      containerId: str(spec['containerid']),
      ifname: str(spec['ifname']),
      addresses: reservedAddresses(view.name, networkNames),
    });
  }
  return {
    namespace: listed.namespace,
    nowMs: listed.nowMs,
    pools,
    reservations,
    slices,
    pods: listed.pods,
    networkNames,
    ...(listed.nodes === undefined ? {} : { nodes: new Set(listed.nodes) }),
  };
}

/** The pools whose range contains the address (of network `network` when given). */
export function poolsContaining(inv: Inventory, ip: IPAddress, network?: string): PoolInfo[] {
  return inv.pools.filter(
    (p) => p.view.range !== undefined && contains(p.view.range, ip) && (network === undefined || p.network === network),
  );
}

/** The name of the reservation an address of this pool has (undefined when the pool's network is unknown). */
export function reservationNameFor(pool: PoolInfo, ip: IPAddress): string | undefined {
  return pool.network === undefined ? undefined : reservationName(ip, pool.network === '' ? undefined : pool.network);
}

export type ReservationState = 'agrees' | 'other-attachment' | 'missing' | 'unknown';

/** Whether the address's reservation names the same pod (and container, when it records one) as the pool's record. */
export function reservationState(
  inv: Inventory,
  pool: PoolInfo,
  ip: IPAddress,
  record: AllocationRecord,
): { name?: string; state: ReservationState; reservation?: ReservationInfo } {
  const name = reservationNameFor(pool, ip);
  if (name === undefined) return { state: 'unknown' };
  const reservation = inv.reservations.get(name);
  if (reservation === undefined) return { name, state: 'missing' };
  const same =
    reservation.podRef === record.podRef &&
    (reservation.containerId === '' || reservation.containerId === record.containerId);
  return { name, state: same ? 'agrees' : 'other-attachment', reservation };
}

/** The pod a record names, when pods were listed: undefined when it does not exist. */
export function podOf(inv: Inventory, record: AllocationRecord): PodInfo | undefined {
  return inv.pods?.get(record.podRef);
}

/** "3m", "2h5m", "4d": how long ago, for tables. */
export function age(sinceMs: number | undefined, nowMs: number): string {
  if (sinceMs === undefined) return '-';
  const s = Math.max(0, Math.floor((nowMs - sinceMs) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  return `${Math.floor(h / 24)}d`;
}

/** "in 4m", for instants ahead. */
export function inTime(atMs: number, nowMs: number): string {
  return `in ${age(nowMs, atMs)}`;
}

/** Aligned columns; the last column is not padded. */
export function columns(rows: readonly (readonly string[])[]): string {
  const [first] = rows;
  if (first === undefined) return '';
  const widths = first.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return (
    rows
      .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '))
      .join('\n') + '\n'
  );
}
