// Random steps, chosen from the model's state so that most of them do something. Each kind of step has a weight;
// the groups of steps added with the model's later capabilities can be switched off (HEREABOUTS_MODEL_OFF) to tell
// which of them a failure needs.
import { RESOURCES } from './controller-pass.ts';
import type { Cluster, PodModel } from './cluster.ts';
import type { FaultSpec } from './faults.ts';
import type { Prng } from './prng.ts';
import { CLAIMS } from './claims.ts';
import { generateSticky } from './sticky.ts';
import { DISRUPTION_REASONS, NETS as NETS_BY_ID, type NetId, type Step, type Trigger } from './steps.ts';

export const NODES = ['n1', 'n2', 'n3', 'n4'] as const;
const PODS = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p9'];
const NETS: readonly NetId[] = ['A', 'B', 'C', 'S'];
/** Two interfaces of one pod on overlapping networks (or twice the same network). */
const PAIRS: ReadonlyArray<readonly NetId[]> = [
  ['A', 'B'],
  ['B', 'A'],
  ['A', 'A'],
];

/** Groups of steps that HEREABOUTS_MODEL_OFF may switch off. */
export const FEATURES = [
  'whereabouts',
  'networks',
  'tenant',
  'legacy',
  'multi',
  'interleave',
  'pidns',
  'warm',
  'claims',
  'sticky',
] as const;
export type Feature = (typeof FEATURES)[number];

export interface GenerateOptions {
  /** Probability of a fault per API request. */
  readonly faultRate: number;
  /** Probability that an operation's process is killed at one of its requests. */
  readonly killRate: number;
  /** Feature groups not generated. */
  readonly off?: ReadonlySet<Feature>;
}

function faults(prng: Prng, o: GenerateOptions): FaultSpec {
  const kill = prng.chance(o.killRate) ? { at: prng.int(8), after: prng.chance(0.5) } : undefined;
  const agentDies = prng.chance(o.killRate / 2);
  return {
    seed: prng.seed(),
    rate: o.faultRate,
    ...(kill === undefined ? {} : { kill }),
    ...(agentDies ? { agentDies } : {}),
  };
}

interface View {
  readonly prng: Prng;
  readonly cluster: Cluster;
  readonly o: GenerateOptions;
  readonly upNodes: readonly string[];
  readonly live: readonly PodModel[];
  readonly withoutSandbox: readonly PodModel[];
  readonly pendingNodes: readonly string[];
  readonly free: readonly string[];
}

function viewOf(prng: Prng, cluster: Cluster, o: GenerateOptions): View {
  const upNodes = NODES.filter((n) => cluster.nodes.get(n)?.up === true);
  const live = [...cluster.pods.values()].filter(
    (p) => p.exists && p.phase !== 'Succeeded' && p.phase !== 'Failed' && upNodes.includes(p.node as never),
  );
  return {
    prng,
    cluster,
    o,
    upNodes,
    live,
    withoutSandbox: live.filter((p) => p.sandbox === undefined && !p.terminating),
    pendingNodes: upNodes.filter((n) => (cluster.nodes.get(n)?.pendingDels.length ?? 0) > 0),
    free: PODS.filter((p) => cluster.pods.get(p)?.exists !== true),
  };
}

const on = (v: View, feature: Feature): boolean => v.o.off?.has(feature) !== true;

/** One generator per kind of step: undefined when the state does not allow it now (another kind is drawn). */
type Generator = (v: View) => Step | undefined;

const add: Generator = ({ prng, live, withoutSandbox, o }) => {
  if (live.length === 0) return undefined;
  const pod = withoutSandbox.length > 0 && prng.chance(0.8) ? prng.pick(withoutSandbox) : prng.pick(live);
  return { op: 'add', pod: pod.name, faults: faults(prng, o) };
};

const del: Generator = ({ prng, pendingNodes, o }) =>
  pendingNodes.length === 0
    ? undefined
    : { op: 'del', node: prng.pick(pendingNodes), pick: prng.int(4), faults: faults(prng, o) };

const controller: Generator = ({ prng, o }) => ({
  op: 'controller',
  stale: RESOURCES.filter(() => prng.chance(0.15)),
  faults: faults(prng, o),
});

const freshController: Generator = ({ prng, o }) => ({ op: 'controller', stale: [], faults: faults(prng, o) });

const gc: Generator = ({ prng, upNodes, o }) =>
  upNodes.length === 0
    ? undefined
    : { op: 'gc', node: prng.pick(upNodes), net: prng.pick(NETS), stale: prng.chance(0.5), faults: faults(prng, o) };

const podCreate: Generator = (v) => {
  const { prng, free, upNodes, live } = v;
  // At most 8 of them live (the sticky model's workloads have pods of their own beside).
  if (free.length === 0 || upNodes.length === 0 || live.filter((p) => PODS.includes(p.name)).length >= 8)
    return undefined;
  const nets = on(v, 'multi') && prng.chance(0.15) ? prng.pick(PAIRS) : [prng.pick(NETS)];
  return { op: 'pod-create', pod: prng.pick(free), node: prng.pick(upNodes), nets };
};

const podDelete: Generator = ({ prng, cluster }) => {
  const existing = [...cluster.pods.values()].filter((p) => p.exists);
  return existing.length === 0
    ? undefined
    : { op: 'pod-delete', pod: prng.pick(existing).name, graceful: prng.chance(0.5) };
};

const evict: Generator = ({ prng, live }) =>
  live.length === 0 ? undefined : { op: 'pod-evict', pod: prng.pick(live).name, reason: prng.pick(DISRUPTION_REASONS) };

const terminate: Generator = ({ prng, live }) =>
  live.length === 0
    ? undefined
    : {
        op: 'pod-terminate',
        pod: prng.pick(live).name,
        phase: prng.chance(0.5) ? 'Succeeded' : 'Failed',
        del: prng.chance(0.5),
      };

const nodeLeave: Generator = ({ prng, upNodes }) =>
  upNodes.length <= 1 ? undefined : { op: 'node-leave', node: prng.pick(upNodes) };

const nodeJoin: Generator = ({ prng, upNodes }) => {
  const down = NODES.filter((n) => !upNodes.includes(n));
  return down.length === 0 ? undefined : { op: 'node-join', node: prng.pick(down), wipe: prng.chance(0.5) };
};

const stall: Generator = (v) => {
  const { prng, upNodes, live, o } = v;
  const node = prng.pick(upNodes.length > 0 ? upNodes : ['n1']);
  const here = live.filter((p) => p.node === node);
  if (here.length < 2) return undefined;
  const holder = prng.pick(here);
  // Mostly two pods of the same network: they contend for one pool's lock.
  const same = here.filter((p) => p !== holder && p.nets[0] === holder.nets[0]);
  const waiter = prng.pick(same.length > 0 && prng.chance(0.8) ? same : here.filter((p) => p !== holder));
  // Across pid namespaces the stall's length is wall-clock time (agedMs); the process itself waits only long
  // enough for the waiter to judge its lock.
  if (on(v, 'pidns') && prng.chance(0.7)) {
    const agedMs = prng.pick([3_000, 15_000, 60_000]);
    return {
      op: 'stall',
      holder: holder.name,
      waiter: waiter.name,
      ms: 50,
      faults: faults(prng, o),
      split: true,
      agedMs,
    };
  }
  return { op: 'stall', holder: holder.name, waiter: waiter.name, ms: 100, faults: faults(prng, o) };
};

const time: Generator = ({ prng }) => ({ op: 'time', ms: prng.pick([5_000, 30_000, 90_000, 400_000, 1_000_000]) });

/** Which node's file locks a step takes (another step of the same node would wait for them), if any. */
function nodeOf(cluster: Cluster, step: Step): string | undefined {
  if (step.op === 'add') return cluster.pods.get(step.pod)?.node;
  if (step.op === 'del' || step.op === 'gc') return step.node;
  return undefined;
}

const parallel: Generator = (v) => {
  const steps: Step[] = [];
  const used = new Set<string>();
  for (let i = 0, n = 2 + v.prng.int(2); i < n; i++) {
    const step = nested(v);
    if (step === undefined) continue;
    const who = step.op === 'claim-reconcile' ? 'claims' : (nodeOf(v.cluster, step) ?? 'controller');
    if (used.has(who)) continue;
    used.add(who);
    steps.push(step);
  }
  return steps.length < 2 ? undefined : { op: 'parallel', steps };
};

/** A step that runs beside others: a node's ADD, DEL or GC, or a controller pass. */
function nested(v: View): Step | undefined {
  const r = v.prng.next();
  if (r < 0.12 && on(v, 'claims')) return claimReconcile(v);
  if (r < 0.4) return add(v);
  if (r < 0.65) return del(v);
  if (r < 0.85) return freshController(v);
  return gc(v);
}

const TRIGGERS: readonly Trigger['on'][] = ['pool-write', 'pool-write', 'reservation-write', 'request'];

/** A step inside another: at one of its requests, another process's work (never one that waits for its locks). */
const interleave: Generator = (v) => {
  const { prng } = v;
  const r = prng.next();
  const main =
    r < 0.08 && on(v, 'claims')
      ? claimReconcile(v)
      : r < 0.55
        ? add(v)
        : r < 0.75
          ? del(v)
          : r < 0.9
            ? freshController(v)
            : r < 0.95 || !on(v, 'whereabouts')
              ? gc(v)
              : wbReconcile(v);
  if (main === undefined) return undefined;
  const q = prng.next();
  const other: Step | undefined =
    q < 0.1 && on(v, 'claims')
      ? claimReconcile(v)
      : q < 0.3
        ? freshController(v)
        : q < 0.5
          ? on(v, 'whereabouts')
            ? wbReconcile(v)
            : undefined
          : q < 0.8
            ? add(v)
            : q < 0.92
              ? del(v)
              : on(v, 'networks')
                ? prng.pick<Step>([{ op: 'nsp-delete' }, { op: 'nad-delete', net: 'S' }])
                : undefined;
  if (other === undefined) return undefined;
  const mainNode = nodeOf(v.cluster, main);
  if (mainNode !== undefined && nodeOf(v.cluster, other) === mainNode) return undefined;
  if (other.op === 'add' && main.op === 'add' && other.pod === main.pod) return undefined;
  // Whereabouts' reconciler reads a Pending pod again for a while before it calls a record an orphan: inside an
  // ADD it is run before that ADD's first pool write, not between the write and the pod's network-status.
  const at: Trigger =
    other.op === 'wb-reconcile' && main.op === 'add'
      ? { on: 'pool-write', nth: 0 }
      : (() => {
          const kind = prng.pick(TRIGGERS);
          return { on: kind, nth: prng.int(kind === 'request' ? 8 : 3) };
        })();
  return { op: 'interleave', main, at, other };
};

/** Overlapping networks (reservations shared): A and B. */
const overlapping = (p: PodModel): boolean => p.nets.some((net) => net === 'A' || net === 'B');

/**
 * Two ADDs of different nodes on overlapping networks, one inside the other right before one of its writes: mostly
 * a Whereabouts node's ADD (its pool write, then its reservation create) with a hereabouts node's inside it.
 */
const race: Generator = ({ prng, live, o, cluster }) => {
  const candidates = live.filter(overlapping);
  if (candidates.length < 2) return undefined;
  const whereabouts = candidates.filter((p) => cluster.nodes.get(p.node)?.binary === 'whereabouts');
  const main = whereabouts.length > 0 && prng.chance(0.7) ? prng.pick(whereabouts) : prng.pick(candidates);
  const others = candidates.filter((p) => p.node !== main.node);
  if (others.length === 0) return undefined;
  return {
    op: 'interleave',
    main: { op: 'add', pod: main.name, faults: faults(prng, o) },
    at: { on: prng.pick(['pool-write', 'reservation-write'] as const), nth: prng.int(2) },
    other: { op: 'add', pod: prng.pick(others).name, faults: faults(prng, o) },
  };
};

/** Steps a generator planned ahead (a scenario of several steps), taken before anything new is drawn. */
const planned = new WeakMap<Cluster, Step[]>();

/**
 * A pod's ADD again, some minutes after one that failed (the kubelet backs off; the reservation the failed attempt
 * left is adopted), with a controller pass or Whereabouts' reconciler judging reservations right before its pool
 * write: the time step now, the interleaving next.
 */
const adopt: Generator = (v) => {
  const { prng, withoutSandbox, o, cluster } = v;
  const failed = withoutSandbox.filter(
    (p) =>
      overlapping(p) &&
      cluster.nodes.get(p.node)?.pendingDels.some((s) => s.uid === p.uid && s.attachments.some((a) => !a.ok)) === true,
  );
  if (failed.length === 0) return undefined;
  const other = on(v, 'whereabouts') && prng.chance(0.3) ? wbReconcile(v) : freshController(v);
  if (other === undefined) return undefined;
  const retry: Step = {
    op: 'interleave',
    main: { op: 'add', pod: prng.pick(failed).name, faults: faults(prng, o) },
    at: { on: 'pool-write', nth: 0 },
    other,
  };
  planned.set(cluster, [...(planned.get(cluster) ?? []), retry]);
  return { op: 'time', ms: prng.pick([90_000, 400_000]) };
};

const wbReconcile: Generator = ({ prng, o }) => ({ op: 'wb-reconcile', faults: { ...faults(prng, o), rate: 0 } });

const switchBinary: Generator = ({ prng, cluster }) => {
  const node = prng.pick(NODES);
  const now = cluster.nodes.get(node)?.binary ?? 'hereabouts';
  return { op: 'switch', node, binary: now === 'hereabouts' ? 'whereabouts' : 'hereabouts' };
};

const nadDelete: Generator = ({ prng, cluster }) => {
  const present = NETS.filter((n) => cluster.networks.nads.has(n));
  if (present.length === 0) return undefined;
  const net = present.includes('S') && prng.chance(0.6) ? 'S' : prng.pick(present);
  return { op: 'nad-delete', net };
};

const nadCreate: Generator = ({ prng, cluster }) => {
  const missing = NETS.filter((n) => !cluster.networks.nads.has(n));
  return missing.length === 0 ? undefined : { op: 'nad-create', net: prng.pick(missing) };
};

const tenant: Generator = ({ prng }) => ({ op: 'tenant-nad', size: prng.chance(0.3) ? null : prng.pick([27, 28, 29]) });

const legacy: Generator = ({ prng, live }) => {
  // An older Whereabouts never wrote a sticky network's records (they are bound).
  const attachedPods = live.filter(
    (p) => p.sandbox?.attachments.every((a) => a.ok) === true && !p.nets.some((net) => NETS_BY_ID[net].sticky === true),
  );
  return attachedPods.length === 0 ? undefined : { op: 'legacy', pod: prng.pick(attachedPods).name };
};

/** A claim's life, mostly reconciles (each one a controller process with faults and kills). */
const claim: Generator = ({ prng, o, cluster }) => {
  const live = CLAIMS.filter((c) => cluster.claims.live.has(c));
  const absent = CLAIMS.filter((c) => !cluster.claims.live.has(c));
  if (absent.length > 0 && (live.length === 0 || prng.chance(0.3)))
    return { op: 'claim-create', claim: prng.pick(absent), length: prng.pick([28, 29, 30]) };
  const name = prng.pick(live);
  if (prng.chance(0.6)) return { op: 'claim-reconcile', claim: name, faults: faults(prng, o) };
  return prng.chance(0.75) ? { op: 'claim-delete', claim: name } : { op: 'claim-unfinalize', claim: name };
};

/** A claim's reconcile, as the controller's claims queue runs it beside everything else. */
const claimReconcile: Generator = ({ prng, o, cluster }) => {
  const live = CLAIMS.filter((c) => cluster.claims.live.has(c));
  return live.length === 0 ? undefined : { op: 'claim-reconcile', claim: prng.pick(live), faults: faults(prng, o) };
};

const TABLE: ReadonlyArray<readonly [number, Generator, Feature?]> = [
  [0.22, add],
  [0.11, del],
  [0.11, podCreate],
  [0.08, controller],
  [0.04, gc],
  [0.07, podDelete],
  [0.035, evict],
  [0.025, terminate],
  [0.02, nodeLeave],
  [0.03, nodeJoin],
  [0.02, ({ prng }) => ({ op: 'reslice', size: prng.pick([27, 28, 29]) })],
  [0.01, stall],
  [0.05, time],
  [0.08, parallel],
  [0.05, interleave, 'interleave'],
  [0.02, race, 'interleave'],
  [0.015, adopt, 'interleave'],
  [0.03, switchBinary, 'whereabouts'],
  [0.02, wbReconcile, 'whereabouts'],
  [0.012, nadDelete, 'networks'],
  [0.012, nadCreate, 'networks'],
  [0.005, () => ({ op: 'nsp-delete' }), 'networks'],
  [0.008, tenant, 'tenant'],
  [0.01, legacy, 'legacy'],
  [0.1, claim, 'claims'],
  [0.35, (v) => generateSticky({ ...v, faults: () => faults(v.prng, v.o) }), 'sticky'],
];

export function generateStep(prng: Prng, cluster: Cluster, o: GenerateOptions): Step {
  const next = planned.get(cluster)?.shift();
  if (next !== undefined) return next;
  for (let entry = cluster.sticky.planned.shift(); entry !== undefined; entry = cluster.sticky.planned.shift()) {
    const step = typeof entry === 'function' ? entry() : entry;
    if (step !== undefined) return step;
  }
  const v = viewOf(prng, cluster, o);
  const table = TABLE.filter(([, , feature]) => feature === undefined || on(v, feature));
  const total = table.reduce((sum, [w]) => sum + w, 0);
  for (;;) {
    let r = prng.next() * total;
    const entry = table.find(([w]) => (r -= w) < 0) ?? table[0]!;
    const step = entry[1](v);
    if (step !== undefined) return step;
  }
}
