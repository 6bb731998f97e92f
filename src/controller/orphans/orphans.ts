// Whether an allocation is an orphan: THE rule, pure, shared by the controller's passes and the operator commands
// (`hereabouts status` counts what the controller would release, `hereabouts orphans` lists it, with what a grace
// period still holds back). The reason is logged and counted.
//
// A pod that still runs keeps its addresses whatever its conditions say: the Eviction API, preemption and the
// kubelet set DisruptionTarget=True when a graceful termination *starts*, and the pod's network lives on for the
// grace period. Only the taint manager's deletion (Whereabouts' rule) is an orphan signal, and only once the pod
// has stopped (no container running) or its grace period is over. A terminal pod (Succeeded, Failed) releases once
// its kubelet says the sandbox is gone, or after a grace period for when no kubelet is left to say it (graceful
// node shutdown).
import type { StickyReleaseReason } from '../sticky/verdict.ts';
import type { AllocationRecord } from '../../store/store.ts';
import type { PodView } from './pod-view.ts';

export interface CleanupPolicy {
  readonly cleanupTerminating: boolean;
  readonly cleanupDisrupted: boolean;
  readonly verifyNetworkStatus: boolean;
  /** A Pending pod, or an allocation, younger than this is never touched (its CNI ADD may still be running). */
  readonly pendingGraceMs: number;
  /** A terminal pod whose sandbox may still exist keeps its addresses this long after it became terminal. */
  readonly terminalGraceMs: number;
}

/** The controller's defaults (its flags'), which `hereabouts status` counts with. */
export const DEFAULT_POLICY: CleanupPolicy = {
  cleanupTerminating: false,
  cleanupDisrupted: true,
  verifyNetworkStatus: true,
  pendingGraceMs: 5 * 60_000,
  terminalGraceMs: 60_000,
};

export type PodReleaseReason = 'pod-terminating' | 'pod-disrupted' | 'pod-terminal';
/**
 * Timestamps of the API server have whole seconds, and HA API servers' clocks may differ a little: a reservation
 * counts as older than a pod only when it is older by more than this.
 */
export const CLOCK_SLACK_MS = 2_000;

/** node-gone: a warm record (DESIGN §11) whose node no longer exists; every other reason is about a pod. */
export type OrphanReason =
  'pod-gone' | 'pod-recreated' | PodReleaseReason | 'not-in-network-status' | 'node-gone' | StickyReleaseReason;

/** The reason the taint manager gives when it deletes a pod from a NoExecute-tainted (e.g. unreachable) node. */
export const TAINT_MANAGER = 'DeletionByTaintManager';

/** No container of the pod runs any more, or its grace period is over: its network is no longer in use. */
export function podStopped(pod: PodView, nowMs: number): boolean {
  return !pod.containersRunning || (pod.deletionAtMs !== undefined && nowMs >= pod.deletionAtMs);
}

/** Why a live pod, by its own state, no longer needs any of its addresses; undefined while it does. */
export function podReleaseReason(pod: PodView, policy: CleanupPolicy, nowMs: number): PodReleaseReason | undefined {
  const stopped = podStopped(pod, nowMs);
  if (policy.cleanupDisrupted && pod.disruption === TAINT_MANAGER && stopped) return 'pod-disrupted';
  if (policy.cleanupTerminating && pod.terminating && stopped) return 'pod-terminating';
  if (isTerminal(pod)) {
    if (pod.sandboxGone || nowMs - terminalSinceMs(pod) >= policy.terminalGraceMs) return 'pod-terminal';
  }
  return undefined;
}

const isTerminal = (pod: PodView): boolean => pod.phase === 'Succeeded' || pod.phase === 'Failed';

/** About when a terminal pod became terminal. */
const terminalSinceMs = (pod: PodView): number => (pod.lastChangeMs > 0 ? pod.lastChangeMs : pod.createdAtMs);

/**
 * `ip` is the canonical text of the allocated address; `pod` the live pod named by the record's podref (undefined:
 * it does not exist); `allocatedAtMs` the record's createdAt when it has one (Whereabouts' records have none);
 * `reservedAtMs` when the address's reservation naming the record's pod was last taken (the API server's clock).
 */
export function orphanReason(
  record: AllocationRecord,
  ip: string,
  pod: PodView | undefined,
  policy: CleanupPolicy,
  nowMs: number,
  allocatedAtMs?: number,
  reservedAtMs?: number,
): OrphanReason | undefined {
  if (record.podRef === '' || !record.podRef.includes('/')) return undefined; // not a pod's: nothing to check against
  // A sticky address outlives its pod: its binding decides (sticky/verdict.ts), never a pod rule.
  if (record.binding !== undefined) return undefined;
  // An allocation younger than the grace period may belong to an ADD still running (or to a static pod whose
  // mirror pod is not there yet): never judged.
  if (allocatedAtMs !== undefined && nowMs - allocatedAtMs < policy.pendingGraceMs) return undefined;
  if (pod === undefined) return 'pod-gone';
  // A young Pending pod's CNI ADD may be running right now (and may be adopting this very record): hands off.
  if (pod.phase === 'Pending' && nowMs - pod.createdAtMs < policy.pendingGraceMs) return undefined;
  if (record.podUid !== undefined && record.podUid !== '' && pod.uid !== '' && record.podUid !== pod.uid)
    return 'pod-recreated';
  // A record without the pod's uid (Whereabouts wrote it) whose address was reserved before the pod of that name was
  // created was taken for an earlier pod of the name. While the pod is Pending without the address in its
  // network-status it is that earlier pod's. (An ADD of this pod may have taken the record over, as Whereabouts and
  // hereabouts both do for a pod's name: its sandbox then shows the address once the pod is set up, or runs.)
  if (
    (record.podUid ?? '') === '' &&
    reservedAtMs !== undefined &&
    pod.createdAtMs > 0 &&
    reservedAtMs + CLOCK_SLACK_MS < pod.createdAtMs &&
    pod.phase === 'Pending' &&
    pod.networkStatusIPs?.has(ip) !== true
  )
    return 'pod-recreated';
  const released = podReleaseReason(pod, policy, nowMs);
  if (released !== undefined) return released;
  if (
    policy.verifyNetworkStatus &&
    pod.phase === 'Running' &&
    pod.networkStatusIPs !== undefined &&
    !pod.networkStatusIPs.has(ip)
  ) {
    return 'not-in-network-status';
  }
  return undefined;
}

/**
 * The instants at which the rule's verdict may change by time alone: the ends of its grace periods (a young
 * allocation, a young Pending pod, a terminal pod's grace, a deleted pod's grace period).
 */
export function graceEnds(pod: PodView | undefined, policy: CleanupPolicy, allocatedAtMs?: number): number[] {
  const ends: number[] = [];
  if (allocatedAtMs !== undefined) ends.push(allocatedAtMs + policy.pendingGraceMs);
  if (pod !== undefined) {
    if (pod.phase === 'Pending') ends.push(pod.createdAtMs + policy.pendingGraceMs);
    if (pod.deletionAtMs !== undefined) ends.push(pod.deletionAtMs);
    if (isTerminal(pod)) ends.push(terminalSinceMs(pod) + policy.terminalGraceMs);
  }
  return ends.sort((a, b) => a - b);
}

export interface AfterGrace {
  readonly reason: OrphanReason;
  /** When the rule releases it, if nothing else changes meanwhile (epoch ms). */
  readonly atMs: number;
}

/**
 * For an allocation that is not an orphan now: whether it becomes one once a grace period ends, with nothing else
 * changing. The rule itself is asked at each grace end, so this never disagrees with it.
 */
export function orphanAfterGrace(
  record: AllocationRecord,
  ip: string,
  pod: PodView | undefined,
  policy: CleanupPolicy,
  nowMs: number,
  allocatedAtMs?: number,
): AfterGrace | undefined {
  for (const atMs of graceEnds(pod, policy, allocatedAtMs)) {
    if (atMs <= nowMs) continue;
    const reason = orphanReason(record, ip, pod, policy, atMs, allocatedAtMs);
    if (reason !== undefined) return { reason, atMs };
  }
  return undefined;
}
