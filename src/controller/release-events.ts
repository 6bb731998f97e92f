// One Normal event per IPPool and pass saying which orphaned allocations were released and why (a pass that
// releases a thousand addresses makes ten events, not a thousand).
import { API_VERSION } from '../store/kubernetes/resources.ts';
import type { EventRecorder } from './events.ts';
import type { Released } from './pool-release.ts';
import type { PoolView } from './pool-view.ts';

const SHOWN = 5;

export async function reportReleases(released: readonly Released[], pools: ReadonlyMap<string, PoolView>, events: EventRecorder, namespace: string): Promise<void> {
  const byPool = new Map<string, Released[]>();
  for (const r of released) {
    const list = byPool.get(r.pool) ?? [];
    if (list.length === 0) byPool.set(r.pool, list);
    list.push(r);
  }
  for (const [pool, list] of byPool) {
    const shown = list.slice(0, SHOWN).map((r) => `${r.ip} of ${r.podRef} (${r.reason})`).join(', ');
    const more = list.length > SHOWN ? ` and ${list.length - SHOWN} more` : '';
    const uid = pools.get(`${namespace}/${pool}`)?.uid ?? '';
    await events.emit({ apiVersion: API_VERSION, kind: 'IPPool', namespace, name: pool, uid }, 'Normal', 'OrphansReleased', `released ${list.length} orphaned allocation(s): ${shown}${more}`);
  }
}
