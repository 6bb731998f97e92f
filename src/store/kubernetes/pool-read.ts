// The read of the write path (commit.ts, pool-commit.ts), and of CHECK and STATUS.
import type { ApiClient } from '../../kube/api.ts';
import type { PoolRef } from '../store.ts';
import type { CommitLog } from './commit.ts';
import { getObject, type GetOptions } from './objects.ts';
import { decodePoolObject, type PoolState } from './pool-object.ts';

/** The pool as the API has it now; a missing pool is empty and gets created by the first write. */
export async function fetchPool(
  ctx: { api: ApiClient; log: CommitLog },
  pool: PoolRef,
  options: GetOptions = {},
): Promise<PoolState> {
  const object = await getObject(ctx.api, 'ippools', pool.name, options);
  if (object === undefined) return { allocations: new Map(), fresh: true };
  return decodePoolObject(object, pool, (msg) => ctx.log.warning(msg));
}
