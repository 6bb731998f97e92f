// Missing OverlappingRangeIPReservations: an address a pool holds must stay reserved, or an overlapping range could
// hand it out again. The controller re-creates a missing one (spec {podref, ifname, containerid}, as the plugin
// writes it) when it can tell that the pool's writers use reservations: at least one other record of the same pool
// has its reservation, naming the same pod. That evidence also gives the name prefix ([<network_name>-], a leading
// part of the pool's name), which the pool alone does not; NAD configs cannot decide it, since the usual config is a
// file on each node. A pool none of
// whose records has a reservation is left alone (reservations may be disabled for it).
//
// A claim's record (DESIGN §12: an IPAddressClaim's address) is repaired like a pod's, naming the claim; an
// AddressPool's own IPPool needs no evidence, its reservations always carry the network name hereabouts-claims. A
// PrefixClaim's block has no reservation.
//
// A record just written may be waiting for its reservation (Whereabouts writes the pool first): only a record older
// than the reservation grace is repaired; one without createdAt (Whereabouts') once it has been seen missing its
// reservation for that long. The create is a POST: 409 means it exists, and nothing is ever overwritten.
import { claimHolder } from '../../store/claim-record.ts';
import { formatIP, type IPAddress } from '../../ip/address.ts';
import type { ApiClient } from '../../kube/api.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import { CLAIMS_NETWORK, isClaimsName, reservationName } from '../../config/names.ts';
import type { AllocationRecord } from '../../store/store.ts';
import type { Log } from '../../log/json-log.ts';
import type { PoolView } from '../pools/view.ts';
import type { ReservationView } from '../runtime/views.ts';

export interface MissingReservation {
  readonly pool: string;
  readonly address: bigint;
  readonly ip: string;
  /** The reservation's name. */
  readonly name: string;
  readonly record: AllocationRecord;
}

export interface RepairJudge {
  readonly graceMs: number;
  /** Wall clock, against the records' createdAt. */
  readonly nowMs: number;
  /** Monotonic clock, against `firstMissing`. */
  readonly monotonicNowMs: number;
  /** "pool|address|containerId" -> when first seen missing (monotonic); kept across passes, pruned here. */
  readonly firstMissing: Map<string, number>;
}

/**
 * The network_name prefixes a reservation of this pool may carry: none, or a leading part of the pool's name (pools
 * are named [<network_name>-][<node>-]<range>), e.g. "", "blue", "blue-node1" for "blue-node1-10.0.0.0-26".
 */
function candidatePrefixes(poolName: string): string[] {
  const out = [''];
  for (let i = poolName.indexOf('-'); i > 0; i = poolName.indexOf('-', i + 1)) out.push(poolName.slice(0, i));
  return out;
}

/**
 * The reservation of `ip` that names `podRef`, under any of the names the pool's writers may give it; undefined when
 * there is none. `reservations` is keyed by name.
 */
export function reservationNaming(
  reservations: ReadonlyMap<string, ReservationView>,
  poolName: string,
  ip: IPAddress,
  podRef: string,
): ReservationView | undefined {
  const base = reservationName(ip);
  for (const prefix of candidatePrefixes(poolName)) {
    const view = reservations.get(prefix === '' ? base : `${prefix}-${base}`);
    if (view !== undefined && view.podRef === podRef) return view;
  }
  return undefined;
}

/** When a reservation was last taken (its takenAtMs, else its creation). */
export const takenAtOf = (view: ReservationView): number => view.takenAtMs ?? view.createdAtMs;

/** The missing reservations of held addresses that are due for repair, from the caches (confirmed later). */
export function missingReservations(
  pools: Iterable<PoolView>,
  reservations: Iterable<ReservationView>,
  judge: RepairJudge,
): MissingReservation[] {
  const podOf = new Map<string, string>(); // reservation name -> podref
  for (const view of reservations) podOf.set(view.name, view.podRef);
  if (podOf.size === 0) {
    judge.firstMissing.clear();
    return []; // no evidence anywhere (reservations unused, or none yet)
  }
  const seen = new Set<string>();
  const out: MissingReservation[] = [];
  for (const pool of pools) {
    const range = pool.range;
    if (range === undefined || pool.allocations.size === 0) continue;
    const ipOf = (address: bigint): IPAddress => ({ family: range.family, value: address });
    const prefixes = candidatePrefixes(pool.name);
    const own = isClaimsName(pool.name);
    const named = (base: string, prefix: string): string => (prefix === '' ? base : `${prefix}-${base}`);
    // Evidence: the prefixes of existing reservations that name the same pod as the pool's record.
    const used = new Set<string>();
    const bases = new Map<bigint, string>();
    for (const [address, record] of pool.allocations) {
      const claim = claimHolder(record);
      if (record.podRef === '' && (claim === undefined || claim.prefixLength !== undefined)) continue;
      const base = reservationName(ipOf(address));
      bases.set(address, base);
      for (const prefix of prefixes) if (podOf.get(named(base, prefix)) === record.podRef) used.add(prefix);
    }
    if (own) used.add(CLAIMS_NETWORK);
    if (used.size !== 1) continue; // no evidence, or writers that disagree: not ours to decide
    const prefix = [...used].join('');
    for (const [address, record] of pool.allocations) {
      const base = bases.get(address);
      if (base === undefined) continue;
      const name = named(base, prefix);
      if (podOf.has(name)) continue;
      const key = `${pool.name}|${address}|${record.containerId}`;
      seen.add(key);
      const createdAt = pool.allocatedAt.get(address);
      let due: boolean;
      if (createdAt !== undefined) {
        due = judge.nowMs - createdAt >= judge.graceMs;
      } else {
        const first = judge.firstMissing.get(key) ?? judge.monotonicNowMs;
        judge.firstMissing.set(key, first);
        due = judge.monotonicNowMs - first >= judge.graceMs;
      }
      if (due) out.push({ pool: pool.name, address, ip: formatIP(ipOf(address)), name, record });
    }
  }
  for (const key of judge.firstMissing.keys()) if (!seen.has(key)) judge.firstMissing.delete(key);
  return out;
}

/** The same attachment: a record replaced meanwhile (another container) is not the one judged. */
export function sameAttachment(a: AllocationRecord, b: AllocationRecord): boolean {
  return a.containerId === b.containerId && a.podRef === b.podRef && a.ifname === b.ifname;
}

/** Creates the reservation; true when this call created it (false: it exists, or this replica stopped leading). */
export async function recreateReservation(
  api: ApiClient,
  missing: MissingReservation,
  options: { leading: () => boolean; log: Log },
): Promise<boolean> {
  if (!options.leading()) return false;
  const created = await new PoolWriter(api).recreateReservation(missing.name, missing.record);
  if (!created) options.log.debug(`OverlappingRangeIPReservation ${missing.name} exists after all`);
  return created;
}
