// A Warning Event when a pool's range runs out, on the IPPool and on each NetworkAttachmentDefinition whose network
// draws from it (where the people who create pods on that network look). Sent when the controller's status write
// turns the Exhausted condition True, so once per transition: the condition on the object is the memory, across
// passes, restarts and leader changes.
import { contains, formatCidr, lastOf, networkOf, type Cidr } from '../../ip/cidr.ts';
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { PoolView } from './view.ts';
import type { NadView } from '../runtime/views.ts';

export const EXHAUSTED_REASON = 'PoolExhausted';

/** Whether status.conditions (as last seen) says Exhausted=True. */
export function wasExhausted(conditions: readonly unknown[]): boolean {
  return conditions.some(
    (c) =>
      typeof c === 'object' &&
      c !== null &&
      'type' in c &&
      'status' in c &&
      c.type === 'Exhausted' &&
      c.status === 'True',
  );
}

/** The NADs that use the pool: by its name (a range pool) or as a slice of their node-slice range. */
export function nadsOfPool(pool: PoolView, nads: Iterable<NadView>): NadView[] {
  const range = pool.range;
  return [...nads].filter((nad) => {
    if (nad.pools.includes(pool.name)) return true;
    const slice = nad.slice;
    if (slice === undefined || range === undefined || !within(range, slice.range)) return false;
    return !slice.networkNamed || pool.name.startsWith(`${slice.network}-`);
  });
}

export async function reportExhausted(
  pool: PoolView,
  options: { nads: Iterable<NadView>; events: EventRecorder; namespace: string },
): Promise<void> {
  const range = pool.range === undefined ? '' : ` (${formatCidr(pool.range)})`;
  const message = `every one of the ${pool.capacity} addresses of IPPool ${pool.name}${range} is allocated: new pods on its network fail with CNI error 100 until one is released`;
  await options.events.emit(
    { apiVersion: API_VERSION, kind: 'IPPool', namespace: options.namespace, name: pool.name, uid: pool.uid },
    'Warning',
    EXHAUSTED_REASON,
    message,
    { transition: true },
  );
  for (const nad of nadsOfPool(pool, options.nads)) {
    const object = {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      namespace: nad.namespace,
      name: nad.name,
      uid: nad.uid,
    };
    await options.events.emit(object, 'Warning', EXHAUSTED_REASON, message, { transition: true });
  }
}

function within(inner: Cidr, outer: Cidr): boolean {
  return (
    inner.family === outer.family &&
    inner.prefix >= outer.prefix &&
    contains(outer, { family: inner.family, value: networkOf(inner) }) &&
    contains(outer, { family: inner.family, value: lastOf(inner) })
  );
}
