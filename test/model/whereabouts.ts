// The real Whereabouts plugin (v0.9.4, pkg/storage/kubernetes/ipam.go IPManagementKubernetesUpdate) as the model
// runs it beside hereabouts: its write order, not ours. Under its Lease (whereabouts-lease.ts), per range:
//   ADD  list the pools (a connectivity check); read the pool (create it empty when missing, then read again);
//        the pod+ifname's record if there is one (its container id rewritten), else the lowest free address; with
//        enable_overlapping_ranges, GET the address's reservation: another pod's -> skip the address and plan again,
//        the same podref's -> nothing to create later; write the pool (a JSON patch testing its resourceVersion; a
//        422 is retried); only then create the reservation {podref, ifname} (AlreadyExists fails the ADD, leaving
//        its pool record behind).
//   DEL  the record of this container+ifname (none: done, nothing else); write the pool without it; delete the
//        reservation named after its address, unconditionally (whoever it names now). cmdDel ignores every error.
// What the ADD has written so far is kept in `progress`, so that the model knows what a killed process left.
import { formatIP } from '../../src/ip/address.ts';
import { masked, networkOf, lastOf, parseCidr } from '../../src/ip/cidr.ts';
import type { ApiClient, ApiResponse } from '../../src/kube/api.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { WHEREABOUTS_LEASE, withLease } from './whereabouts-lease.ts';

const RETRIES = 100;

export interface WhereaboutsCall {
  readonly podRef: string;
  readonly containerId: string;
  readonly ifname: string;
  /** The network's range (Whereabouts allocates from its usable span). */
  readonly range: string;
  readonly overlapping: boolean;
  /** node_slice_size: the NodeSlicePool `network` says which slice of the range `node` allocates from. */
  readonly slice?: { readonly network: string; readonly node: string };
}

/** What an ADD has done so far (read by the model after a kill). */
export interface WhereaboutsProgress {
  /** The pool and address of its (last) pool write: it may have landed, even when its answer never came. */
  written?: { readonly pool: string; readonly ip: string };
  /** Its reservation was created, or found naming the same podref. */
  reserved: boolean;
}

export interface Entry {
  id: string;
  podref: string;
  ifname?: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

class WhereaboutsError extends Error {
  constructor(what: string, res?: ApiResponse) {
    super(res === undefined ? what : `${what}: HTTP ${res.status} ${JSON.stringify(obj(res.body)['message'] ?? '')}`);
    this.name = 'WhereaboutsError';
  }
}

/** normalizeRange / NormalizeIP of Whereabouts (IPv4 here; no network_name on the model's shared networks). */
export const whereaboutsPoolName = (range: string): string => range.replaceAll(':', '-').replace('/', '-');
const reservationPath = (api: ApiClient, ip: string): string =>
  objectPath(api.namespace, 'overlappingrangeipreservations', ip.replaceAll(':', '-'));

async function connectivity(api: ApiClient): Promise<void> {
  const res = await api.send({ method: 'GET', path: objectPath(api.namespace, 'ippools') });
  if (res.status !== 200) throw new WhereaboutsError('IPAM connectivity error', res);
}

/** Where a call allocates: its pool (the node's slice's, in node-slice mode) and the Lease it serialises on. */
interface Target {
  readonly pool: string;
  readonly range: string;
  readonly lease: string;
}

async function targetOf(api: ApiClient, call: WhereaboutsCall): Promise<Target> {
  if (call.slice === undefined)
    return { pool: whereaboutsPoolName(call.range), range: call.range, lease: WHEREABOUTS_LEASE };
  const res = await api.send({ method: 'GET', path: objectPath(api.namespace, 'nodeslicepools', call.slice.network) });
  if (res.status !== 200) throw new WhereaboutsError('error getting node slice', res);
  const entries = obj(obj(res.body)['status'])['allocations'];
  const mine = (Array.isArray(entries) ? entries : []).map(obj).find((e) => e['nodeName'] === call.slice?.node);
  const slice = mine?.['sliceRange'];
  if (typeof slice !== 'string') throw new WhereaboutsError('no allocated node slice for node');
  const pool = `${call.slice.network}-${call.slice.node}-${whereaboutsPoolName(slice)}`;
  return { pool, range: slice, lease: pool };
}

/** The pool, or 'again' after creating it (Whereabouts then reads it on its next attempt). */
async function getPool(api: ApiClient, target: Target): Promise<Obj | 'again'> {
  const { pool: name, range } = target;
  const path = objectPath(api.namespace, 'ippools', name);
  const res = await api.send({ method: 'GET', path });
  if (res.status === 200) return obj(res.body);
  if (res.status !== 404) throw new WhereaboutsError('k8s get error', res);
  const body = {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, namespace: api.namespace },
    spec: { range, allocations: {} },
  };
  const created = await api.send({ method: 'POST', path: objectPath(api.namespace, 'ippools'), body });
  if (created.status !== 201 && created.status !== 409) throw new WhereaboutsError('k8s create error', created);
  return 'again';
}

/** The allocations as Whereabouts' Go types read them: {id, podref, ifname}, nothing else. */
export function entriesOf(pool: Obj): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const [offset, value] of Object.entries(obj(obj(pool['spec'])['allocations']))) {
    const v = obj(value);
    const ifname = typeof v['ifname'] === 'string' && v['ifname'] !== '' ? v['ifname'] : undefined;
    out.set(offset, {
      id: typeof v['id'] === 'string' ? v['id'] : '',
      podref: typeof v['podref'] === 'string' ? v['podref'] : '',
      ...(ifname === undefined ? {} : { ifname }),
    });
  }
  return out;
}

/** KubernetesIPPool.Update: a JSON patch from the pool read to the new allocations, first testing its version. */
export async function updatePool(api: ApiClient, pool: Obj, next: Map<string, Entry>): Promise<ApiResponse> {
  const meta = obj(pool['metadata']);
  const before = entriesOf(pool);
  const ops: Obj[] = [{ op: 'test', path: '/metadata/resourceVersion', value: meta['resourceVersion'] }];
  const hasMap = typeof obj(pool['spec'])['allocations'] === 'object' && obj(pool['spec'])['allocations'] !== null;
  const changes: Obj[] = [];
  if (!hasMap) {
    const value = Object.fromEntries(next);
    ops.push({ op: 'test', path: '/spec/allocations', value: null });
    changes.push({ op: 'add', path: '/spec/allocations', value });
  } else {
    for (const offset of before.keys())
      if (!next.has(offset)) changes.push({ op: 'remove', path: `/spec/allocations/${offset}` });
    for (const [offset, entry] of next) {
      const old = before.get(offset);
      if (old === undefined) {
        ops.push({ op: 'test', path: `/spec/allocations/${offset}`, value: null });
        changes.push({ op: 'add', path: `/spec/allocations/${offset}`, value: entry });
      } else if (old.id !== entry.id) {
        changes.push({ op: 'replace', path: `/spec/allocations/${offset}/id`, value: entry.id });
      }
    }
  }
  const path = objectPath(api.namespace, 'ippools', String(meta['name']));
  const body = [...ops, ...changes];
  return api.send({ method: 'PATCH', path, body, contentType: 'application/json-patch+json' });
}

/** Whereabouts' usable span of a range, as offsets from its network address. */
function span(range: string): { first: bigint; last: bigint; base: bigint; family: 4 | 6 } {
  const cidr = masked(parseCidr(range));
  const base = networkOf(cidr);
  return { first: 1n, last: lastOf(cidr) - base - 1n, base, family: cidr.family };
}

/** ADD of one attachment; resolves to the address (text) given to the pod. */
export async function whereaboutsAdd(api: ApiClient, call: WhereaboutsCall, progress: WhereaboutsProgress) {
  const target = await targetOf(api, call);
  return withLease(api, target.lease, call.podRef, async () => {
    await connectivity(api);
    const { first, last, base, family } = span(target.range);
    const skipped = new Set<string>();
    let skipReservation = false;
    let chosen: string | undefined;
    let failure: Error | undefined;
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const pool = await getPool(api, target);
      if (pool === 'again') continue;
      const next = entriesOf(pool);
      const mine = [...next].find(([, e]) => e.podref === call.podRef && e.ifname === call.ifname);
      let offset: string;
      if (mine !== undefined) {
        offset = mine[0];
        next.set(offset, { ...mine[1], id: call.containerId });
      } else {
        let free: bigint | undefined;
        for (let o = first; o <= last && free === undefined; o++)
          if (!next.has(String(o)) && !skipped.has(String(o))) free = o;
        if (free === undefined) throw new WhereaboutsError(`Could not allocate IP in range ${target.range}`);
        offset = String(free);
        next.set(offset, { id: call.containerId, podref: call.podRef, ifname: call.ifname });
      }
      const ip = formatIP({ family, value: base + BigInt(offset) });
      if (call.overlapping) {
        const res = await api.send({ method: 'GET', path: reservationPath(api, ip) });
        if (res.status !== 200 && res.status !== 404) throw new WhereaboutsError('k8s get reservation error', res);
        if (res.status === 200) {
          if (obj(obj(res.body)['spec'])['podref'] !== call.podRef) {
            skipped.add(offset); // "possibly from another range": plan again without it
            continue;
          }
          skipReservation = true;
        }
      }
      chosen = ip;
      progress.written = { pool: target.pool, ip }; // may land even if this process dies waiting for the answer
      const written = await updatePool(api, pool, next);
      if (written.status === 200) {
        failure = undefined;
        break;
      }
      failure = new WhereaboutsError('IPAM error updating pool', written);
      if (written.status !== 422) break; // not temporary: on to the reservation all the same
    }
    if (chosen === undefined) throw new WhereaboutsError('no address after all retries');
    if (call.overlapping && !skipReservation) {
      const body = {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'OverlappingRangeIPReservation',
        metadata: { name: chosen.replaceAll(':', '-'), namespace: api.namespace },
        spec: { podref: call.podRef, ifname: call.ifname },
      };
      const path = objectPath(api.namespace, 'overlappingrangeipreservations');
      const created = await api.send({ method: 'POST', path, body });
      if (created.status !== 201)
        throw new WhereaboutsError('Error performing UpdateOverlappingRangeAllocation', created);
      failure = undefined; // the pool write's error is overwritten, as in ipam.go
    }
    // Relying on a reservation it found for its pod, Whereabouts does not look at it again before its pool write: if
    // its own reconciler deleted it meanwhile, the record stays without one (its in-flight window, as after a kill).
    if (call.overlapping && !skipReservation) progress.reserved = true;
    if (failure !== undefined) throw failure;
    return chosen;
  });
}

/** DEL of one attachment: never fails for the kubelet (cmdDel ignores errors); a killed process does. */
export async function whereaboutsDel(api: ApiClient, call: WhereaboutsCall): Promise<string> {
  try {
    const target = await targetOf(api, call);
    return await withLease(api, target.lease, call.podRef, async () => {
      await connectivity(api);
      const { base, family } = span(target.range);
      let ip: string | undefined;
      let outcome = 'gave up';
      for (let attempt = 0; attempt < RETRIES; attempt++) {
        const pool = await getPool(api, target);
        if (pool === 'again') continue;
        const next = entriesOf(pool);
        const mine = [...next].find(([, e]) => e.id === call.containerId && e.ifname === call.ifname);
        if (mine === undefined) return 'not found';
        next.delete(mine[0]);
        ip = formatIP({ family, value: base + BigInt(mine[0]) });
        const written = await updatePool(api, pool, next);
        if (written.status === 422) continue;
        outcome = written.status === 200 ? `released ${ip}` : `pool write failed (${written.status})`;
        break;
      }
      // Whatever the pool write did, as in ipam.go: the reservation named after the address goes.
      if (call.overlapping && ip !== undefined) await api.send({ method: 'DELETE', path: reservationPath(api, ip) });
      return outcome;
    });
  } catch (err) {
    if (err instanceof WhereaboutsError || (err instanceof Error && err.message.startsWith('time limit'))) {
      return `error ignored: ${err.message}`;
    }
    throw err;
  }
}
