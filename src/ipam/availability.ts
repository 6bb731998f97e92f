// STATUS: whether the store can serve an ADD for these pools now (data_dir writable, API reachable and authorised).
// A full range is deliberately not a failure: a runtime that honours STATUS marks the whole node NetworkNotReady,
// which evicts healthy pods. Exhaustion is reported by ADD's own error (code 100) instead.
import type { NetworkConfig } from '../config/types.ts';
import type { Store } from '../store/store.ts';
import { poolsFor, type PoolsOption } from './pools.ts';

export async function checkAvailable(store: Store, config: NetworkConfig, options: PoolsOption = {}): Promise<void> {
  await store.status(poolsFor(config, options));
}
