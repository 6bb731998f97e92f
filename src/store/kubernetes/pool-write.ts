// The conditional write of an IPPool, one attempt's (pool-commit.ts): its creation, or a patch that carries the
// resourceVersion it was planned on.
import type { Allocations, PoolChange, PoolRef } from '../store.ts';
import type { CommitContext } from './commit.ts';
import { CONFLICT } from '../../kube/retry.ts';
import { allocationsPatch, claimPatch, decodePoolObject, newPoolObject, type PoolState } from './pool-object.ts';
import { createObject, jsonPatch, mergePatch } from './resources.ts';

/** A change that only claims one offset. */
export function isLoneClaim(change: PoolChange): boolean {
  return (
    change.claim !== undefined &&
    (change.moreClaims ?? []).length === 0 &&
    (change.release ?? []).length === 0 &&
    (change.update ?? []).length === 0
  );
}

/**
 * Creates the pool (first write), or patches it conditional on the resourceVersion read: a lone claim as a JSON
 * patch, anything else as a merge patch; CONFLICT when someone else wrote first (or the JSON patch did not apply).
 */
export async function writePool(
  ctx: CommitContext,
  pool: PoolRef,
  state: PoolState,
  next: Allocations,
  options: { unretire: boolean; lone?: NonNullable<PoolChange['claim']> },
): Promise<PoolState | typeof CONFLICT> {
  const warn = (msg: string) => ctx.log.warning(msg);
  if (state.resourceVersion === undefined) {
    const created = await createObject(ctx.api, 'ippools', newPoolObject(pool, ctx.api.namespace, next));
    if (created.kind === 'exists') return CONFLICT;
    ctx.log.debug(`IPPool ${pool.name}: created`);
    return decodePoolObject(created.object, pool, warn);
  }
  if (options.lone !== undefined) {
    const { address, record } = options.lone;
    const result = await jsonPatch(
      ctx.api,
      'ippools',
      pool.name,
      claimPatch(pool.range.cidr, state.resourceVersion, address, record),
    );
    if (result.kind !== 'patched') return CONFLICT;
    return decodePoolObject(result.object, pool, warn);
  }
  const patch = allocationsPatch(pool.range.cidr, state.allocations, next, state.resourceVersion, options);
  const result = await mergePatch(ctx.api, 'ippools', pool.name, patch);
  // Gone: deleted since we read it; the re-read finds it missing and the next write creates it again.
  if (result.kind !== 'patched') return CONFLICT;
  return decodePoolObject(result.object, pool, warn);
}
