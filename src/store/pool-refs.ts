// The pools an attachment draws from: one per configured range (`range` first, then `ipRanges`), named as
// Whereabouts names its IPPools so both stores find the same objects. Node-slice mode replaces these with the
// node's slice pools (src/store/kubernetes/node-slices.ts).
import type { NetworkConfig } from '../config/types.ts';
import { poolName } from '../config/names.ts';
import type { PoolRef } from './store.ts';

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
