// The pools an attachment draws from: one per configured range (`range` first, then `ipRanges`), named as
// Whereabouts names its IPPools so both stores find the same objects.
import type { NetworkConfig } from '../config/types.ts';
import { ipEquals, type IPAddress } from '../ip/address.ts';
import { poolName } from '../store/names.ts';
import type { PoolRef } from '../store/store.ts';

export function poolRefs(config: NetworkConfig): PoolRef[] {
  const networkName = config.ipam.networkName;
  const networkNamed = networkName !== undefined && networkName !== '';
  return config.ipam.ranges.map((range) => ({
    name: poolName(range.cidr, networkNamed ? { networkName } : {}),
    network: networkNamed ? networkName : config.name,
    networkNamed,
    range,
  }));
}

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
