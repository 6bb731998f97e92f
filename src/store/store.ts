// The seam between allocation policy (src/ipam, src/allocator) and durable state (local files or the
// Kubernetes API). Neither side imports the other; both import this file.
import type { NetworkConfig, RangeConfig } from '../config/types.ts';

export interface AllocationRecord {
  readonly containerId: string;
  readonly ifname: string;
  /** "namespace/name" as Whereabouts writes `podref`; "" when the runtime gave no pod. */
  readonly podRef: string;
  readonly podUid?: string;
  /** The node that made the allocation (Kubernetes store); absent on the local store. */
  readonly node?: string;
  /** When the record was written for its container (RFC 3339); GC spares young records. Absent in old records. */
  readonly createdAt?: string;
  /**
   * A sticky address (docs/sticky.md): the workload identity it is bound to, "StatefulSet/<name>/<ordinal>" or
   * "VirtualMachine/<name>" in the namespace of `podRef` (sticky-binding.ts). A DEL keeps such a record; only the
   * controller releases it, once the identity is gone for its grace period.
   */
  readonly binding?: string;
}

/** What the cluster says of the pod an ADD is for: what a sticky address binds to (docs/sticky.md). */
export interface PodFacts {
  readonly uid: string;
  /** The pod's controller (the owner reference with `controller: true`). */
  readonly owner?: { readonly apiVersion: string; readonly kind: string; readonly name: string };
  /** The label `apps.kubernetes.io/pod-index` (a StatefulSet replica's ordinal). */
  readonly podIndex?: string;
  /** The annotation `hereabouts.cni.cncf.io/sticky` ("true" or "false" opts the pod in or out). */
  readonly sticky?: string;
}

/** Current allocations of one pool, keyed by absolute address value (not offset). */
export type Allocations = ReadonlyMap<bigint, AllocationRecord>;

export interface PoolRef {
  /** Pool name as in DESIGN §4 (the IPPool name); the local store escapes it into a file name. */
  readonly name: string;
  /** `network_name`, else the CNI network name: the local store's directory, the reservation-name prefix. */
  readonly network: string;
  /** Whether `network_name` was configured (it prefixes Kubernetes object names only then). */
  readonly networkNamed: boolean;
  readonly range: RangeConfig;
  /** Prefix length of the results: a node-slice pool answers with the whole range's mask, not the slice's. */
  readonly resultPrefix?: number;
  /**
   * A node-slice pool to allocate from: the node whose slice it is (the NodeSlicePool is named `network`). A claim in
   * a pool the controller retired is refused, whatever NodeSlicePool version the request read, unless the
   * NodeSlicePool read after the mark was seen assigns the slice to this node and does not drain it (docs/safety.md).
   */
  readonly sliceNode?: string;
  /**
   * Decide on the pool as the API has it, through a conditional write, never from node-local state (a node agent's
   * warm set): a sticky ADD, whose binding another node may have written since this node's view (docs/sticky.md).
   */
  readonly synchronous?: boolean;
}

/** A NodeSlicePool version: what a retire mark records (docs/safety.md). */
export interface SliceVersion {
  readonly uid: string;
  readonly generation: number;
}

export interface Claim {
  readonly address: bigint;
  readonly record: AllocationRecord;
}

export interface PoolChange {
  /** At most one new address per pool per ADD. */
  readonly claim?: Claim;
  /** More new addresses in the same write: only a node agent's warm refill asks for them (DESIGN §11). */
  readonly moreClaims?: readonly Claim[];
  readonly release?: readonly bigint[];
  /** Rewritten records of addresses already held (an idempotent ADD records the new container id). */
  readonly update?: ReadonlyArray<{ readonly address: bigint; readonly record: AllocationRecord }>;
}

export interface Planned<T> {
  /** null: nothing to write. */
  readonly change: PoolChange | null;
  readonly value: T;
}

/**
 * Decides a change from the pool's current allocations. It may run more than once: after a write conflict, and
 * with `refused` grown when the store found a claimed address taken elsewhere (an overlapping range's
 * reservation). It must be pure.
 */
export type Plan<T> = (current: Allocations, refused: ReadonlySet<bigint>, hints?: PlanHints) => Planned<T>;

export interface PlanHints {
  /**
   * Addresses this update already reserved cluster-wide: a plan free to choose should prefer one of them, so a
   * re-plan after a conflict commits what was reserved instead of reserving another address.
   */
  readonly reserved: ReadonlySet<bigint>;
  /**
   * Set once this update collided with other writers (a reservation taken, a write conflict) on a pool they share:
   * a plan free to choose starts its search at this fraction (0 <= x < 1) of the range instead of at its lowest
   * address, so racing writers stop probing the same addresses.
   */
  readonly spread?: number;
  /**
   * A Whereabouts plugin writes this pool (a rolling switch): a plan free to choose takes the highest free address,
   * away from the lowest-first picks of Whereabouts' ADDs (allocator/highest-free.ts). Wins over `spread`.
   */
  readonly highestFirst?: boolean;
}

/** Why pools are asked for: a store without a node slice refuses to allocate but lets a release succeed. */
export type PoolPurpose = 'allocate' | 'release' | 'status';

export interface Store {
  /** This node's name when the store records one in allocations (GC only touches this node's records). */
  readonly node?: string;
  /** Runs `plan` on the pool's current state and durably applies its change, exclusive against every writer. */
  update<T>(pool: PoolRef, plan: Plan<T>): Promise<T>;
  /** The pools a request draws from; absent: one per configured range. Node-slice mode answers with this node's slices. */
  resolvePools?(
    config: NetworkConfig,
    options: {
      readonly purpose: PoolPurpose;
      /** A sticky ADD (docs/sticky.md): in node-slice mode it allocates in the network's sticky area. */
      readonly sticky?: boolean;
    },
  ): Promise<PoolRef[]>;
  read(pool: PoolRef): Promise<Allocations>;
  /**
   * The pod `namespace/name` as the cluster has it, for a sticky network: the node agent's watch of its node's pods,
   * else one read. Undefined when the pod does not exist or has another UID than `uid`. Absent: the store knows no
   * pods (the local store).
   */
  podFacts?(namespace: string, name: string, uid: string | undefined): Promise<PodFacts | undefined>;
  /** Throws HereaboutsError code 50 when the store cannot serve an ADD for these pools now. */
  status(pools: readonly PoolRef[]): Promise<void>;
  close(): Promise<void>;
}

/** Every address a change claims. */
export function claimsOf(change: PoolChange): Claim[] {
  return [...(change.claim === undefined ? [] : [change.claim]), ...(change.moreClaims ?? [])];
}
