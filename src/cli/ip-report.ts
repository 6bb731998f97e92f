// `hereabouts ip`: who holds an address, from the inventory (pure). One entry per pool holding it (two pools of one
// network holding it is a problem `check` reports), and the reservations of the address no pool holds it for.
import { formatIP, type IPAddress } from '../ip/address.ts';
import { reservationName } from '../config/names.ts';
import { age, podOf, poolsContaining, reservationState, type Inventory, type ReservationState } from './inventory.ts';

export interface PodState {
  /** The pod's phase, 'gone' (no such pod), 'recreated' (the name is another pod's now) or 'unknown' (not read). */
  readonly state: string;
  readonly uid?: string;
  readonly node?: string;
}

export interface Holder {
  /** The network_name prefix of the pool's objects ('' none); null when the pool's name follows no rule. */
  readonly network: string | null;
  readonly pool: string;
  /** The node owning the pool, for a node slice. */
  readonly sliceOf?: string;
  readonly podRef: string;
  readonly podUid?: string;
  readonly containerId: string;
  readonly ifname: string;
  /** The node that made the allocation (as recorded), else the pod's. */
  readonly node?: string;
  readonly pod: PodState;
  /** When it was allocated (RFC 3339), when recorded (Whereabouts records no time). */
  readonly since?: string;
  readonly reservation: { readonly name: string | null; readonly state: ReservationState; readonly podRef?: string };
}

export interface StrayReservation {
  readonly name: string;
  readonly podRef: string;
  readonly containerId: string;
  readonly createdAt: string;
}

export interface IpReport {
  readonly address: string;
  readonly namespace: string;
  /** --network, when given. */
  readonly network?: string;
  readonly holders: readonly Holder[];
  /** Reservations of the address that no holder's pool accounts for. */
  readonly reservations: readonly StrayReservation[];
}

export function podState(inv: Inventory, podRef: string, podUid: string | undefined): PodState {
  if (inv.pods === undefined) return { state: 'unknown' };
  const pod = inv.pods.get(podRef);
  if (pod === undefined) return { state: podRef.includes('/') ? 'gone' : 'unknown' };
  const base = { uid: pod.view.uid, ...(pod.node === undefined ? {} : { node: pod.node }) };
  if (podUid !== undefined && podUid !== '' && pod.view.uid !== '' && podUid !== pod.view.uid)
    return { state: 'recreated', ...base };
  return { state: pod.view.terminating ? `${pod.view.phase}, terminating` : pod.view.phase, ...base };
}

export function ipReport(inv: Inventory, ip: IPAddress, network?: string): IpReport {
  const address = formatIP(ip);
  const holders: Holder[] = [];
  const accounted = new Set<string>();
  for (const pool of poolsContaining(inv, ip, network)) {
    const record = pool.view.allocations.get(ip.value);
    if (record === undefined) continue;
    const reservation = reservationState(inv, pool, ip, record);
    if (reservation.name !== undefined) accounted.add(reservation.name);
    const pod = podState(inv, record.podRef, record.podUid);
    const node = record.node ?? podOf(inv, record)?.node;
    const allocatedAt = pool.view.allocatedAt.get(ip.value);
    holders.push({
      network: pool.network ?? null,
      pool: pool.view.name,
      ...(pool.node === undefined ? {} : { sliceOf: pool.node }),
      podRef: record.podRef,
      ...(record.podUid === undefined ? {} : { podUid: record.podUid }),
      containerId: record.containerId,
      ifname: record.ifname,
      ...(node === undefined ? {} : { node }),
      pod,
      ...(allocatedAt === undefined ? {} : { since: new Date(allocatedAt).toISOString() }),
      reservation: {
        name: reservation.name ?? null,
        state: reservation.state,
        ...(reservation.reservation === undefined ? {} : { podRef: reservation.reservation.podRef }),
      },
    });
  }
  const reservations: StrayReservation[] = [];
  for (const r of inv.reservations.values()) {
    if (accounted.has(r.name) || !r.addresses.includes(address)) continue;
    if (network !== undefined && r.name !== reservationName(ip, network === '' ? undefined : network)) continue;
    reservations.push({
      name: r.name,
      podRef: r.podRef,
      containerId: r.containerId,
      createdAt: new Date(r.createdAtMs).toISOString(),
    });
  }
  return { address, namespace: inv.namespace, ...(network === undefined ? {} : { network }), holders, reservations };
}

const REASON: Record<ReservationState, string> = {
  agrees: 'agrees with the pool',
  'other-attachment': 'DISAGREES: names another attachment',
  missing: 'MISSING',
  unknown: 'unknown (the pool name follows no naming rule)',
};

export function formatIpReport(report: IpReport, nowMs: number): string {
  const where =
    report.network === undefined ? '' : ` of network ${report.network === '' ? '(unnamed)' : report.network}`;
  let out = '';
  if (report.holders.length === 0)
    out += `${report.address} is not allocated in any IPPool${where} in namespace ${report.namespace}\n`;
  for (const h of report.holders) {
    const pod = [
      h.pod.state,
      h.pod.uid === undefined ? undefined : `uid ${h.pod.uid}`,
      h.pod.node === undefined ? undefined : `on ${h.pod.node}`,
    ];
    out += `${report.address} is held by ${h.podRef === '' ? '(no pod)' : h.podRef} in IPPool ${h.pool}\n`;
    const lines: Array<[string, string]> = [
      ['network', h.network === null ? '?' : h.network === '' ? '(unnamed)' : h.network],
      ...(h.sliceOf === undefined ? [] : [['node slice', `of node ${h.sliceOf}`] as [string, string]]),
      ['pod', pod.filter((p) => p !== undefined).join(', ')],
      ['node', h.node ?? '-'],
      ['container', `${h.containerId === '' ? '-' : h.containerId}, interface ${h.ifname === '' ? '-' : h.ifname}`],
      ['since', h.since === undefined ? 'not recorded' : `${h.since} (${age(Date.parse(h.since), nowMs)} ago)`],
      [
        'reservation',
        `${h.reservation.name ?? '?'}: ${REASON[h.reservation.state]}${h.reservation.state === 'other-attachment' ? ` (${h.reservation.podRef ?? ''})` : ''}`,
      ],
    ];
    for (const [key, value] of lines) out += `  ${key.padEnd(12)} ${value}\n`;
  }
  for (const r of report.reservations) {
    out += `reservation ${r.name} (created ${r.createdAt}) names ${r.podRef || '(no pod)'}, container ${r.containerId || '-'}, but no pool${where} holds ${report.address} for it\n`;
  }
  return out;
}
