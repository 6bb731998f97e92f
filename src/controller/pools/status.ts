// IPPool status (our CRD's status subresource; Whereabouts never writes it): capacity, used and free counts and
// an Exhausted condition, for `kubectl get ippools` and alerts. Written only when it changed, conditional on the
// version it describes. Every write bumps the pool's resourceVersion, which costs the next ADD on that pool one
// re-read on its node, so status is written by the periodic pass only (at most once per interval per pool).
import type { Cidr } from '../../ip/cidr.ts';
import type { ApiClient } from '../../kube/api.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import { conditionsMatch, withConditions, type Condition, type StampedCondition } from '../runtime/conditions.ts';
import { wasExhausted } from './exhaustion-events.ts';
import type { Log } from '../../log/json-log.ts';
import { eachLimited } from '../runtime/parallel.ts';
import { poolCapacity, type PoolView } from './view.ts';
import { recordOf } from '../../record.ts';

export interface PoolStatus {
  readonly capacity: string;
  readonly used: number;
  readonly free: string;
  readonly conditions: StampedCondition[];
}

/** The status a pool of `range` with `used` allocations should show; undefined when `current` already shows it. */
export function desiredStatus(range: Cidr, used: number, current: unknown, now: Date): PoolStatus | undefined {
  const capacity = poolCapacity(range);
  const free = capacity > BigInt(used) ? capacity - BigInt(used) : 0n;
  const exhausted: Condition =
    free === 0n
      ? {
          type: 'Exhausted',
          status: 'True',
          reason: 'NoFreeAddress',
          message: `all ${capacity} addresses are allocated`,
        }
      : { type: 'Exhausted', status: 'False', reason: 'AddressesFree', message: '' };
  const seen = recordOf(current);
  const same = seen['capacity'] === String(capacity) && seen['used'] === used && seen['free'] === String(free);
  if (same && conditionsMatch(seen['conditions'], [exhausted])) return undefined;
  return {
    capacity: String(capacity),
    used,
    free: String(free),
    conditions: withConditions(seen['conditions'], [exhausted], now),
  };
}

export interface StatusWriteOptions {
  readonly leading: () => boolean;
  readonly log: Log;
  /** Called after a write that turned Exhausted True (once per transition: the next pass sees it already True). */
  readonly onExhausted?: (view: PoolView) => Promise<void>;
}

/** Writes the status of every pool whose status is not current (four at a time); returns how many were written. */
export async function writePoolStatuses(
  api: ApiClient,
  pools: Iterable<PoolView>,
  options: StatusWriteOptions,
): Promise<number> {
  const stale: Array<{ view: PoolView; status: PoolStatus }> = [];
  for (const view of pools) {
    const status =
      view.range === undefined ? undefined : desiredStatus(view.range, view.allocations.size, view.status, new Date());
    if (status !== undefined) stale.push({ view, status });
  }
  let written = 0;
  await eachLimited(stale, 4, async ({ view, status }) => {
    if (!options.leading() || !(await writeStatus(api, view, status, options.log))) return;
    written++;
    if (options.onExhausted !== undefined && wasExhausted(status.conditions) && !wasExhausted(view.status.conditions))
      await options.onExhausted(view);
  });
  return written;
}

async function writeStatus(api: ApiClient, view: PoolView, status: PoolStatus, log: Log): Promise<boolean> {
  const outcome = await new PoolWriter(api).writePoolStatus(view, { observedGeneration: view.generation, ...status });
  if (typeof outcome === 'object') log.warning(`cannot write the status of IPPool ${view.name}: ${outcome.problem}`);
  return outcome === 'written';
}
