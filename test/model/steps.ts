// The operations of a model run, as plain data: a failing sequence prints as JSON and replays from it.
import type { Resource } from './controller-pass.ts';
import type { ClaimStep } from './claims.ts';
import type { StickyStep } from './sticky.ts';
import type { FaultSpec } from './faults.ts';

export type NetId = 'A' | 'B' | 'C' | 'S' | 'T' | 'U';

export interface NetDef {
  readonly id: NetId;
  /** The CNI network name. */
  readonly cniName: string;
  readonly range: string;
  readonly overlapping: boolean;
  readonly networkName?: string;
  /** node_slice_size (prefix length) at the start of a run. */
  readonly slice?: number;
  /** IPAM `sticky: true` (docs/sticky.md): StatefulSet replicas and KubeVirt VMs keep their address (sticky.ts). */
  readonly sticky?: boolean;
}

/**
 * A and B overlap (shared reservations), C has no reservations, S is sliced per node (no reservations), T is sticky
 * (its own range, with reservations), U is sticky and sliced per node (its sticky ADDs allocate in the slice the
 * controller gives its sticky area; no reservations; not resliced: S is the network of the slicing steps).
 */
export const NETS: Readonly<Record<NetId, NetDef>> = {
  A: { id: 'A', cniName: 'neta', range: '10.80.0.0/28', overlapping: true },
  B: { id: 'B', cniName: 'netb', range: '10.80.0.0/29', overlapping: true },
  C: { id: 'C', cniName: 'netc', range: '10.70.0.0/28', overlapping: false },
  S: { id: 'S', cniName: 'nets', range: '10.90.0.0/26', overlapping: false, networkName: 'sl', slice: 28 },
  T: { id: 'T', cniName: 'nett', range: '10.50.0.0/27', overlapping: true, sticky: true },
  U: {
    id: 'U',
    cniName: 'netu',
    range: '10.40.0.0/25',
    overlapping: false,
    networkName: 'su',
    slice: 28,
    sticky: true,
  },
};

export const DISRUPTION_REASONS = [
  'EvictionByEvictionAPI',
  'PreemptionByScheduler',
  'TerminationByKubelet',
  'DeletionByTaintManager',
] as const;
export type DisruptionReason = (typeof DISRUPTION_REASONS)[number];

/** The CNI IPAM binary a node runs: a rolling switch from Whereabouts (v0.9.4, as whereabouts.ts simulates it). */
export type Binary = 'hereabouts' | 'whereabouts';

/**
 * Where an interleaved step runs inside the main one: right before the main step's `nth` (0-based) request of that
 * kind (across all its processes) is sent; after the main step when it sends fewer.
 */
export interface Trigger {
  readonly on: 'pool-write' | 'reservation-write' | 'request';
  readonly nth: number;
}

export type Step =
  /** The node's object appears; `wipe`: a new machine (empty cache dir), else the same disk comes back. */
  | { readonly op: 'node-join'; readonly node: string; readonly wipe: boolean }
  /** The node is gone: its object and its pods are deleted, its kubelet never sends another DEL. */
  | { readonly op: 'node-leave'; readonly node: string }
  /**
   * A pod object (a new UID when the name was used before: a StatefulSet re-creation) with one Multus attachment per
   * network (net1, net2, ...). `net`: one attachment (sequences printed before pods had several).
   */
  | {
      readonly op: 'pod-create';
      readonly pod: string;
      readonly node: string;
      readonly nets?: readonly NetId[];
      readonly net?: NetId;
    }
  /** CNI ADD for a new sandbox of the pod (a re-ADD with a new container id when it had one). */
  | { readonly op: 'add'; readonly pod: string; readonly faults: FaultSpec }
  /** The kubelet's CNI DEL of one torn-down sandbox of the node. */
  | { readonly op: 'del'; readonly node: string; readonly pick: number; readonly faults: FaultSpec }
  /** CNI GC with the runtime's valid attachments; `stale`: taken before the node's latest ADD. */
  | {
      readonly op: 'gc';
      readonly node: string;
      readonly net: NetId;
      readonly stale: boolean;
      readonly faults: FaultSpec;
    }
  /** A full controller pass; the caches in `stale` were not refreshed since the previous pass. */
  | { readonly op: 'controller'; readonly stale: readonly Resource[]; readonly faults: FaultSpec }
  /** graceful: the pod starts terminating (or, when it already is, its kubelet finishes); else a force deletion. */
  | { readonly op: 'pod-delete'; readonly pod: string; readonly graceful: boolean }
  | { readonly op: 'pod-evict'; readonly pod: string; readonly reason: DisruptionReason }
  /** The pod's containers end; `del`: its kubelet tears the sandbox down (CNI DEL), else it never does (node shutdown). */
  | {
      readonly op: 'pod-terminate';
      readonly pod: string;
      readonly phase: 'Succeeded' | 'Failed';
      readonly del: boolean;
    }
  /** node_slice_size of network S changes in its NetworkAttachmentDefinition. */
  | { readonly op: 'reslice'; readonly size: number }
  /** Wall-clock time passes (grace periods, cache TTLs). */
  | { readonly op: 'time'; readonly ms: number }
  | { readonly op: 'parallel'; readonly steps: readonly Step[] }
  /**
   * Two ADDs in one node's pool at once, the first one's process stalled while it holds the pool's lock. `split`:
   * the holder runs in the node agent's pid namespace and the waiter is a plain plugin process on the host (or the
   * reverse), so the waiter judges the lock as the shipped DaemonSet lets it; `agedMs`: how long the stall lasts
   * on the wall clock (a starved agent), as the waiter sees it.
   */
  | {
      readonly op: 'stall';
      readonly holder: string;
      readonly waiter: string;
      readonly ms: number;
      readonly faults: FaultSpec;
      readonly split?: boolean;
      readonly agedMs?: number;
    }
  /** The NetworkAttachmentDefinition of a network is deleted (then the garbage collector acts on its dependents). */
  | { readonly op: 'nad-delete'; readonly net: NetId }
  /** ... and created again (a new uid): by hand, or a GitOps sync. */
  | { readonly op: 'nad-create'; readonly net: NetId }
  /** The NodeSlicePool of network S (or `net`) is deleted by hand (or by a GitOps sync that does not know it). */
  | { readonly op: 'nsp-delete'; readonly net?: NetId }
  /** A tenant's NAD (its own namespace) names network S's network_name with another node_slice_size; null: deleted. */
  | { readonly op: 'tenant-nad'; readonly size: number | null }
  /** The node's CNI binary is switched (a rolling switch between Whereabouts and hereabouts, either way). */
  | { readonly op: 'switch'; readonly node: string; readonly binary: Binary }
  /** One run of Whereabouts' reconciler (its ip-control-loop): its own rules, its unconditional deletes. */
  | { readonly op: 'wb-reconcile'; readonly faults: FaultSpec }
  /** The pod's current records and reservations read as an older Whereabouts (< 0.7) wrote them: no ifname. */
  | { readonly op: 'legacy'; readonly pod: string }
  /** `other` runs inside `main`, right before main's request that `at` names. */
  | { readonly op: 'interleave'; readonly main: Step; readonly at: Trigger; readonly other: Step }
  /** Claims beyond pods (claims.ts). */
  | ClaimStep
  /** StatefulSets, KubeVirt VMs and controller restarts around sticky addresses (sticky.ts). */
  | StickyStep;

export function describeStep(step: Step): string {
  const f = (spec: FaultSpec): string =>
    `${spec.rate > 0 ? ` faults(seed ${spec.seed}, rate ${spec.rate})` : ''}${spec.kill === undefined ? '' : ` kill at request ${spec.kill.at}${spec.kill.after ? ' after apply' : ''}`}`;
  switch (step.op) {
    case 'add':
      return `ADD ${step.pod}${f(step.faults)}`;
    case 'del':
      return `DEL on ${step.node} (pending #${step.pick})${f(step.faults)}`;
    case 'gc':
      return `GC on ${step.node} net ${step.net}${step.stale ? ' (stale snapshot)' : ''}${f(step.faults)}`;
    case 'controller':
      return `controller pass${step.stale.length > 0 ? ` (stale caches: ${step.stale.join(',')})` : ''}${f(step.faults)}`;
    case 'parallel':
      return `parallel [${step.steps.map(describeStep).join(' | ')}]`;
    case 'stall': {
      const split = step.split === true ? ' (holder and waiter in different pid namespaces)' : '';
      const aged = step.agedMs === undefined ? '' : `, ${step.agedMs} ms on the wall clock`;
      return `ADD ${step.holder} stalled ${step.ms} ms${aged} holding the lock, meanwhile ADD ${step.waiter} on the same node${split}${f(step.faults)}`;
    }
    case 'wb-reconcile':
      return `Whereabouts reconciler run${f(step.faults)}`;
    case 'claim-reconcile':
      return `reconcile claim ${step.claim}${f(step.faults)}`;
    case 'interleave':
      return `${describeStep(step.main)}, and right before its ${ordinal(step.at.nth)} ${step.at.on}: ${describeStep(step.other)}`;
    default:
      return JSON.stringify(step);
  }
}

function ordinal(n: number): string {
  return `${n + 1}${n === 0 ? 'st' : n === 1 ? 'nd' : n === 2 ? 'rd' : 'th'}`;
}
