// Which Lease a Whereabouts plugin holds while it writes a pool, and when it last wrote it: what tells hereabouts that
// a Whereabouts plugin may still be running (whereabouts-lease.ts; docs/safety.md, "In a mixed cluster").
//
// Who wrote the Lease last: Whereabouts' writes keep the metadata they read and bump spec.leaseTransitions when they
// take it, so every hereabouts write records the leaseTransitions it wrote (TRANSITIONS_ANNOTATION); a Lease whose
// leaseTransitions differ from that was written by Whereabouts since, at its renewTime. The time of the last
// Whereabouts write is carried across hereabouts' writes in SEEN_ANNOTATION, so that hereabouts' own writes never
// keep a Lease looking busy.
import type { Lease } from '../../kube/lease.ts';
import type { PoolRef } from '../store.ts';

/** Whereabouts' Lease of the shared pools of a namespace. */
export const WHEREABOUTS_LEASE = 'whereabouts';
/** How long after its last write a Whereabouts plugin counts as possibly still running. */
export const MIXED_WINDOW_MS = 15 * 60_000;
export const TRANSITIONS_ANNOTATION = 'hereabouts.cni.cncf.io/lease-transitions';
export const SEEN_ANNOTATION = 'hereabouts.cni.cncf.io/whereabouts-seen';

/** The Lease Whereabouts holds while it writes `pool`: `whereabouts`, or a slice pool's own name. */
export function whereaboutsLeaseName(pool: PoolRef): string {
  return pool.resultPrefix === undefined ? WHEREABOUTS_LEASE : pool.name;
}

/** When a Whereabouts plugin last wrote the Lease (by its clock, epoch ms); undefined: not that we know of. */
export function whereaboutsSeenAt(lease: Lease): number | undefined {
  if (lease.annotations[TRANSITIONS_ANNOTATION] !== String(lease.spec.leaseTransitions ?? 0)) {
    const at = Date.parse(lease.spec.renewTime ?? lease.spec.acquireTime ?? '');
    return Number.isNaN(at) ? Date.now() : at;
  }
  const seen = Date.parse(lease.annotations[SEEN_ANNOTATION] ?? '');
  return Number.isNaN(seen) ? undefined : seen;
}
