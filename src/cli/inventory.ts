// What the operator commands judge: the IPPools, reservations and NodeSlicePools of one namespace and the pods they
// name, as listed at one instant, with each pool's network (the `network_name` prefix of its object names) and, for
// a node-slice pool, its node, and the claims (DESIGN §12) its records name. Pure: the reads are in
// inventory-read.ts.
import { bitsOf, type Family, type IPAddress } from '../ip/address.ts';
import { contains, type Cidr } from '../ip/cidr.ts';
import { CLUSTER_NAME_LABEL, metaOf } from '../controller/claims/objects.ts';
import { claimHolder, heldThrough, holderKey, type ClaimHolder } from '../store/claim-record.ts';
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
import { reservationName, reservationNetworkFor } from '../config/names.ts';
import type { AllocationRecord } from '../store/store.ts';
import { recordOf } from '../record.ts';
import type { StickyObjects } from './bindings.ts';

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

export type ClaimKind = ClaimHolder['kind'];

/** What an IPAddress says (the one of an IPAddressClaim's name, in its namespace). */
export interface IPAddressInfo {
  readonly name: string;
  readonly address: string;
  readonly prefix?: number;
  readonly gateway?: string;
  /** spec.claimRef.name. */
  readonly claim?: string;
}

/** A claim object of DESIGN §12, as read. */
export interface ClaimInfo {
  /** It has a deletionTimestamp: its finalizer releases the record first, then lets it go. */
  readonly deleting: boolean;
  /** An IPAddressClaim's Cluster: spec.clusterName, else its cluster.x-k8s.io/cluster-name label. */
  readonly cluster?: string;
  /** An IPAddressClaim's IPAddress (same name): null when there is none; absent when not read. */
  readonly ipAddress?: IPAddressInfo | null;
  /** Read, and there is no such claim (kept for its IPAddress, which may outlive it). */
  readonly gone?: true;
}

/** The claims of each kind by "namespace/name"; a kind absent was not read (not asked for, or not allowed). */
export type Claims = Partial<Record<ClaimKind, ReadonlyMap<string, ClaimInfo>>>;

/**
 * present, deleting (its finalizer is releasing it), gone (the controller's record pass releases its record), or
 * unknown (the claims of its kind were not read).
 */
export type ClaimState = 'present' | 'deleting' | 'gone' | 'unknown';

/** The controller's record pass releases a gone claim's record only this long after it was written. */
export { RECORD_GRACE_MS as CLAIM_RECORD_GRACE_MS } from '../controller/claims/record-pass.ts';

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
  /** The claims the pools' records name (DESIGN §12); undefined when none were read. */
  readonly claims?: Claims;
  /** What the bindings of the pools' sticky records (docs/sticky.md) depend on; undefined when not read. */
  readonly sticky?: StickyObjects;
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
  readonly claims?: Claims | undefined;
  readonly sticky?: StickyObjects | undefined;
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
  for (const p of pools) {
    const network = reservationNetworkOf(p);
    if (network !== undefined && network !== '') networkNames.add(network);
    if (p.network !== undefined && p.network !== '') networkNames.add(p.network);
  }
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
    ...(listed.claims === undefined ? {} : { claims: listed.claims }),
    ...(listed.sticky === undefined ? {} : { sticky: listed.sticky }),
  };
}

/**
 * The network_name the reservations of a pool's addresses carry: its network's, except for the IPPool of a claims
 * pool that lists its own addresses ("hereabouts-claims.<scope>.<pool>-<range>"), whose reservations all carry
 * "hereabouts-claims" (so overlapping claims pools never hand out one address twice). Undefined when the pool's
 * name follows no naming rule.
 */
export function reservationNetworkOf(pool: PoolInfo): string | undefined {
  return pool.network === undefined ? undefined : reservationNetworkFor(pool.network);
}

/** The pools whose range contains the address (of network `network` when given). */
export function poolsContaining(inv: Inventory, ip: IPAddress, network?: string): PoolInfo[] {
  return inv.pools.filter(
    (p) => p.view.range !== undefined && contains(p.view.range, ip) && (network === undefined || p.network === network),
  );
}

/** The name of the reservation an address of this pool has (undefined when the pool's network is unknown). */
export function reservationNameFor(pool: PoolInfo, ip: IPAddress): string | undefined {
  const network = reservationNetworkOf(pool);
  return network === undefined ? undefined : reservationName(ip, network === '' ? undefined : network);
}

/** none: a PrefixClaim's block, which is never reserved (its pool has no other writer). */
export type ReservationState = 'agrees' | 'other-attachment' | 'missing' | 'unknown' | 'none';

/** Whether the address's reservation names the same pod (and container, when it records one) as the pool's record. */
export function reservationState(
  inv: Inventory,
  pool: PoolInfo,
  ip: IPAddress,
  record: AllocationRecord,
): { name?: string; state: ReservationState; reservation?: ReservationInfo } {
  if (claimHolder(record)?.kind === 'PrefixClaim') return { state: 'none' };
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

/** A claim's object, as read from the API: spec.clusterName (else the Cluster API label) and its deletion. */
export function claimInfo(object: unknown): ClaimInfo {
  const meta = metaOf(object);
  const clusterName = recordOf(recordOf(object)['spec'])['clusterName'];
  const cluster = typeof clusterName === 'string' && clusterName !== '' ? clusterName : meta.labels[CLUSTER_NAME_LABEL];
  return { deleting: meta.deleting, ...(cluster === undefined || cluster === '' ? {} : { cluster }) };
}

/** An IPAddress object, as read from the API. */
export function ipAddressInfo(object: unknown): IPAddressInfo {
  const spec = recordOf(recordOf(object)['spec']);
  const claim = recordOf(spec['claimRef'])['name'];
  return {
    name: metaOf(object).name,
    address: str(spec['address']),
    ...(typeof spec['prefix'] === 'number' ? { prefix: spec['prefix'] } : {}),
    ...(typeof spec['gateway'] === 'string' && spec['gateway'] !== '' ? { gateway: spec['gateway'] } : {}),
    ...(typeof claim === 'string' ? { claim } : {}),
  };
}

/** The claim, as read (undefined when its kind was not read, or it is gone and nothing of it was read). */
export function claimOf(inv: Inventory, holder: ClaimHolder): ClaimInfo | undefined {
  return inv.claims?.[holder.kind]?.get(holderKey(holder));
}

export function claimState(inv: Inventory, holder: ClaimHolder): ClaimState {
  const known = inv.claims?.[holder.kind];
  if (known === undefined) return 'unknown';
  const info = known.get(holderKey(holder));
  return info === undefined || info.gone === true ? 'gone' : info.deleting ? 'deleting' : 'present';
}

/** The kinds of claim the pools' records name. */
export function claimKindsIn(pools: readonly PoolInfo[]): Set<ClaimKind> {
  const kinds = new Set<ClaimKind>();
  for (const pool of pools) {
    for (const record of pool.view.allocations.values()) {
      const holder = claimHolder(record);
      if (holder !== undefined) kinds.add(holder.kind);
    }
  }
  return kinds;
}

/** The block a PrefixClaim's record at `first` holds; undefined for any other holder. */
export function claimBlock(holder: ClaimHolder, family: Family, first: bigint): Cidr | undefined {
  if (holder.prefixLength === undefined) return undefined;
  return { family, address: first, prefix: Math.min(holder.prefixLength, bitsOf(family)) };
}

/** "PrefixClaim ns/name 10.0.0.64/26", "IPAddressClaim ns/name": who holds a claim record. */
export function describeClaim(holder: Pick<ClaimHolder, 'kind' | 'namespace' | 'name'>, block?: string): string {
  return `${holder.kind} ${holder.namespace}/${holder.name}${block === undefined ? '' : ` ${block}`}`;
}

/**
 * The record holding the address in the pool: its own, else the PrefixClaim record whose block contains it (the
 * record sits at the block's first address). `at` is where the record sits.
 */
export function holdingRecord(
  pool: PoolInfo,
  ip: IPAddress,
): { readonly at: bigint; readonly record: AllocationRecord } | undefined {
  const own = pool.view.allocations.get(ip.value);
  if (own !== undefined) return { at: ip.value, record: own };
  for (const [at, record] of pool.view.allocations) {
    if (at > ip.value) continue;
    const holder = claimHolder(record);
    if (holder?.prefixLength === undefined) continue;
    if (ip.value <= heldThrough(holder, ip.family, at)) return { at, record };
  }
  return undefined;
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
