// Node slices: for every network whose NetworkAttachmentDefinitions ask for node_slice_size, keep its NodeSlicePool
// (named after the network, in the pools' namespace) giving each live node a slice. A slice whose node left, or of
// an earlier slicing, drains (status.draining) and is released only once it has drained for the grace period and
// a fresh GET of its IPPool finds it empty (the caches may lag behind a plugin's write). The network's slice pools
// are the truth about which space is in use: the NodeSlicePool is decided with them beside it (held.ts,
// rebuild.ts), and the pool of a slice is created before the slice is handed out, so the pools record every
// assignment. Decided from the caches otherwise; written only when something changes. A network follows its oldest
// NAD; a NAD that asks for another slicing gets a Warning event and is named in a condition on the pool (logged
// once). A NodeSlicePool whose network no NAD asks for any more is deleted once its slice pools are empty.
import { STICKY_AREA_NODE } from '../../store/sticky-binding.ts';
import { masked, parseCidr } from '../../ip/cidr.ts';
import { sliceCount } from '../../ip/slice.ts';
import { recordOf } from '../../record.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { EventRecorder, InvolvedObject } from '../runtime/events.ts';
import type { Log } from '../../log/json-log.ts';
import { cidrOrUndefined, type PoolView } from '../pools/view.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { NadView, NodeSlicePoolView, NodeView } from '../runtime/views.ts';
import type { SliceEntry } from './assign.ts';
import { cachedObject, hasConditions, hasDraining } from './cached-object.ts';
import { decideNodeSlicePool, type SliceChoice, type SlicePlan } from './decide.ts';
import { DEFAULT_DRAIN_GRACE_MS, DrainConfirmer } from './drain.ts';
import { heldSlices, type HeldSlice } from './held.ts';
import { sliceKey } from './lifecycle.ts';
import { nadRef, poolRef, reportChanges, type SliceReport } from './report.ts';
import { ensureSlicePools, listPoolViews, networkInUse } from './slice-pools.ts';
import { groupByNetwork, type NetworkGroup, type SliceSpec } from './spec.ts';

export interface SliceInput {
  readonly nads: ReadonlyMap<string, NadView>;
  readonly nodes: ReadonlyMap<string, NodeView>;
  readonly nodeSlicePools: ReadonlyMap<string, NodeSlicePoolView>;
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly leading: () => boolean;
  readonly log: Log;
  readonly events: EventRecorder;
}

export class NodeSlices {
  readonly #api: ApiClient;
  readonly #writer: PoolWriter;
  readonly #drain: DrainConfirmer;
  #drainingPersists = true;
  /** Cleared when the API server drops the conditions we write (a NodeSlicePool CRD without them). */
  #conditionsPersist = true;
  /** Problems already logged (offending or unreadable NAD -> message): logged once, not every pass. */
  readonly #logged = new Map<string, string>();

  constructor(api: ApiClient, options: { drainGraceMs?: number } = {}) {
    this.#api = api;
    this.#writer = new PoolWriter(api);
    this.#drain = new DrainConfirmer(api, options.drainGraceMs ?? DEFAULT_DRAIN_GRACE_MS);
  }

  async reconcile(input: SliceInput): Promise<SliceReport> {
    const report: SliceReport = { assigned: [], freed: [], starved: new Map(), conflicts: [] };
    const specs: SliceSpec[] = [];
    for (const nad of input.nads.values()) {
      if (nad.problem !== undefined) {
        this.#logOnce(`nad:${nad.namespace}/${nad.name}`, nad.problem, input.log);
        await input.events.emit(
          nadRef(`${nad.namespace}/${nad.name}`, input.nads),
          'Warning',
          'InvalidNodeSliceConfig',
          nad.problem,
        );
      }
      if (nad.slice !== undefined) specs.push(nad.slice);
    }
    const { agreed, conflicts } = groupByNetwork(specs);
    report.conflicts.push(...conflicts);
    const offending = new Map([...agreed.values()].flatMap((g) => g.offenders.map((o) => [o.source, o.message])));
    for (const key of this.#logged.keys()) {
      const [kind, name = ''] = key.split(/:(.*)/s);
      const solved = kind === 'offender' ? !offending.has(name) : input.nads.get(name)?.problem === undefined;
      if (!solved) continue;
      this.#logged.delete(key);
      input.log.info(
        `node slices: ${kind === 'offender' ? `NAD ${name} agrees with its network again, or is gone` : `NAD ${name} reads again`}`,
      );
    }
    const notSlicePools = new Set([...input.nads.values()].flatMap((n) => n.pools));
    let listed: Promise<ReadonlyMap<string, PoolView> | undefined> | undefined;
    const freshPools = () => (listed ??= listPoolViews(this.#api, input.log));
    for (const group of agreed.values()) {
      if (!input.leading()) return report;
      for (const offender of group.offenders) {
        this.#logOnce(`offender:${offender.source}`, offender.message, input.log);
        await input.events.emit(nadRef(offender.source, input.nads), 'Warning', 'NetworkConflict', offender.message);
      }
      await this.#reconcileNetwork(group, { ...input, notSlicePools, freshPools }, report);
    }
    for (const cached of input.nodeSlicePools.values()) {
      if (cached.namespace !== this.#api.namespace || !cached.managed || agreed.has(cached.name)) continue;
      if (!input.leading()) return report;
      await this.#deleteIfUnused(cached, { ...input, notSlicePools, freshPools });
    }
    return report;
  }

  async #reconcileNetwork(group: NetworkGroup, input: NetworkInput, report: SliceReport): Promise<void> {
    const { spec, sources, offenders } = group;
    const namespace = this.#api.namespace;
    const cached = input.nodeSlicePools.get(`${namespace}/${spec.network}`);
    const heldIn = (pools: Iterable<PoolView>) =>
      heldSlices(spec, pools, {
        notSlicePools: input.notSlicePools,
        retiredHere: (pool) => this.#drain.retiredHere(pool),
      });
    const plan = (held: readonly HeldSlice[], canFree: SlicePlan['canFree']): SlicePlan => ({
      spec,
      namespace,
      // The sticky area is assigned, kept and drained like a node's slice (docs/sticky.md).
      liveNodes: [
        ...input.nodes.keys(),
        ...(group.sticky && !input.nodes.has(STICKY_AREA_NODE) ? [STICKY_AREA_NODE] : []),
      ],
      held,
      offenders,
      canFree,
      conditionsPersist: this.#conditionsPersist,
      drainingPersists: this.#drainingPersists,
    });
    const cachedHeld = heldIn(input.pools.values());
    const onCache = cached === undefined ? undefined : cachedObject(cached);
    // Confirmed empty (and retired) only what a plugin cannot take for its own slice any more: what the NodeSlicePool
    // lists as draining, and pools in use that it does not list for their node at all (a plugin that finds its pool
    // retired takes the mark off only when the NodeSlicePool lists the slice as its own and not draining).
    const seen: SliceChoice = { resliced: false, sentConditions: false };
    decideNodeSlicePool(
      plan(cachedHeld, () => false),
      seen,
    )(onCache);
    // Found draining outside the NodeSlicePool's lists: the pools' own entries, never listed for their node.
    const unlisted = (seen.rebuilt?.found ?? []).filter((d) => d.reason !== 'Overlapped');
    const version = cached === undefined ? undefined : { uid: cached.uid, generation: cached.generation };
    const confirmed = await this.#drain.confirmEmpty(spec, [...(cached?.draining ?? []), ...unlisted], {
      ...input,
      version,
    });
    const canFree = (entry: SliceEntry): boolean => confirmed.has(sliceKey(entry));
    let choice: SliceChoice = { resliced: false, sentConditions: false };
    // Decide on the caches first: most passes change nothing and then read and write nothing.
    if (decideNodeSlicePool(plan(cachedHeld, canFree), choice)(onCache) === undefined) {
      await this.#ensurePools(spec, choice.decision?.entries ?? [], {
        ...input,
        exists: (name) => input.pools.has(name),
      });
      const starved = choice.decision?.starved ?? [];
      if (starved.length > 0) report.starved.set(spec.network, starved);
      if (cached !== undefined) await this.#reportOffenders(poolRef(cached), offenders, input);
      return;
    }
    // A write may hand out slices: decided on the pools as they are now, not as a lagging cache saw them (a
    // NodeSlicePool created anew has nothing else to go by).
    const fresh = await input.freshPools();
    if (fresh === undefined) return;
    const held = heldIn(fresh.values());
    const exists = (name: string): boolean => fresh.has(name);
    choice = { resliced: false, sentConditions: false };
    decideNodeSlicePool(plan(held, canFree), choice)(onCache);
    // The pools of the slices about to be handed out exist before any node can read that they are its own.
    await this.#ensurePools(spec, assignedEntries(choice), { ...input, exists });
    const { outcome, written } = await this.#writer.writeNodeSlicePool(
      spec.network,
      decideNodeSlicePool(plan(held, canFree), choice),
      { leading: input.leading },
    );
    const decision = choice.decision;
    if (decision === undefined || (outcome !== 'created' && outcome !== 'updated')) {
      if (outcome === 'conflict') input.log.info(`NodeSlicePool ${spec.network} kept changing; left for the next pass`);
      return;
    }
    await this.#ensurePools(spec, decision.entries, { ...input, exists });
    if (choice.sentConditions && !hasConditions(written)) {
      this.#conditionsPersist = false;
      input.log.warning(
        'the NodeSlicePool CRD drops status.conditions (an older CRD?): conditions are not recorded, events still are',
      );
    }
    if ((choice.lifecycle?.draining.length ?? 0) > 0 && !hasDraining(written) && this.#drainingPersists) {
      this.#drainingPersists = false;
      input.log.warning(
        "the NodeSlicePool CRD drops status.draining (Whereabouts' CRD?): draining slices are not recorded; install hereabouts' CRD",
      );
    }
    const meta = recordOf(recordOf(written)['metadata']);
    const ref = poolRef({ name: spec.network, namespace, uid: typeof meta['uid'] === 'string' ? meta['uid'] : '' });
    if (outcome === 'created')
      input.log.info(`created NodeSlicePool ${spec.network} slicing ${sources.join(', ')}`, { network: spec.network });
    await reportChanges(spec, choice, { ref, log: input.log, events: input.events, report });
    await this.#reportOffenders(ref, offenders, input);
  }

  #ensurePools(
    spec: SliceSpec,
    entries: readonly SliceEntry[],
    input: NetworkInput & { readonly exists: (key: string) => boolean },
  ): Promise<void> {
    return ensureSlicePools(this.#writer, spec, entries, { ...input, namespace: this.#api.namespace });
  }

  async #reportOffenders(ref: InvolvedObject, offenders: NetworkGroup['offenders'], input: SliceInput): Promise<void> {
    for (const offender of offenders) await input.events.emit(ref, 'Warning', 'NetworkConflict', offender.message);
  }

  /**
   * A NodeSlicePool of the controller's whose network no NAD asks for: deleted (in the version judged) once no
   * slice pool of the network holds an address, in the cache and then in a fresh LIST. Until then it keeps
   * recording which node holds which part of the range, for the pods of the network that still run.
   */
  async #deleteIfUnused(cached: NodeSlicePoolView, input: NetworkInput): Promise<void> {
    const options = { namespace: this.#api.namespace, notSlicePools: input.notSlicePools };
    if (cidrOrUndefined(cached.range) === undefined || networkInUse(cached, input.pools, options)) return;
    const fresh = await input.freshPools();
    if (fresh === undefined || networkInUse(cached, fresh, options) || !input.leading()) return;
    const outcome = await this.#writer.deleteNodeSlicePool(cached.name, cached);
    if (outcome === 'deleted')
      input.log.info(
        `deleted NodeSlicePool ${cached.name}: no NetworkAttachmentDefinition asks for the network and its slice pools are empty`,
        { network: cached.name },
      );
  }

  #logOnce(key: string, message: string, log: Log): void {
    if (this.#logged.get(key) === message) return;
    this.#logged.set(key, message);
    log.warning(`node slices: ${message}`);
  }
}

interface NetworkInput extends SliceInput {
  readonly notSlicePools: ReadonlySet<string>;
  /** The IPPools as the API has them now ("namespace/name" -> view), read once a pass; undefined when unreadable. */
  readonly freshPools: () => Promise<ReadonlyMap<string, PoolView> | undefined>;
}

/** The entries of the slices the decision hands out anew. */
function assignedEntries(choice: SliceChoice): SliceEntry[] {
  const assigned = new Set(choice.decision?.assigned ?? []);
  return (choice.decision?.entries ?? []).filter((e) => assigned.has(sliceKey(e)));
}

/** Slices per network for the metrics: assigned and free. */
export function sliceCounts(
  pools: Iterable<NodeSlicePoolView>,
): Array<{ network: string; assigned: number; free: number }> {
  const out = [];
  for (const pool of pools) {
    const assigned = pool.entries.filter((e) => e.nodeName !== '').length;
    let total = 0;
    try {
      total = Number(sliceCount(masked(parseCidr(pool.range)), Number(pool.sliceSize.replace(/^\//, ''))));
    } catch (err) {
      if (!(err instanceof TypeError || err instanceof RangeError)) throw err;
    }
    out.push({ network: pool.name, assigned, free: Math.max(0, total - assigned) });
  }
  return out;
}
