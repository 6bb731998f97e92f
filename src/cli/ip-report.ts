// `hereabouts ip`: who holds an address, from the inventory (pure). One entry per pool holding it (two pools of one
// network holding it is a problem `check` reports), and the reservations of the address no pool holds it for. A
// holder is a pod, a node agent (a warm record) or a claim (DESIGN §12): an IPAddressClaim, or a PrefixClaim whose
// block contains the address. A sticky address (docs/sticky.md) also names its binding, whether its workload still
// holds it (the controller's rule, on the objects read live) and until when it is kept, in plain words.
import { formatIP, tryParseIP, type IPAddress } from '../ip/address.ts';
import { formatCidr } from '../ip/cidr.ts';
import { reservationName } from '../config/names.ts';
import { claimHolder } from '../store/claim-record.ts';
import {
  age,
  CLAIM_RECORD_GRACE_MS,
  inTime,
  claimBlock,
  claimOf,
  claimState,
  describeClaim,
  holdingRecord,
  podOf,
  poolsContaining,
  reservationState,
  type ClaimKind,
  type ClaimState,
  type Inventory,
  type IPAddressInfo,
  type ReservationState,
} from './inventory.ts';
import { bindingDetail, STICKY_GRACE, type BindingDetail } from './bindings.ts';
import { STICKY_AREA_NODE } from '../store/sticky-binding.ts';

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
  /** A claim record (DESIGN §12): the claim holding the address instead of a pod. */
  readonly claim?: ClaimDetail;
  /** A sticky address (docs/sticky.md): its binding, whether a pod holds it now, and whether the binding holds. */
  readonly binding?: BindingDetail;
}

export interface ClaimDetail {
  readonly kind: ClaimKind;
  readonly namespace: string;
  readonly name: string;
  /** A PrefixClaim's block, which contains the address (the record sits at its first address). */
  readonly block?: string;
  /** Where the record sits: the block's first address (the address itself for an IPAddressClaim). */
  readonly recordedAt: string;
  readonly state: ClaimState;
  /** An IPAddressClaim's Cluster (spec.clusterName, else its cluster.x-k8s.io/cluster-name label). */
  readonly cluster?: string;
  /** An IPAddressClaim's IPAddress (same name): null when there is none; absent when not read. */
  readonly ipAddress?: IPAddressInfo | null;
  /** A claim that is gone: when the controller's record pass may release the record (RFC 3339), when recorded. */
  readonly releasableAt?: string;
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
    const held = holdingRecord(pool, ip);
    if (held === undefined) continue;
    const { record, at } = held;
    const reservation = reservationState(inv, pool, ip, record);
    if (reservation.name !== undefined) accounted.add(reservation.name);
    const pod = podState(inv, record.podRef, record.podUid);
    const binding = bindingDetail(record, pod.state, inv.sticky);
    const node = record.node ?? podOf(inv, record)?.node;
    const allocatedAt = pool.view.allocatedAt.get(at);
    const holder = claimHolder(record);
    let claim: ClaimDetail | undefined;
    if (holder !== undefined) {
      const block = claimBlock(holder, ip.family, at);
      const info = claimOf(inv, holder);
      const state = claimState(inv, holder);
      claim = {
        kind: holder.kind,
        namespace: holder.namespace,
        name: holder.name,
        ...(block === undefined ? {} : { block: formatCidr(block) }),
        recordedAt: formatIP({ family: ip.family, value: at }),
        state,
        ...(info?.cluster === undefined ? {} : { cluster: info.cluster }),
        ...(info?.ipAddress === undefined ? {} : { ipAddress: info.ipAddress }),
        ...(state === 'gone' && allocatedAt !== undefined
          ? { releasableAt: new Date(allocatedAt + CLAIM_RECORD_GRACE_MS).toISOString() }
          : {}),
      };
    }
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
      ...(claim === undefined ? {} : { claim }),
      ...(binding === undefined ? {} : { binding }),
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
  none: "none (a PrefixClaim's block is not reserved: no other writer shares its pool)",
};

const CLAIM_STATE: Record<ClaimState, string> = {
  present: 'exists',
  deleting: 'being deleted: its finalizer releases the address first',
  gone: 'GONE',
  unknown: 'unknown (its kind could not be read)',
};

/** The lines that say which claim holds the address, in place of the pod's. */
function claimLines(c: ClaimDetail, address: string, nowMs: number): Array<[string, string]> {
  let state = CLAIM_STATE[c.state];
  if (c.state === 'gone') {
    const at = c.releasableAt === undefined ? undefined : Date.parse(c.releasableAt);
    const first = c.ipAddress === null || c.ipAddress === undefined ? '' : ' deletes its IPAddress, then';
    state += `: the controller's record pass${first} releases the ${c.block === undefined ? 'address' : 'block'}`;
    if (at !== undefined && at > nowMs) state += ` (not before ${inTime(at, nowMs)})`;
  }
  const lines: Array<[string, string]> = [['claim', `${c.kind} ${c.namespace}/${c.name}: ${state}`]];
  if (c.kind === 'IPAddressClaim') {
    lines.push(['cluster', c.cluster ?? (c.state === 'present' || c.state === 'deleting' ? '(none named)' : '-')]);
    if (c.ipAddress === null) lines.push(['ipaddress', `${c.namespace}/${c.name}: none`]);
    else if (c.ipAddress !== undefined) {
      const a = c.ipAddress;
      const named = tryParseIP(a.address);
      const agrees =
        named !== undefined && formatIP(named) === address
          ? ''
          : `: DISAGREES (the pool holds ${address} for the claim)`;
      const details = [
        `${a.address}${a.prefix === undefined ? '' : `/${a.prefix}`}`,
        a.gateway === undefined ? undefined : `gateway ${a.gateway}`,
      ].filter((d) => d !== undefined);
      lines.push(['ipaddress', `${c.namespace}/${a.name}: ${details.join(', ')}${agrees}`]);
    }
  }
  if (c.block !== undefined) lines.push(['block', `${c.block}, recorded at ${c.recordedAt}`]);
  return lines;
}

/** The lines of a sticky address: its binding, whether its workload holds it, and until when it is kept. */
export function bindingLines(b: BindingDetail): Array<[string, string]> {
  const where =
    `${b.binding}${b.namespace === '' ? '' : ` in namespace ${b.namespace}`}` +
    (b.prebound === true
      ? " (pre-bound from the StatefulSet's sticky-addresses: its replica's first ADD takes it)"
      : '');
  if (b.state === 'released')
    return [
      ['binding', `${where}: NO LONGER HELD (${b.reason ?? 'released'}): ${b.seen}`],
      [
        'released',
        `by the controller once it has seen this for its ${STICKY_GRACE}, unless the workload takes it back first`,
      ],
    ];
  const state = b.state === 'holds' ? 'held by its workload' : 'unknown';
  return [
    ['binding', `${where}: ${state} (${b.seen})`],
    ['kept until', `${b.keptUntil}, then for the controller's ${STICKY_GRACE}`],
  ];
}

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
    const who =
      h.claim !== undefined
        ? describeClaim(h.claim, h.claim.block === undefined ? undefined : `(block ${h.claim.block})`)
        : h.podRef === ''
          ? '(no pod)'
          : h.podRef;
    out += `${report.address} is held by ${who} in IPPool ${h.pool}\n`;
    const lines: Array<[string, string]> = [
      ['network', h.network === null ? '?' : h.network === '' ? '(unnamed)' : h.network],
      ...(h.sliceOf === undefined
        ? []
        : [
            [
              'node slice',
              h.sliceOf === STICKY_AREA_NODE
                ? `the sticky area (the slice of ${h.sliceOf}: every node's sticky addresses)`
                : `of node ${h.sliceOf}`,
            ] as [string, string],
          ]),
      ...(h.claim === undefined
        ? ([
            [
              'pod',
              h.binding?.pod === 'parked'
                ? `parked: no pod holds it now (${h.podRef} is gone)`
                : pod.filter((p) => p !== undefined).join(', '),
            ],
            ['node', h.node ?? '-'],
            ...(h.binding === undefined ? [] : bindingLines(h.binding)),
          ] as Array<[string, string]>)
        : claimLines(h.claim, report.address, nowMs)),
      ['container', `${h.containerId === '' ? '-' : h.containerId}, interface ${h.ifname === '' ? '-' : h.ifname}`],
      ['since', h.since === undefined ? 'not recorded' : `${h.since} (${age(Date.parse(h.since), nowMs)} ago)`],
      [
        'reservation',
        `${h.reservation.state === 'none' ? '' : `${h.reservation.name ?? '?'}: `}${REASON[h.reservation.state]}${h.reservation.state === 'other-attachment' ? ` (${h.reservation.podRef ?? ''})` : ''}`,
      ],
    ];
    for (const [key, value] of lines) out += `  ${key.padEnd(12)} ${value}\n`;
  }
  for (const r of report.reservations) {
    out += `reservation ${r.name} (created ${r.createdAt}) names ${r.podRef || '(no pod)'}, container ${r.containerId || '-'}, but no pool${where} holds ${report.address} for it\n`;
  }
  return out;
}
