// Whether an allocation is an orphan: pure, so every rule is unit-tested. The reason is logged and counted.
import type { AllocationRecord } from '../store/store.ts';
import type { PodView } from './pod-view.ts';

export interface CleanupPolicy {
  readonly cleanupTerminating: boolean;
  readonly cleanupDisrupted: boolean;
  readonly verifyNetworkStatus: boolean;
  /** A Pending pod younger than this is never touched (its CNI ADD may still be running). */
  readonly pendingGraceMs: number;
}

export type OrphanReason = 'pod-gone' | 'pod-recreated' | 'pod-terminating' | 'pod-disrupted' | 'not-in-network-status';

/** `ip` is the canonical text of the allocated address; `pod` the live pod named by the record's podref. */
export function orphanReason(
  record: AllocationRecord,
  ip: string,
  pod: PodView | undefined,
  policy: CleanupPolicy,
  nowMs: number,
): OrphanReason | undefined {
  if (record.podRef === '' || !record.podRef.includes('/')) return undefined; // not a pod's: nothing to check against
  if (pod === undefined) return 'pod-gone';
  // A young Pending pod's CNI ADD may be running right now (and may be adopting this very record): hands off.
  if (pod.phase === 'Pending' && nowMs - pod.createdAtMs < policy.pendingGraceMs) return undefined;
  if (record.podUid !== undefined && record.podUid !== '' && pod.uid !== '' && record.podUid !== pod.uid) return 'pod-recreated';
  if (pod.terminating && policy.cleanupTerminating) return 'pod-terminating';
  if (pod.disrupted && policy.cleanupDisrupted) return 'pod-disrupted';
  if (policy.verifyNetworkStatus && pod.phase === 'Running' && pod.networkStatusIPs !== undefined && !pod.networkStatusIPs.has(ip)) {
    return 'not-in-network-status';
  }
  return undefined;
}
