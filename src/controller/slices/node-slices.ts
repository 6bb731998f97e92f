// Node slices: for every network whose NetworkAttachmentDefinitions ask for node_slice_size, keep its NodeSlicePool
// (named after the network, in the pools' namespace) giving each live node a slice. A slice whose node left, or of
// an earlier slicing, drains (status.draining) and is released only once it has drained for the grace period and
// a fresh GET of its IPPool finds it empty (the caches may lag behind a plugin's write). Decided from the caches
// otherwise; written only when something changes. NADs of one network that disagree change nothing: a Warning
// event on each and a condition on the pool, once (not an endless retry), until they agree.
import { formatCidr, masked, parseCidr } from '../../ip/cidr.ts';
import { sliceCount } from '../../ip/slice.ts';
import { recordOf } from '../../record.ts';
import type { ApiClient } from '../../kube/api.ts';
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import { conditionsMatch, withConditions, type Condition } from '../runtime/conditions.ts';
import type { EventRecorder, InvolvedObject } from '../runtime/events.ts';
import type { Log } from '../../log/json-log.ts';
import type { PoolView } from '../pools/view.ts';
import { decideNodeSlicePool, NAD_API_VERSION, noFreeSliceMessage, type SliceChoice } from './decide.ts';
import type { SliceEntry } from './assign.ts';
import { DEFAULT_DRAIN_GRACE_MS, DrainConfirmer } from './drain.ts';
import { sliceKey } from './lifecycle.ts';
import { groupByNetwork, type SliceSpec } from './spec.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { NadView, NodeSlicePoolView, NodeView } from '../runtime/views.ts';

export interface SliceInput {
  readonly nads: ReadonlyMap<string, NadView>;
  readonly nodes: ReadonlyMap<string, NodeView>;
  readonly nodeSlicePools: ReadonlyMap<string, NodeSlicePoolView>;
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly leading: () => boolean;
  readonly log: Log;
  readonly events: EventRecorder;
}

export interface SliceReport {
  readonly assigned: string[];
  readonly freed: string[];
  /** network -> nodes without a slice. */
  readonly starved: Map<string, string[]>;
  readonly conflicts: string[];
}

const nadRef = (source: string, nads: ReadonlyMap<string, NadView>): InvolvedObject => {
  const [namespace = '', name = ''] = source.split('/', 2);
  return {
    apiVersion: NAD_API_VERSION,
    kind: 'NetworkAttachmentDefinition',
    namespace,
    name,
    uid: nads.get(source)?.uid ?? '',
  };
};
const poolRef = (view: { name: string; namespace: string; uid: string }): InvolvedObject => ({
  apiVersion: API_VERSION,
  kind: 'NodeSlicePool',
  ...view,
});

export class NodeSlices {
  readonly #api: ApiClient;
  readonly #writer: PoolWriter;
  readonly #drain: DrainConfirmer;
  #drainingPersists = true;
  /** Cleared when the API server drops the conditions we write (a NodeSlicePool CRD without them). */
  #conditionsPersist = true;
  /** Problems already logged (network or NAD -> message): a persisting problem is logged once, not every pass. */
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
    const { agreed, conflicting } = groupByNetwork(specs);
    for (const [network, conflict] of conflicting) {
      if (!input.leading()) return report;
      report.conflicts.push(conflict.message);
      this.#logOnce(`network:${network}`, conflict.message, input.log);
      for (const source of conflict.sources)
        await input.events.emit(nadRef(source, input.nads), 'Warning', 'NetworkConflict', conflict.message);
      await this.#markConflict(network, conflict.message, input);
    }
    for (const key of this.#logged.keys()) {
      const [kind, name = ''] = key.split(/:(.*)/s);
      const solved = kind === 'network' ? !conflicting.has(name) : input.nads.get(name)?.problem === undefined;
      if (!solved) continue;
      this.#logged.delete(key);
      input.log.info(
        `node slices: ${kind === 'network' ? `the NADs of network ${name} agree` : `NAD ${name} reads`} again`,
      );
    }
    for (const { spec, sources } of agreed.values()) {
      if (!input.leading()) return report;
      await this.#reconcileNetwork(spec, sources, input, report);
    }
    return report;
  }

  async #reconcileNetwork(
    spec: SliceSpec,
    sources: readonly string[],
    input: SliceInput,
    report: SliceReport,
  ): Promise<void> {
    const namespace = this.#api.namespace;
    const owners = sources
      .filter((s) => s.startsWith(`${namespace}/`))
      .map((s) => input.nads.get(s))
      .filter((n): n is NadView => n !== undefined);
    const cached = input.nodeSlicePools.get(`${namespace}/${spec.network}`);
    const version = cached === undefined ? undefined : { uid: cached.uid, generation: cached.generation };
    const confirmed = await this.#drain.confirmEmpty(spec, cached?.draining ?? [], { ...input, version });
    const canFree = (entry: SliceEntry): boolean => confirmed.has(sliceKey(entry));
    const plan = {
      spec,
      namespace,
      owners,
      liveNodes: [...input.nodes.keys()],
      canFree,
      conditionsPersist: this.#conditionsPersist,
    };
    const choice: SliceChoice = { resliced: false, sentConditions: false };
    // Decide on the cache first: most passes change nothing and then read nothing.
    if (cached !== undefined && decideNodeSlicePool(plan, choice)(cachedObject(cached)) === undefined) {
      const starved = choice.decision?.starved ?? [];
      if (starved.length > 0) report.starved.set(spec.network, starved);
      return;
    }
    const { outcome, written } = await this.#writer.writeNodeSlicePool(
      spec.network,
      decideNodeSlicePool(plan, choice),
      { leading: input.leading },
    );
    const decision = choice.decision;
    if (decision === undefined || (outcome !== 'created' && outcome !== 'updated')) {
      if (outcome === 'conflict') input.log.info(`NodeSlicePool ${spec.network} kept changing; left for the next pass`);
      return;
    }
    if (choice.sentConditions && !hasConditions(written)) {
      this.#conditionsPersist = false;
      input.log.warning(
        'the NodeSlicePool CRD drops status.conditions (an older CRD?): conditions are not recorded, events still are',
      );
    }
    if ((choice.lifecycle?.draining.length ?? 0) > 0 && !hasDraining(written) && this.#drainingPersists) {
      this.#drainingPersists = false;
      input.log.warning(
        "the NodeSlicePool CRD drops status.draining (Whereabouts' CRD?): draining slices are forgotten at once; install hereabouts' CRD",
      );
    }
    const meta = recordOf(recordOf(written)['metadata']);
    const ref = poolRef({ name: spec.network, namespace, uid: typeof meta['uid'] === 'string' ? meta['uid'] : '' });
    if (outcome === 'created')
      input.log.info(`created NodeSlicePool ${spec.network} slicing ${sources.join(', ')}`, { network: spec.network });
    const lifecycle = choice.lifecycle;
    if (choice.resliced) {
      const draining = lifecycle?.draining.length ?? 0;
      await input.events.emit(
        ref,
        'Warning',
        'Resliced',
        `range or slice size changed: /${spec.sliceSize} slices of ${formatCidr(spec.range)} assigned anew; ${draining} old slice(s) drain until their pools are empty`,
      );
    }
    for (const d of lifecycle?.drained ?? []) {
      input.log.info(
        `slice ${d.sliceRange} of node ${d.nodeName} in ${spec.network} drains (${d.reason}): nothing more is allocated from it`,
        { network: spec.network },
      );
      await input.events.emit(
        ref,
        'Normal',
        'SliceDraining',
        `${d.nodeName} ${d.sliceRange} drains (${d.reason}): released once its pool is empty`,
      );
    }
    for (const d of lifecycle?.restored ?? []) {
      input.log.info(`node ${d.nodeName} is back: it keeps slice ${d.sliceRange} of ${spec.network}`, {
        network: spec.network,
      });
      await input.events.emit(ref, 'Normal', 'SliceRestored', `${d.nodeName} ${d.sliceRange}: the node is back`);
    }
    for (const a of decision.assigned) {
      report.assigned.push(`${spec.network}: ${a}`);
      input.log.info(`assigned slice ${a} of ${spec.network}`, { network: spec.network });
      await input.events.emit(ref, 'Normal', 'SliceAssigned', `assigned ${a}`);
    }
    for (const d of lifecycle?.released ?? []) {
      const slice = `${d.nodeName} ${d.sliceRange}`;
      report.freed.push(`${spec.network}: ${slice}`);
      const why = d.reason === 'NodeLeft' ? 'the node left' : 'the network was resliced';
      input.log.info(
        `${d.reason === 'NodeLeft' ? 'freed' : 'released'} slice ${slice} of ${spec.network}: ${why} and its pool is empty`,
        { network: spec.network },
      );
      await input.events.emit(
        ref,
        'Normal',
        d.reason === 'NodeLeft' ? 'SliceFreed' : 'SliceReleased',
        `${d.reason === 'NodeLeft' ? 'freed' : 'released'} ${slice}: ${why} and its pool is empty`,
      );
    }
    if (decision.starved.length > 0) {
      report.starved.set(spec.network, decision.starved);
      const message = noFreeSliceMessage(decision.starved, spec);
      input.log.warning(`NodeSlicePool ${spec.network}: ${message}`, { network: spec.network });
      await input.events.emit(ref, 'Warning', 'NoFreeSlice', message);
    }
  }

  #logOnce(key: string, message: string, log: Log): void {
    if (this.#logged.get(key) === message) return;
    this.#logged.set(key, message);
    log.warning(`node slices: ${message}`);
  }

  /** Sets ConfigConflict=True on an existing pool of the network, once; nothing else of it changes. */
  async #markConflict(network: string, message: string, input: SliceInput): Promise<void> {
    const cached = input.nodeSlicePools.get(`${this.#api.namespace}/${network}`);
    if (cached === undefined || !this.#conditionsPersist) return;
    const wanted: Condition[] = [
      { type: 'ConfigConflict', status: 'True', reason: 'NetworkAttachmentDefinitionsDisagree', message },
    ];
    const decide = (current: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
      const status = (current?.['status'] ?? {}) as Record<string, unknown>;
      if (current === undefined || conditionsMatch(status['conditions'], wanted)) return undefined;
      return {
        ...current,
        status: { ...status, conditions: withConditions(status['conditions'], wanted, new Date()) },
      };
    };
    if (decide(cachedObject(cached)) === undefined) return;
    await this.#writer.writeNodeSlicePool(network, decide, { leading: input.leading });
    await input.events.emit(poolRef(cached), 'Warning', 'NetworkConflict', message);
  }
}

/** The cached view as the object the decide functions read (metadata, spec, status as far as they look). */
function cachedObject(view: NodeSlicePoolView): Record<string, unknown> {
  const conditions = [...view.conditions].map(([type, joined]) => {
    const [status, reason, ...message] = joined.split('|');
    return { type, status, reason, message: message.join('|') };
  });
  return {
    metadata: {
      name: view.name,
      namespace: view.namespace,
      uid: view.uid,
      ownerReferences: view.ownerUids.map((uid) => ({ kind: 'NetworkAttachmentDefinition', uid })),
    },
    spec: { range: view.range, sliceSize: view.sliceSize },
    status: { allocations: view.entries, draining: view.draining, conditions },
  };
}

function hasDraining(written: unknown): boolean {
  return Array.isArray((written as { status?: { draining?: unknown } } | undefined)?.status?.draining);
}

function hasConditions(written: unknown): boolean {
  const status = (written as { status?: { conditions?: unknown } } | undefined)?.status;
  return Array.isArray(status?.conditions) && status.conditions.length > 0;
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
