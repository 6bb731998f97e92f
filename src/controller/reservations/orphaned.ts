// Orphaned OverlappingRangeIPReservations. A reservation is deleted only once its address is free in every IPPool
// (never while any pool record holds it, whoever the pod: the address stays reserved as long as it is allocated),
// and then when its pod is gone or is a live pod that holds the address nowhere. The address comes from the name
// ([<network_name>-]<IP with ':' as '-'>); an IPv6 name that splits several ways (a network name ending in hex-like
// words) counts as held when any reading is held. Reservations taken recently are left alone (the plugin creates or
// adopts one before its pool write): the grace runs from the last time a writer took it, not from its creation, so
// an adoption in flight is not judged by the age of what it adopted. Every delete is conditional on the uid and
// resourceVersion that were judged.
import { formatIP } from '../../ip/address.ts';
import type { ApiClient } from '../../kube/api.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import { parseReservationName } from '../../config/names.ts';
import { messageOf } from '../../errors.ts';
import type { Log } from '../../log/json-log.ts';
import type { CleanupPolicy } from '../orphans/orphans.ts';
import type { PodView } from '../orphans/pod-view.ts';
import type { ReservationView } from '../runtime/views.ts';

export type ReservationReason = 'pod-gone' | 'address-not-held';

export interface ReservationJudge {
  readonly networkNames: ReadonlySet<string>;
  readonly policy: CleanupPolicy;
  readonly graceMs: number;
  readonly now: number;
}

/** Every address the name can stand for (one, unless the name is ambiguous); empty when it names none. */
export function reservedAddresses(name: string, networkNames: ReadonlySet<string>): string[] {
  const parsed = parseReservationName(name, { networkNames });
  if (parsed === undefined) return [];
  if (!parsed.ambiguous) return [formatIP(parsed.ip)];
  const starts = [0];
  for (let i = name.indexOf('-'); i >= 0; i = name.indexOf('-', i + 1)) starts.push(i + 1);
  const readings = new Set<string>();
  for (const start of starts) {
    const rest = parseReservationName(name.slice(start));
    if (rest !== undefined && rest.networkName === undefined) readings.add(formatIP(rest.ip));
  }
  return [...readings];
}

/**
 * The verdict on one reservation given its pod (null: gone; undefined: unknown) and the held addresses (canonical
 * text of every address any pool record holds).
 */
export function judgeReservation(
  view: ReservationView,
  pod: PodView | null | undefined,
  held: ReadonlySet<string>,
  judge: ReservationJudge,
): ReservationReason | undefined {
  // A node agent's warm address (DESIGN §11) or a claim's (§12) is judged by the pools alone: no pod stands behind it.
  const podless = view.warm === true || view.claim === true;
  if (!podless && (view.podRef === '' || !view.podRef.includes('/'))) return undefined;
  if (judge.now - lastTakenMs(view) < judge.graceMs) return undefined;
  const addresses = reservedAddresses(view.name, judge.networkNames);
  if (addresses.length === 0) return undefined; // not a name hereabouts or Whereabouts writes: not ours to judge
  if (addresses.some((ip) => held.has(ip))) return undefined; // allocated: it stays reserved, whatever its pod
  if (podless) return 'address-not-held';
  if (pod === undefined) return undefined; // unknown (the live read failed)
  if (pod === null) return 'pod-gone';
  if (pod.phase === 'Pending' && judge.now - pod.createdAtMs < judge.policy.pendingGraceMs) return undefined;
  return 'address-not-held';
}

/**
 * For a reservation the rule keeps now: whether it goes once its grace period (or its Pending pod's) ends, with
 * nothing else changing, and when. The rule itself is asked at each grace end.
 */
export function reservationAfterGrace(
  view: ReservationView,
  pod: PodView | null | undefined,
  held: ReadonlySet<string>,
  judge: ReservationJudge,
): { readonly reason: ReservationReason; readonly atMs: number } | undefined {
  const ends = [lastTakenMs(view) + judge.graceMs];
  if (pod !== null && pod !== undefined && pod.phase === 'Pending')
    ends.push(pod.createdAtMs + judge.policy.pendingGraceMs);
  for (const atMs of ends.sort((a, b) => a - b)) {
    if (atMs <= judge.now) continue;
    const reason = judgeReservation(view, pod, held, { ...judge, now: atMs });
    if (reason !== undefined) return { reason, atMs };
  }
  return undefined;
}

/** When a writer last took the reservation (its creation, when nothing says later). */
export function lastTakenMs(view: ReservationView): number {
  return Math.max(view.createdAtMs, view.takenAtMs ?? 0);
}

export async function deleteReservation(
  api: ApiClient,
  view: ReservationView,
  options: { leading: () => boolean; log: Log },
): Promise<boolean> {
  if (!options.leading()) return false;
  try {
    // 'gone' already, or 'conflict': changed since judged (re-adopted, handed over), so not what was judged
    return (await new PoolWriter(api).deleteReservation(view)) === 'deleted';
  } catch (err) {
    options.log.warning(`cannot delete OverlappingRangeIPReservation ${view.name}: ${messageOf(err)}`);
    return false;
  }
}

/** podRefs whose reservations may be orphans by the cache; the pass reads these pods live before deciding. */
export function reservationSuspects(
  reservations: Iterable<ReservationView>,
  pods: ReadonlyMap<string, PodView>,
  held: ReadonlySet<string>,
  judge: ReservationJudge,
): ReservationView[] {
  const out: ReservationView[] = [];
  for (const view of reservations) {
    if (judgeReservation(view, pods.get(view.podRef) ?? null, held, judge) !== undefined) out.push(view);
  }
  return out;
}
