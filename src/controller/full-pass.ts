// One reconciliation pass: release orphaned allocations and delete orphaned reservations. Pools are listed before
// pods, and every removal is a merge patch conditional on the pool's resourceVersion: an allocation made after the
// pool was read (its pod possibly missing from our pod list) makes the patch fail with 409, and that pool waits
// for the next pass. Nothing fresh is ever removed on stale knowledge.
import { formatIP } from '../ip/address.ts';
import { masked, networkOf, parseCidr, type Cidr } from '../ip/cidr.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { statusText } from '../store/kubernetes/api.ts';
import { listAll } from '../store/kubernetes/list.ts';
import { decodeAllocations } from '../store/kubernetes/pool-object.ts';
import { mergePatch, objectPath } from '../store/kubernetes/resources.ts';
import { parseReservationName } from '../store/names.ts';
import { orphanReason, type CleanupPolicy, type OrphanReason } from './orphans.ts';
import { podView, type PodView } from './pod-view.ts';
import { desiredStatus, writeStatus } from './pool-status.ts';

export interface PassOptions {
  readonly policy: CleanupPolicy;
  /** Checked before every write: a replica that lost the lease stops at once. */
  readonly leading: () => boolean;
  /** Reservations younger than this are left alone (their pool write may be in flight). */
  readonly reservationGraceMs: number;
  readonly log: (msg: string) => void;
}

export interface PoolSummary {
  readonly name: string;
  readonly range: Cidr;
  readonly used: number;
}

export interface PassResult {
  readonly pools: readonly PoolSummary[];
  readonly released: ReadonlyArray<{ readonly pool: string; readonly ip: string; readonly podRef: string; readonly reason: OrphanReason }>;
  readonly reservationsDeleted: readonly string[];
  /** Pools whose patch met a newer version (left for the next pass). */
  readonly deferred: readonly string[];
  readonly pods: number;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export async function fullPass(api: ApiClient, options: PassOptions): Promise<PassResult> {
  const listedAt = Date.now();
  const poolItems = await listAll(api, objectPath(api.namespace, 'ippools'));
  const reservations = await listAll(api, objectPath(api.namespace, 'overlappingrangeipreservations'));
  const pods = new Map<string, PodView>();
  for (const item of await listAll(api, '/api/v1/pods')) {
    const view = podView(item);
    if (view !== undefined) pods.set(view[0], view[1]);
  }
  const released: Array<PassResult['released'][number]> = [];
  const deferred: string[] = [];
  const pools: PoolSummary[] = [];
  const held = new Set<string>();
  const now = Date.now();
  for (const item of poolItems) {
    const meta = obj(obj(item)['metadata']);
    const spec = obj(obj(item)['spec']);
    const name = String(meta['name']);
    let range: Cidr;
    try {
      range = masked(parseCidr(String(spec['range'])));
    } catch {
      options.log(`IPPool ${name}: spec.range ${JSON.stringify(spec['range'])} is not a CIDR; skipped`);
      continue;
    }
    const allocations = decodeAllocations(spec['allocations'] ?? {}, range, { where: `IPPool ${name}`, warn: options.log, strict: false });
    const removals: Record<string, null> = {};
    const gone: Array<PassResult['released'][number]> = [];
    for (const [address, record] of allocations) {
      const ip = formatIP({ family: range.family, value: address });
      const reason = orphanReason(record, ip, pods.get(record.podRef), options.policy, now);
      if (reason === undefined) {
        held.add(`${record.podRef}|${ip}`);
        continue;
      }
      removals[String(address - networkOf(range))] = null;
      gone.push({ pool: name, ip, podRef: record.podRef, reason });
    }
    let used = allocations.size;
    if (gone.length > 0 && options.leading()) {
      const patch = { metadata: { resourceVersion: String(meta['resourceVersion']) }, spec: { allocations: removals } };
      const result = await mergePatch(api, 'ippools', name, patch);
      if (result.kind === 'patched') {
        released.push(...gone);
        used -= gone.length;
        for (const g of gone) options.log(`released ${g.ip} of ${g.podRef} from IPPool ${name}: ${g.reason}`);
      } else {
        deferred.push(name);
        for (const g of gone) held.add(`${g.podRef}|${g.ip}`); // not removed: its reservation stays too
      }
    } else {
      for (const g of gone) held.add(`${g.podRef}|${g.ip}`);
    }
    pools.push({ name, range, used });
    const status = desiredStatus(range, used, obj(item)['status'], new Date());
    if (status !== undefined && options.leading()) {
      const problem = await writeStatus(api, name, status);
      if (problem !== undefined) options.log(problem);
    }
  }
  const reservationsDeleted = options.leading() ? await cleanReservations(api, reservations, pods, held, listedAt, options) : [];
  return { pools, released, reservationsDeleted, deferred, pods: pods.size };
}

async function cleanReservations(
  api: ApiClient,
  reservations: readonly unknown[],
  pods: ReadonlyMap<string, PodView>,
  held: ReadonlySet<string>,
  listedAt: number,
  options: PassOptions,
): Promise<string[]> {
  const deleted: string[] = [];
  for (const item of reservations) {
    const meta = obj(obj(item)['metadata']);
    const name = String(meta['name']);
    const podRef = String(obj(obj(item)['spec'])['podref'] ?? '');
    const created = Date.parse(String(meta['creationTimestamp'] ?? '')) || listedAt;
    if (created > listedAt - options.reservationGraceMs) continue;
    const parsed = parseReservationName(name);
    const podGone = !pods.has(podRef);
    if (parsed === undefined) continue; // not a name we write: not ours to judge
    const notHeld = !held.has(`${podRef}|${formatIP(parsed.ip)}`);
    if (!(podGone || (notHeld && !parsed.ambiguous))) continue;
    if (!options.leading()) break;
    const res = await api.send({
      method: 'DELETE',
      path: objectPath(api.namespace, 'overlappingrangeipreservations', name),
      body: { preconditions: { uid: meta['uid'], resourceVersion: meta['resourceVersion'] } },
    });
    if (res.status === 200 || res.status === 202) {
      deleted.push(name);
      options.log(`deleted OverlappingRangeIPReservation ${name} of ${podRef}: ${podGone ? 'pod gone' : 'address not held by the pod'}`);
    } else if (res.status !== 404 && res.status !== 409) {
      options.log(`cannot delete OverlappingRangeIPReservation ${name}: ${statusText(res)}`);
    }
  }
  return deleted;
}
