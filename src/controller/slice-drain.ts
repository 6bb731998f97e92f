// When a draining slice may go: it has drained for the grace period (timed from when this process first saw it
// draining, on the monotonic clock: a new leader waits a full grace again) and a fresh GET of its IPPool finds no
// allocation. The pool cache is not enough: it may not have seen a plugin's last write yet.
import { monotonicMs } from '../clock.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { isObject } from '../store/kubernetes/pool-object.ts';
import { getObject } from '../store/kubernetes/resources.ts';
import { poolName } from '../store/names.ts';
import { errorText, type Log } from './log.ts';
import { cidrOrUndefined, type PoolView } from './pool-view.ts';
import type { DrainingEntry } from './slice-assign.ts';
import { sliceKey } from './slice-lifecycle.ts';
import type { SliceSpec } from './slice-spec.ts';

/**
 * How long a slice drains at least before its pool may be confirmed empty: longer than a plugin's ADD takes from
 * its read of the NodeSlicePool to its pool write (25 s budget plus request timeouts), so an ADD that read the
 * slice as its own before it was marked draining has landed (and is seen) or has failed.
 */
export const DEFAULT_DRAIN_GRACE_MS = 60_000;

export class DrainConfirmer {
  readonly #api: ApiClient;
  readonly #graceMs: number;
  /** "<network> <node> <slice>" -> when this process first saw the slice draining (monotonic ms). */
  readonly #since = new Map<string, number>();

  constructor(api: ApiClient, graceMs: number) {
    this.#api = api;
    this.#graceMs = graceMs;
  }

  /** The keys (sliceKey) of the draining slices whose IPPool is confirmed empty now. */
  async confirmEmpty(
    spec: SliceSpec,
    draining: readonly DrainingEntry[],
    input: { readonly pools: ReadonlyMap<string, PoolView>; readonly log: Log },
  ): Promise<Set<string>> {
    const confirmed = new Set<string>();
    const now = monotonicMs();
    const seen = new Set<string>();
    for (const d of draining) {
      const key = `${spec.network} ${sliceKey(d)}`;
      seen.add(key);
      const since = this.#since.get(key) ?? now;
      this.#since.set(key, since);
      if (now - since < this.#graceMs) continue;
      const slice = cidrOrUndefined(d.sliceRange);
      if (slice === undefined || d.nodeName === '') continue; // names no pool: it stays until an operator removes it
      const name = poolName(slice, { ...(spec.networkNamed ? { networkName: spec.network } : {}), node: d.nodeName });
      // The cache already sees addresses there: no need to ask.
      if ((input.pools.get(`${this.#api.namespace}/${name}`)?.allocations.size ?? 0) > 0) continue;
      if (await this.#emptyInApi(name, input.log)) confirmed.add(sliceKey(d));
    }
    for (const key of this.#since.keys()) if (key.startsWith(`${spec.network} `) && !seen.has(key)) this.#since.delete(key);
    return confirmed;
  }

  async #emptyInApi(pool: string, log: Log): Promise<boolean> {
    let object: unknown;
    try {
      object = await getObject(this.#api, 'ippools', pool);
    } catch (err) {
      log.warning(`cannot read IPPool ${pool} to confirm it is empty; its slice keeps draining: ${errorText(err)}`);
      return false;
    }
    if (object === undefined) return true;
    // Anything unexpected counts as holding addresses: the slice keeps draining rather than risk a duplicate.
    const spec = isObject(object) ? object['spec'] : undefined;
    if (!isObject(spec)) return false;
    const allocations = spec['allocations'];
    return allocations === undefined || (isObject(allocations) && Object.keys(allocations).length === 0);
  }
}
