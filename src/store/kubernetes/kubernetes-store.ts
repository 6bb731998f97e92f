// The Kubernetes datastore (`"datastore": "kubernetes"`): Whereabouts' IPPool objects are the source of truth, a
// node-local cache under the pool's file lock spares the reads (DESIGN §5). The write path is pool-update.ts.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import type { Logger } from '../../log/logger.ts';
import type { LeaderTiming, NetworkConfig } from '../../config/types.ts';
import { DEFAULT_LOCK_TIMING, type LockTiming } from '../../fs/lock.ts';
import { poolRefs } from '../pool-refs.ts';
import type { Allocations, Plan, PodFacts, PoolRef, Store } from '../store.ts';
import { readPodFacts } from './pod-facts.ts';
import type { NodePods } from './node-pods.ts';
import { KeyedQueue } from '../keyed-queue.ts';
import type { ApiClient } from '../../kube/api.ts';
import { toStoreError } from './api-errors.ts';
import type { WriteMemory } from './contention.ts';
import { NoSliceError, nodeSlicePools, stickyAreaPools } from './node-slices.ts';
import { STICKY_AREA_NODE } from '../sticky-binding.ts';
import { fetchPool, updatePool, type WriteContext } from './pool-update.ts';
import type { WarmSets } from './warm/warm-sets.ts';

export interface KubernetesStoreOptions {
  readonly api: ApiClient;
  /** This node's name: stamped on allocations, and it picks the node's slice. */
  readonly node: string;
  /** The node-local cache directory (`datastore.cacheDir`). */
  readonly cacheDir: string;
  /** enable_overlapping_ranges. */
  readonly reservations: boolean;
  readonly log: Logger;
  readonly lock?: Partial<LockTiming>;
  /** Time one pool update may spend on conflicts before failing with code 11. */
  readonly budgetMs?: number;
  /** Timeout of best-effort clean-up requests on the failure path. */
  readonly cleanupTimeoutMs?: number;
  /** What the host remembers of other writers across its commits (CommitContext.memory). */
  readonly memory: WriteMemory;
  /** Whereabouts' leader timings: pool updates write as the holder of its Lease while it writes (pool-update.ts). */
  readonly whereaboutsLease?: LeaderTiming;
  /** The node agent's warm sets (warm/warm-sets.ts); absent in a plugin process. */
  readonly warm?: WarmSets;
  /** The node agent's watch of its node's pods (pod-facts.ts); absent in a plugin process. */
  readonly pods?: NodePods;
}

export interface ResolveOptions {
  /** 'allocate' (default): ADD and CHECK. 'release': DEL and GC. 'status': STATUS (every failure is code 50). */
  readonly purpose?: 'allocate' | 'release' | 'status';
  /** A sticky ADD: in node-slice mode, the network's sticky area instead of this node's slice. */
  readonly sticky?: boolean;
}

/** STATUS reports whatever keeps an ADD from being served as code 50 (CNI spec: plugin not available). */
function asStatusError(err: unknown): HereaboutsError {
  if (err instanceof HereaboutsError && err.kind === ErrorKind.NotReady) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new HereaboutsError(ErrorKind.NotReady, `cannot serve an ADD now: ${msg}`, { cause: err });
}

export const DEFAULT_BUDGET_MS = 25_000;
export const DEFAULT_CLEANUP_TIMEOUT_MS = 2_000;

export class KubernetesStore implements Store {
  readonly node: string;
  readonly api: ApiClient;
  readonly #write: WriteContext;
  /** Pools read from the API during this process (STATUS reads each pool once for status() and read()). */
  readonly #fresh = new Map<string, Promise<Allocations>>();
  /** In-process queue per pool: the file lock excludes processes, this spares our own callers its polling. */
  readonly #queue = new KeyedQueue();
  readonly #warm: WarmSets | undefined;
  readonly #pods: NodePods | undefined;

  constructor(options: KubernetesStoreOptions) {
    this.node = options.node;
    this.#warm = options.warm;
    this.#pods = options.pods;
    this.api = options.api;
    this.#write = {
      api: options.api,
      node: options.node,
      reservations: options.reservations,
      cacheDir: options.cacheDir,
      scope: { server: options.api.endpoint.server, namespace: options.api.namespace },
      lockTiming: { ...DEFAULT_LOCK_TIMING, ...options.lock },
      budgetMs: options.budgetMs ?? DEFAULT_BUDGET_MS,
      cleanupTimeoutMs: options.cleanupTimeoutMs ?? DEFAULT_CLEANUP_TIMEOUT_MS,
      log: options.log,
      memory: options.memory,
      ...(options.whereaboutsLease === undefined ? {} : { whereaboutsLease: options.whereaboutsLease }),
    };
  }

  /**
   * The pools of a request: one per range, or this node's slice pools when node_slice_size is set (read from the
   * NodeSlicePool on every request). ADD and CHECK get the node's slice; a missing NodeSlicePool or slice, or a
   * slice that drains, is CNI code 11, for STATUS code 50. DEL and GC (`purpose: 'release'`) get every slice pool
   * this node may hold something in (its slice, its draining slices, the slices it remembers using), possibly none.
   */
  async resolvePools(config: NetworkConfig, options: ResolveOptions = {}): Promise<PoolRef[]> {
    if (config.ipam.nodeSliceSize === undefined) return poolRefs(config);
    const { api, node, cacheDir, scope, log } = this.#write;
    const purpose = options.purpose ?? 'allocate';
    if (purpose === 'allocate' && options.sticky === true) {
      return stickyAreaPools({ api, node, cacheDir, scope, log }, config);
    }
    try {
      return await nodeSlicePools({ api, node, cacheDir, scope, log, memory: this.#write.memory }, config, purpose);
    } catch (err) {
      // No slice for this node yet (or one that is moving) is no store failure: STATUS must not mark the node
      // NetworkNotReady for it; ADD answers code 11 meanwhile.
      if (purpose === 'status' && err instanceof NoSliceError) return [];
      if (purpose === 'status') throw asStatusError(err);
      throw err;
    }
  }

  update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
    this.#fresh.delete(pool.name);
    // The file lock excludes other processes; this queue spares our own callers its polling.
    const sync = (chosen: Plan<T>): Promise<T> =>
      this.#queue.run(pool.name, () => updatePool(this.#write, pool, chosen));
    // The sticky area is every node's: no node keeps warm addresses there. A sticky ADD is never answered from the
    // node's view: a binding written through another node may be missing from it.
    const warm = pool.synchronous === true || pool.sliceNode === STICKY_AREA_NODE ? undefined : this.#warm;
    return warm === undefined ? sync(plan) : warm.update(this.#write, pool, plan, sync);
  }

  /** The pool as the API has it now (CHECK and STATUS must not trust the cache). */
  read(pool: PoolRef): Promise<Allocations> {
    let pending = this.#fresh.get(pool.name);
    if (pending === undefined) {
      // In the agent, the hand-outs and releases it answered are written first: the pool then shows them.
      const landed = this.#warm?.landed(this.#write, pool) ?? Promise.resolve();
      pending = landed
        .then(() => fetchPool(this.#write, pool))
        .then(
          (state) => state.allocations,
          (err: unknown) => {
            this.#fresh.delete(pool.name);
            throw toStoreError(err, `IPPool ${pool.name}`);
          },
        );
      this.#fresh.set(pool.name, pending);
    }
    return pending;
  }

  podFacts(namespace: string, name: string, uid: string | undefined): Promise<PodFacts | undefined> {
    const pod = { namespace, name, uid };
    // A plugin process without an agent reads the pod itself, and warns through its own log of a forged owner.
    const facts =
      this.#pods?.facts(this.api, this.node, pod) ??
      readPodFacts(this.api, namespace, name, uid, { log: this.#write.log });
    return facts.catch((err: unknown) => {
      throw err instanceof HereaboutsError ? err : toStoreError(err, `pod ${namespace}/${name}`);
    });
  }

  async status(pools: readonly PoolRef[]): Promise<void> {
    for (const pool of pools) {
      try {
        await this.read(pool);
      } catch (err) {
        throw asStatusError(err);
      }
    }
  }

  async close(): Promise<void> {
    await this.#queue.drain();
    this.api.close();
  }
}
