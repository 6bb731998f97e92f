// STATUS: the store can serve an ADD and every range still has a free address.
import { freeCount } from '../allocator/capacity.ts';
import { CniCode, CniError } from '../cni/errors.ts';
import type { NetworkConfig } from '../config/types.ts';
import { formatCidr } from '../ip/cidr.ts';
import type { Store } from '../store/store.ts';
import { poolsFor, type PoolsOption } from './pools.ts';

export async function checkCapacity(store: Store, config: NetworkConfig, options: PoolsOption = {}): Promise<void> {
  const pools = poolsFor(config, options);
  await store.status(pools);
  const exhausted: string[] = [];
  for (const pool of pools) {
    if (freeCount(pool.range, await store.read(pool)) === 0n) {
      exhausted.push(`${formatCidr(pool.range.cidr)} (pool ${pool.name})`);
    }
  }
  if (exhausted.length > 0) {
    throw new CniError(CniCode.PluginNotAvailable, `no free address in range ${exhausted.join(', ')}`);
  }
}
