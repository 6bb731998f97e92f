// Releasing orphaned allocations from one IPPool: read the pool, keep of the candidates only those still holding
// the same record and still orphaned, and PUT the pool back conditional on the resourceVersion read. A 409 (a
// node allocated or released meanwhile) reads again and decides again; an allocation that appeared in between
// was never a candidate, so it is never removed in this pass.
import { formatIP } from '../ip/address.ts';
import { formatCidr, networkOf } from '../ip/cidr.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { ApiStatusError } from '../store/kubernetes/errors.ts';
import { decodeAllocations, isObject } from '../store/kubernetes/pool-object.ts';
import { getObject, objectPath } from '../store/kubernetes/resources.ts';
import type { AllocationRecord } from '../store/store.ts';
import type { Log } from './log.ts';
import type { OrphanReason } from './orphans.ts';
import { cidrOrUndefined, type PoolView } from './pool-view.ts';

export interface Candidate {
  readonly address: bigint;
  readonly record: AllocationRecord;
}

export interface Released {
  readonly pool: string;
  readonly ip: string;
  readonly podRef: string;
  readonly reason: OrphanReason;
}

export interface ReleaseOptions {
  /** Checked before every write: a replica that lost the lease stops at once. */
  readonly leading: () => boolean;
  readonly log: Log;
  readonly attempts?: number;
}

export type Judge = (record: AllocationRecord, ip: string) => OrphanReason | undefined;

const sameRecord = (a: AllocationRecord, b: AllocationRecord): boolean =>
  a.containerId === b.containerId && a.podRef === b.podRef && a.ifname === b.ifname && (a.podUid ?? '') === (b.podUid ?? '');

/** The allocations released (empty when none was still an orphan, or the pool kept changing). */
export async function releaseFromPool(api: ApiClient, pool: PoolView, candidates: readonly Candidate[], judge: Judge, options: ReleaseOptions): Promise<Released[]> {
  if (pool.range === undefined) return [];
  const expected = formatCidr(pool.range);
  for (let attempt = 1; attempt <= (options.attempts ?? 5); attempt++) {
    if (!options.leading()) return [];
    const object = await getObject(api, 'ippools', pool.name);
    if (!isObject(object) || !isObject(object['spec']) || !isObject(object['metadata'])) return [];
    const spec = object['spec'];
    const range = cidrOrUndefined(spec['range']);
    if (range === undefined || formatCidr(range) !== expected) {
      options.log.warning(`IPPool ${pool.name}: spec.range changed to ${JSON.stringify(spec['range'])}; nothing released`);
      return [];
    }
    const raw = isObject(spec['allocations']) ? { ...spec['allocations'] } : {};
    const fresh = decodeAllocations(raw, range, { where: `IPPool ${pool.name}`, warn: () => undefined, strict: false });
    const released: Released[] = [];
    for (const candidate of candidates) {
      const now = fresh.get(candidate.address);
      if (now === undefined || !sameRecord(now, candidate.record)) continue; // released or re-allocated meanwhile
      const ip = formatIP({ family: range.family, value: candidate.address });
      const reason = judge(now, ip);
      if (reason === undefined) continue;
      delete raw[String(candidate.address - networkOf(range))];
      released.push({ pool: pool.name, ip, podRef: now.podRef, reason });
    }
    if (released.length === 0) return [];
    if (!options.leading()) return [];
    const body = { ...object, spec: { ...spec, allocations: raw } };
    const res = await api.send({ method: 'PUT', path: objectPath(api.namespace, 'ippools', pool.name), body });
    if (res.status === 200) return released;
    if (res.status === 404) return [];
    if (res.status !== 409) throw new ApiStatusError(`update ippools/${pool.name}`, res);
    options.log.debug(`IPPool ${pool.name} changed while releasing (attempt ${attempt}); reading it again`);
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 80 * attempt));
  }
  options.log.info(`IPPool ${pool.name} kept changing; its orphans wait for the next pass`);
  return [];
}
