// Random steps, chosen from the model's state so that most of them do something.
import type { Resource } from './controller-pass.ts';
import { RESOURCES } from './controller-pass.ts';
import type { Cluster } from './cluster.ts';
import type { FaultSpec } from './faults.ts';
import type { Prng } from './prng.ts';
import { DISRUPTION_REASONS, type NetId, type Step } from './steps.ts';

export const NODES = ['n1', 'n2', 'n3', 'n4'] as const;
const PODS = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p9'];
const NETS: readonly NetId[] = ['A', 'B', 'C', 'S'];

export interface GenerateOptions {
  /** Probability of a fault per API request. */
  readonly faultRate: number;
  /** Probability that an operation's process is killed at one of its requests. */
  readonly killRate: number;
}

function faults(prng: Prng, o: GenerateOptions): FaultSpec {
  const kill = prng.chance(o.killRate) ? { at: prng.int(8), after: prng.chance(0.5) } : undefined;
  return { seed: prng.seed(), rate: o.faultRate, ...(kill === undefined ? {} : { kill }) };
}

export function generateStep(prng: Prng, cluster: Cluster, o: GenerateOptions, nested = false): Step {
  const upNodes = NODES.filter((n) => cluster.nodes.get(n)?.up === true);
  const live = [...cluster.pods.values()].filter(
    (p) => p.exists && p.phase !== 'Succeeded' && p.phase !== 'Failed' && upNodes.includes(p.node as never),
  );
  const withoutSandbox = live.filter((p) => p.sandbox === undefined && !p.terminating);
  const pendingNodes = upNodes.filter((n) => (cluster.nodes.get(n)?.pendingDels.length ?? 0) > 0);
  const free = PODS.filter((p) => cluster.pods.get(p)?.exists !== true);
  for (;;) {
    const r = prng.next();
    if (r < 0.24) {
      if (live.length === 0) continue;
      const pod = withoutSandbox.length > 0 && prng.chance(0.8) ? prng.pick(withoutSandbox) : prng.pick(live);
      return { op: 'add', pod: pod.name, faults: faults(prng, o) };
    }
    if (r < 0.36) {
      if (pendingNodes.length === 0) continue;
      return { op: 'del', node: prng.pick(pendingNodes), pick: prng.int(4), faults: faults(prng, o) };
    }
    if (nested) {
      if (r < 0.5) return { op: 'controller', stale: [], faults: faults(prng, o) };
      if (r < 0.53) return { op: 'slicepool-delete' };
      if (upNodes.length === 0) continue;
      return {
        op: 'gc',
        node: prng.pick(upNodes),
        net: prng.pick(NETS),
        stale: prng.chance(0.5),
        faults: faults(prng, o),
      };
    }
    if (r < 0.48) {
      if (free.length === 0 || upNodes.length === 0 || live.length >= 8) continue;
      return { op: 'pod-create', pod: prng.pick(free), node: prng.pick(upNodes), net: prng.pick(NETS) };
    }
    if (r < 0.57) {
      const stale: Resource[] = RESOURCES.filter(() => prng.chance(0.15));
      return { op: 'controller', stale, faults: faults(prng, o) };
    }
    if (r < 0.62) {
      if (upNodes.length === 0) continue;
      return {
        op: 'gc',
        node: prng.pick(upNodes),
        net: prng.pick(NETS),
        stale: prng.chance(0.5),
        faults: faults(prng, o),
      };
    }
    if (r < 0.7) {
      const existing = [...cluster.pods.values()].filter((p) => p.exists);
      if (existing.length === 0) continue;
      return { op: 'pod-delete', pod: prng.pick(existing).name, graceful: prng.chance(0.5) };
    }
    if (r < 0.74) {
      if (live.length === 0) continue;
      return { op: 'pod-evict', pod: prng.pick(live).name, reason: prng.pick(DISRUPTION_REASONS) };
    }
    if (r < 0.77) {
      if (live.length === 0) continue;
      return {
        op: 'pod-terminate',
        pod: prng.pick(live).name,
        phase: prng.chance(0.5) ? 'Succeeded' : 'Failed',
        del: prng.chance(0.5),
      };
    }
    if (r < 0.79) {
      if (upNodes.length <= 1) continue;
      return { op: 'node-leave', node: prng.pick(upNodes) };
    }
    if (r < 0.82) {
      const down = NODES.filter((n) => !upNodes.includes(n));
      if (down.length === 0) continue;
      return { op: 'node-join', node: prng.pick(down), wipe: prng.chance(0.5) };
    }
    if (r < 0.84) return { op: 'reslice', size: prng.pick([27, 28, 29]) };
    if (r < 0.845) {
      const node = prng.pick(upNodes.length > 0 ? upNodes : ['n1']);
      const here = live.filter((p) => p.node === node);
      if (here.length < 2) continue;
      const holder = prng.pick(here);
      const waiter = prng.pick(here.filter((p) => p !== holder));
      return { op: 'stall', holder: holder.name, waiter: waiter.name, ms: 300, faults: faults(prng, o) };
    }
    if (r < 0.875) return { op: 'slicepool-delete' };
    if (r < 0.92) return { op: 'time', ms: prng.pick([5_000, 30_000, 90_000, 400_000, 1_000_000]) };
    // Concurrent operations of different processes (different nodes, or the controller).
    const steps: Step[] = [];
    const used = new Set<string>();
    for (let i = 0, n = 2 + prng.int(2); i < n; i++) {
      const step = generateStep(prng, cluster, o, true);
      const node =
        step.op === 'add'
          ? cluster.pods.get(step.pod)?.node
          : step.op === 'del' || step.op === 'gc'
            ? step.node
            : step.op === 'slicepool-delete'
              ? 'operator'
              : 'controller';
      if (node === undefined || used.has(node)) continue;
      used.add(node);
      steps.push(step);
    }
    if (steps.length < 2) continue;
    return { op: 'parallel', steps };
  }
}
