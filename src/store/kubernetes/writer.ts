// The narrow writer the controller and the operator commands get: every write they make of an IPPool, an
// OverlappingRangeIPReservation or a NodeSlicePool, each through the rules of DESIGN §9. A pool changes only by a
// plan committed conditionally on the version it was planned on (commit.ts); a reservation is only created (never
// overwritten) or deleted on the exact uid and resourceVersion judged; a NodeSlicePool is written conditionally on
// the version read. The raw writes (resources.ts) are private to this folder.
import { statusText, type ApiClient } from '../../kube/api.ts';
import type { Cidr } from '../../ip/cidr.ts';
import type { IPAddress } from '../../ip/address.ts';
import { isRecord } from '../../record.ts';
import type { AllocationRecord, Plan, PoolRef, SliceVersion } from '../store.ts';
import { commitPool, fetchPool, type CommitLog, type CommitOptions } from './commit.ts';
import { WriteMemory } from './contention.ts';
import { API_VERSION, getObject, objectPath, type ObjectVersion } from './objects.ts';
import { rangeText, RETIRED_ANNOTATION, retiredValue, type PoolState } from './pool-object.ts';
import { releaseReservation } from './reservations.ts';
import { createObject, deleteExactly, mergePatch } from './resources.ts';
import { writeNodeSlicePool, type DecideObject, type SliceWrite } from './slice-pool-write.ts';

export type { CommitLog } from './commit.ts';
export type { DecideObject, SliceWrite } from './slice-pool-write.ts';
/** Where the controller pre-binds a sliced sticky network's declared addresses (docs/sticky.md): a pure reading. */
export { stickyAreaPool } from './node-slices.ts';

const RESERVATIONS = 'overlappingrangeipreservations';

export interface WriterCommitOptions {
  /** Time spent on conflicts before the commit gives up (kind Conflict). */
  readonly budgetMs: number;
  readonly log: CommitLog;
  /** Runs right before every pool write; throws to stop (a lost lease). */
  readonly beforeWrite?: () => void;
  /**
   * The pool as the caller's watch cache has it, for a plan that claims nothing (a release): it is written on this
   * conditionally, without a read first (a changed pool is refused, then read and planned again). Not for claims:
   * this writer reserves nothing, so a claim would be written on the cached view unread.
   */
  readonly initial?: PoolState;
}

/** A reservation as judged: its name and the version a delete is conditional on. */
export interface JudgedReservation extends ObjectVersion {
  readonly name: string;
}

export class PoolWriter {
  readonly #api: ApiClient;
  /** This writer's own memory of other writers (CommitContext.memory): nothing is shared with a node's writers. */
  readonly #memory = new WriteMemory();

  constructor(api: ApiClient) {
    this.#api = api;
  }

  /** The pool as the API has it now (a missing pool is empty). */
  read(pool: PoolRef, log: CommitLog): Promise<PoolState> {
    return fetchPool({ api: this.#api, log }, pool);
  }

  /**
   * Commits a plan on the pool read fresh: conditional on the version planned on, re-read and re-planned on a
   * conflict. No reservation is created or deleted here: a released address keeps its reservation until it is free
   * in every pool (reservations go through releaseReservation or deleteReservation).
   */
  commit<T>(pool: PoolRef, plan: Plan<T>, options: WriterCommitOptions): Promise<T> {
    const ctx = {
      api: this.#api,
      reservations: false,
      budgetMs: options.budgetMs,
      cleanupTimeoutMs: CLEANUP_TIMEOUT_MS,
      log: options.log,
      memory: this.#memory,
    };
    const commitOptions: CommitOptions = {
      ...(options.beforeWrite === undefined ? {} : { beforeWrite: options.beforeWrite }),
      ...(options.initial === undefined ? {} : { initial: options.initial }),
    };
    return commitPool(ctx, pool, plan, commitOptions);
  }

  /**
   * Commits a claim of DESIGN §12 (an IPAddressClaim's address, a PrefixClaim's block) on the pool read fresh, as an
   * ADD commits: with `reservations`, each claimed address is reserved cluster-wide before the conditional pool write,
   * and the commit confirms the reservation before it answers. Records carry no node: no node's GC judges them.
   */
  claim<T>(
    pool: PoolRef,
    plan: Plan<T>,
    options: {
      readonly reservations: boolean;
      readonly budgetMs: number;
      readonly log: CommitLog;
      readonly beforeWrite?: () => void;
    },
  ): Promise<T> {
    const ctx = {
      api: this.#api,
      reservations: options.reservations,
      budgetMs: options.budgetMs,
      cleanupTimeoutMs: CLEANUP_TIMEOUT_MS,
      log: options.log,
      memory: this.#memory,
    };
    return commitPool(ctx, pool, plan, options.beforeWrite === undefined ? {} : { beforeWrite: options.beforeWrite });
  }

  /**
   * Retires a drained slice's pool: marks it (conditional on the empty version read) so that an ADD which read the
   * slice as its own before it drained can no longer claim there; a missing pool is created retired. False when
   * the pool holds any allocation, changed since the read, or does not look like a pool.
   */
  async retireIfEmpty(pool: string, slice: Cidr, version: SliceVersion): Promise<boolean> {
    const object = await getObject(this.#api, 'ippools', pool);
    const annotations = { [RETIRED_ANNOTATION]: retiredValue(version) };
    if (object === undefined) {
      const body = {
        apiVersion: API_VERSION,
        kind: 'IPPool',
        metadata: { name: pool, annotations },
        spec: { range: rangeText(slice), allocations: {} },
      };
      return (await createObject(this.#api, 'ippools', body)).kind === 'created';
    }
    // Anything unexpected counts as holding addresses: the slice keeps draining rather than risk a duplicate.
    const metadata = isRecord(object) ? object['metadata'] : undefined;
    const spec = isRecord(object) ? object['spec'] : undefined;
    const resourceVersion = isRecord(metadata) ? metadata['resourceVersion'] : undefined;
    if (!isRecord(spec) || typeof resourceVersion !== 'string') return false;
    const allocations = spec['allocations'];
    if (!(allocations === undefined || (isRecord(allocations) && Object.keys(allocations).length === 0))) return false;
    // A plugin write since the read (a late claim) makes this 409: the slice keeps draining.
    return (
      (await mergePatch(this.#api, 'ippools', pool, { metadata: { resourceVersion, annotations } })).kind === 'patched'
    );
  }

  /**
   * Creates the empty IPPool of a slice the controller is about to hand (or has handed) to a node, so that the pools
   * record every slice assignment (a NodeSlicePool deleted and re-created is rebuilt from them). A POST: an existing
   * pool, whatever it holds, is left as it is. True when this call created it.
   */
  async ensureSlicePool(pool: string, slice: Cidr): Promise<boolean> {
    const body = {
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: pool },
      spec: { range: rangeText(slice), allocations: {} },
    };
    return (await createObject(this.#api, 'ippools', body)).kind === 'created';
  }

  /** Deletes a NodeSlicePool only in the version judged (uid and resourceVersion preconditions). */
  deleteNodeSlicePool(name: string, judged: ObjectVersion): Promise<'deleted' | 'gone' | 'conflict'> {
    return deleteExactly(this.#api, 'nodeslicepools', name, judged);
  }

  /**
   * Re-creates the missing reservation of an address a pool holds. A POST: when one exists meanwhile (whoever it
   * names) it is left as it is. True when this call created it.
   */
  async recreateReservation(name: string, record: AllocationRecord): Promise<boolean> {
    const spec = { podref: record.podRef, ifname: record.ifname, containerid: record.containerId };
    const body = {
      apiVersion: API_VERSION,
      kind: 'OverlappingRangeIPReservation',
      metadata: { name, namespace: this.#api.namespace },
      spec,
    };
    return (await createObject(this.#api, RESERVATIONS, body)).kind === 'created';
  }

  /**
   * Deletes a reservation judged orphaned (its address free in every pool), only in the version judged: one changed
   * since (re-adopted, handed over) or re-created is not what was judged and stays.
   */
  async deleteReservation(judged: JudgedReservation): Promise<'deleted' | 'gone' | 'conflict'> {
    return deleteExactly(this.#api, RESERVATIONS, judged.name, judged);
  }

  /** After a pool write released `record`'s address: its reservation goes if it still names that attachment. */
  releaseReservation(pool: PoolRef, ip: IPAddress, record: AllocationRecord): Promise<'deleted' | 'kept' | 'gone'> {
    return releaseReservation(this.#api, pool, ip, record);
  }

  /**
   * Writes an IPPool's status subresource conditional on the version it describes: 'stale' when the pool moved on
   * or is gone (the next pass writes it again), `problem` for any other refusal.
   */
  async writePoolStatus(
    pool: { readonly name: string; readonly resourceVersion: string },
    status: Record<string, unknown>,
  ): Promise<'written' | 'stale' | { problem: string }> {
    const res = await this.#api.send({
      method: 'PATCH',
      path: `${objectPath(this.#api.namespace, 'ippools', pool.name)}/status`,
      body: { metadata: { resourceVersion: pool.resourceVersion }, status },
      contentType: 'application/merge-patch+json',
    });
    if (res.status === 200) return 'written';
    if (res.status === 409 || res.status === 404) return 'stale';
    return { problem: statusText(res) };
  }

  /** Reads the NodeSlicePool, lets `decide` make the new object, and writes it conditionally (retried on 409). */
  writeNodeSlicePool(
    name: string,
    decide: DecideObject,
    options: { leading: () => boolean; attempts?: number },
  ): Promise<SliceWrite> {
    return writeNodeSlicePool(this.#api, name, decide, options);
  }
}

/** Per-request timeout of best-effort clean-up calls on a failed commit. */
const CLEANUP_TIMEOUT_MS = 2_000;
