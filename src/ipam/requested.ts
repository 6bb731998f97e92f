// Requested addresses (runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=) are granted exactly or the ADD fails: each
// must fall in exactly one configured range, and a range grants at most one of them.
import type { NetworkConfig } from '../config/types.ts';
import { ErrorKind, HereaboutsError } from '../errors.ts';
import { formatIP, type Family, type IPAddress } from '../ip/address.ts';
import type { Block } from '../ip/block.ts';
import { contains, formatCidr, type Cidr } from '../ip/cidr.ts';
import type { RequestVerdict } from '../allocator/check-requested.ts';
import { describeValue } from '../ip/range.ts';
import type { PoolRef } from '../store/store.ts';
import { describeHolder } from './attachment.ts';
import { isStaticAddress } from './pools.ts';

/** Requested address per pool index. Addresses equal to a static `addresses` entry are served statically. */
export function requestsByPool(config: NetworkConfig, pools: readonly PoolRef[]): Map<number, IPAddress> {
  const out = new Map<number, IPAddress>();
  for (const ip of config.requestedIPs) {
    if (isStaticAddress(config, ip)) continue;
    const matches = pools.flatMap((pool, index) => (contains(pool.range.cidr, ip) ? [index] : []));
    const [index] = matches;
    if (index === undefined) {
      const ranges = pools.map((p) => formatCidr(p.range.cidr)).join(', ') || 'none';
      throw unavailable(ip, `is outside every configured range (${ranges})`);
    }
    if (matches.length > 1) {
      const ranges = matches.map((i) => formatCidr(rangeOf(pools, i))).join(', ');
      throw unavailable(ip, `falls in more than one configured range (${ranges})`);
    }
    const earlier = out.get(index);
    if (earlier !== undefined) {
      const range = formatCidr(rangeOf(pools, index));
      throw unavailable(ip, `falls in range ${range}, which already grants ${formatIP(earlier)}`);
    }
    out.set(index, ip);
  }
  return out;
}

export function refusalReason(pool: PoolRef, verdict: Exclude<RequestVerdict, { ok: true }>): string {
  const family = pool.range.cidr.family;
  const range = formatCidr(pool.range.cidr);
  switch (verdict.reason) {
    case 'outside-range':
      return `is outside ${blockText(family, verdict.span)}, the allocatable part of range ${range}`;
    case 'excluded':
      return `is excluded from range ${range} (${blockText(family, verdict.block)})`;
    case 'gateway':
      return `is the gateway of range ${range}`;
    case 'taken':
      return verdict.holder === undefined
        ? `is already reserved through an overlapping range`
        : `is taken by ${describeHolder(verdict.holder)}`;
  }
}

export function unavailable(ip: IPAddress, reason: string): HereaboutsError {
  return new HereaboutsError(ErrorKind.RequestedUnavailable, `requested address ${formatIP(ip)} ${reason}`);
}

function blockText(family: Family, block: Block): string {
  return `${describeValue(family, block.first)}-${describeValue(family, block.last)}`;
}

function rangeOf(pools: readonly PoolRef[], index: number): Cidr {
  const pool = pools[index];
  if (pool === undefined) throw new RangeError(`no pool at index ${index}`);
  return pool.range.cidr;
}
