// OverlappingRangeIPReservations: one object per allocated address, named after the address (DESIGN §4), created
// before the pool write so that two overlapping ranges can never both commit the same address.
import type { IPAddress } from '../../ip/address.ts';
import { reservationName } from '../names.ts';
import type { AllocationRecord, PoolRef } from '../store.ts';
import type { ApiClient } from './api.ts';
import { isObject } from './pool-object.ts';
import { API_VERSION, createObject, deleteObject, getObject } from './resources.ts';

const PLURAL = 'overlappingrangeipreservations';

/** created: ours now. adopted: already ours (a crashed earlier attempt of the same pod and interface). taken: not ours. */
export type ReserveOutcome = 'created' | 'adopted' | 'taken';

export function reservationNameOf(pool: PoolRef, ip: IPAddress): string {
  return reservationName(ip, pool.networkNamed ? pool.network : undefined);
}

export async function reserve(api: ApiClient, pool: PoolRef, ip: IPAddress, record: AllocationRecord): Promise<ReserveOutcome> {
  const name = reservationNameOf(pool, ip);
  const spec: Record<string, string> = { podref: record.podRef, ifname: record.ifname, containerid: record.containerId };
  if (record.node !== undefined) spec['node'] = record.node;
  if (record.podUid !== undefined) spec['podUid'] = record.podUid;
  spec['createdAt'] = new Date().toISOString();
  const body = { apiVersion: API_VERSION, kind: 'OverlappingRangeIPReservation', metadata: { name, namespace: api.namespace }, spec };
  const created = await createObject(api, PLURAL, body);
  if (created.kind === 'created') return 'created';
  const existing = await getObject(api, PLURAL, name);
  // Deleted between our create and get: the address is free again, but let the caller's next attempt say so.
  if (existing === undefined) return 'taken';
  return isOwnedBy(existing, record) ? 'adopted' : 'taken';
}

/** Same pod and interface (Whereabouts compares podref only, and older releases wrote no ifname), or same container. */
function isOwnedBy(object: unknown, record: AllocationRecord): boolean {
  const spec = isObject(object) ? object['spec'] : undefined;
  if (!isObject(spec)) return false;
  const { podref, ifname, containerid } = spec;
  const sameIf = ifname === undefined || ifname === '' || ifname === record.ifname;
  if (record.podRef !== '') return podref === record.podRef && sameIf;
  return containerid === record.containerId && sameIf;
}

export async function unreserve(api: ApiClient, pool: PoolRef, ip: IPAddress, options: { timeoutMs?: number } = {}): Promise<void> {
  await deleteObject(api, PLURAL, reservationNameOf(pool, ip), options);
}
