// One event per IPPool and pass saying which orphaned allocations were released and why (a pass that releases a
// thousand addresses makes ten events, not a thousand), and one Warning for the reservations it had to re-create.
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Released } from './pool-release.ts';
import type { PoolView } from '../pools/view.ts';
import type { MissingReservation } from '../reservations/repair.ts';

const SHOWN = 5;

export async function reportReleases(
  released: readonly Released[],
  pools: ReadonlyMap<string, PoolView>,
  events: EventRecorder,
  namespace: string,
): Promise<void> {
  const byPool = new Map<string, Released[]>();
  for (const r of released) {
    const list = byPool.get(r.pool) ?? [];
    if (list.length === 0) byPool.set(r.pool, list);
    list.push(r);
  }
  for (const [pool, list] of byPool) {
    const shown = list
      .slice(0, SHOWN)
      .map((r) => `${r.ip} of ${r.podRef} (${r.reason})`)
      .join(', ');
    const more = list.length > SHOWN ? ` and ${list.length - SHOWN} more` : '';
    const uid = pools.get(`${namespace}/${pool}`)?.uid ?? '';
    await events.emit(
      { apiVersion: API_VERSION, kind: 'IPPool', namespace, name: pool, uid },
      'Normal',
      'OrphansReleased',
      `released ${list.length} orphaned allocation(s): ${shown}${more}`,
    );
  }
}

export async function reportRecreated(
  recreated: readonly MissingReservation[],
  pools: ReadonlyMap<string, PoolView>,
  events: EventRecorder,
  namespace: string,
): Promise<void> {
  const byPool = new Map<string, MissingReservation[]>();
  for (const r of recreated) byPool.set(r.pool, [...(byPool.get(r.pool) ?? []), r]);
  for (const [pool, list] of byPool) {
    const shown = list
      .slice(0, SHOWN)
      .map((r) => `${r.name} (${r.record.podRef})`)
      .join(', ');
    const more = list.length > SHOWN ? ` and ${list.length - SHOWN} more` : '';
    const uid = pools.get(`${namespace}/${pool}`)?.uid ?? '';
    const message = `re-created ${list.length} missing OverlappingRangeIPReservation(s) of addresses this pool holds: ${shown}${more}`;
    await events.emit(
      { apiVersion: API_VERSION, kind: 'IPPool', namespace, name: pool, uid },
      'Warning',
      'ReservationRecreated',
      message,
    );
  }
}
