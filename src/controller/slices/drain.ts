// When a draining slice may go: it has drained for the grace period (timed from when this process first saw it
// draining, on the monotonic clock: a new leader waits a full grace again) and a fresh GET of its IPPool finds no
// allocation. The pool cache is not enough: it may not have seen a plugin's last write yet.
import { monotonicMs } from '../../clock.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { Cidr } from '../../ip/cidr.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { SliceVersion } from '../../store/store.ts';
import { poolName } from '../../config/names.ts';
import { messageOf } from '../../errors.ts';
import type { Log } from '../../log/json-log.ts';
import { cidrOrUndefined, type PoolView } from '../pools/view.ts';
import type { DrainingEntry } from './assign.ts';
import { sliceKey } from './lifecycle.ts';
import type { SliceSpec } from './spec.ts';

/**
 * How long a slice drains at least before its pool may be confirmed empty: longer than a plugin's ADD takes from
 * its read of the NodeSlicePool to its pool write (25 s budget plus request timeouts), so an ADD that read the
 * slice as its own before it was marked draining has landed (and is seen) or has failed.
 */
export const DEFAULT_DRAIN_GRACE_MS = 60_000;

export class DrainConfirmer {
  readonly #api: ApiClient;
  readonly #writer: PoolWriter;
  readonly #graceMs: number;
  /** "<network> <node> <slice>" -> when this process first saw the slice draining (monotonic ms). */
  readonly #since = new Map<string, number>();
  /** IPPools this process retired whose mark the pool cache has not shown yet. */
  readonly #retired = new Set<string>();

  constructor(api: ApiClient, graceMs: number) {
    this.#api = api;
    this.#writer = new PoolWriter(api);
    this.#graceMs = graceMs;
  }

  /**
   * The keys (sliceKey) of the draining slices whose IPPool is confirmed empty now, and retired: marked (conditional
   * on the empty version read) so that an ADD which read the slice as its own before it drained, and stalled past
   * the grace, can no longer claim there. A missing pool is created retired for the same reason.
   */
  async confirmEmpty(
    spec: SliceSpec,
    draining: readonly DrainingEntry[],
    input: {
      readonly pools: ReadonlyMap<string, PoolView>;
      readonly log: Log;
      readonly version: SliceVersion | undefined;
    },
  ): Promise<Set<string>> {
    const confirmed = new Set<string>();
    const now = monotonicMs();
    for (const name of this.#retired)
      if (input.pools.get(`${this.#api.namespace}/${name}`)?.retired === true) this.#retired.delete(name);
    const seen = new Set<string>();
    for (const d of draining) {
      const key = `${spec.network} ${sliceKey(d)}`;
      seen.add(key);
      const since = this.#since.get(key) ?? now;
      this.#since.set(key, since);
      if (now - since < this.#graceMs || input.version === undefined) continue;
      const slice = cidrOrUndefined(d.sliceRange);
      if (slice === undefined || d.nodeName === '') continue; // names no pool: it stays until an operator removes it
      const name = poolName(slice, { ...(spec.networkNamed ? { networkName: spec.network } : {}), node: d.nodeName });
      // The cache already sees addresses there: no need to ask.
      if ((input.pools.get(`${this.#api.namespace}/${name}`)?.allocations.size ?? 0) > 0) continue;
      if (await this.#retireIfEmpty(name, slice, input.version, input.log)) {
        confirmed.add(sliceKey(d));
        this.#retired.add(name);
      }
    }
    for (const key of this.#since.keys())
      if (key.startsWith(`${spec.network} `) && !seen.has(key)) this.#since.delete(key);
    return confirmed;
  }

  /** This process retired the pool, and the pool cache may not show the mark yet. */
  retiredHere(pool: string): boolean {
    return this.#retired.has(pool);
  }

  async #retireIfEmpty(pool: string, slice: Cidr, version: SliceVersion, log: Log): Promise<boolean> {
    try {
      return await this.#writer.retireIfEmpty(pool, slice, version);
    } catch (err) {
      log.warning(`cannot confirm IPPool ${pool} empty and retire it; its slice keeps draining: ${messageOf(err)}`);
      return false;
    }
  }
}
