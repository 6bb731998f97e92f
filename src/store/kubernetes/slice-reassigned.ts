// A claim in a retired node-slice pool (docs/safety.md). The controller retires a slice's pool before it lets the
// slice go, so a claim there was planned on a reading of the NodeSlicePool from before the release, whichever
// version or incarnation that was: it is refused, unless the NodeSlicePool as it is now (a quorum read, made after
// the mark was seen) gives the slice to this node again and does not drain it. Then the claim takes the mark off
// in its own write, conditional on the pool version that showed the mark.
import { formatCidr } from '../../ip/cidr.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { PoolRef } from '../store.ts';
import { toStoreError } from './api-errors.ts';
import { slicingOf } from './node-slices.ts';
import { getObject } from './objects.ts';

/** True when the NodeSlicePool, read now, assigns the pool's slice to its node and does not drain it. */
export async function sliceGivenBack(api: ApiClient, pool: PoolRef): Promise<boolean> {
  const node = pool.sliceNode;
  if (node === undefined) return false;
  let object: unknown;
  try {
    object = await getObject(api, 'nodeslicepools', pool.network);
  } catch (err) {
    throw toStoreError(err, `NodeSlicePool ${pool.network}`);
  }
  if (object === undefined) return false;
  const slicing = slicingOf(object, pool.network, node);
  const slice = formatCidr(pool.range.cidr);
  return (
    slicing.slice !== undefined &&
    formatCidr(slicing.slice) === slice &&
    !slicing.draining.some((d) => formatCidr(d) === slice)
  );
}
