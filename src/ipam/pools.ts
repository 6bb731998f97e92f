// The pools an attachment draws from; one per configured range unless the caller passes the store's own list.
import type { NetworkConfig } from '../config/types.ts';
import { ipEquals, type IPAddress } from '../ip/address.ts';
import { poolRefs } from '../store/pool-refs.ts';
import type { PoolRef } from '../store/store.ts';

export { poolRefs };

/** Every IPAM entry point accepts the pools explicitly (node-slice mode substitutes the node's slices). */
export interface PoolsOption {
  readonly pools?: readonly PoolRef[];
}

/** A static `addresses` entry: served as configured, never allocated. */
export function isStaticAddress(config: NetworkConfig, ip: IPAddress): boolean {
  return config.ipam.addresses.some((s) => ipEquals({ family: s.address.family, value: s.address.address }, ip));
}

export function poolsFor(config: NetworkConfig, options: PoolsOption): readonly PoolRef[] {
  return options.pools ?? poolRefs(config);
}
