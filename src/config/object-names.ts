// The Kubernetes objects a config turns into (IPPools, OverlappingRangeIPReservations, NodeSlicePools) must have
// names the API server accepts: a name it rejects would fail at the first write, as an internal error, after other
// objects were written. So the names are computed here and checked at parse time, as a code-7 error naming the key.
import { configError } from '../errors.ts';
import { describeValue } from '../log/quote.ts';
import { formatCidr } from '../ip/cidr.ts';
import { isDnsSubdomain, poolName, reservationName } from './names.ts';
import type { RangeConfig } from './types.ts';

export interface NamedConfig {
  /** The CNI network name (the NodeSlicePool's name when network_name is unset). */
  readonly name: string;
  readonly networkName?: string;
  readonly ranges: readonly RangeConfig[];
  /** The config key of each range, in the same order ("ipam.range", "ipam.ipRanges[1].range"). */
  readonly rangeKeys: readonly string[];
  readonly reservations: boolean;
  readonly nodeSlices: boolean;
}

const V4_MAPPED = 0xffffn << 32n;
const V4_MAPPED_LAST = V4_MAPPED | 0xffffffffn;
/** IPv6 addresses below ::1:0:0 (::/32, less the IPv4-mapped block) can print as "::..." -> names starting with '-'. */
const LEADING_COLONS_BELOW = 1n << 96n;

export function checkObjectNames(config: NamedConfig): void {
  const { networkName } = config;
  const named = networkName === undefined ? {} : { networkName };
  config.ranges.forEach((range, i) => {
    const key = config.rangeKeys[i] ?? 'ipam.range';
    const pool = poolName(range.cidr, named);
    if (!isDnsSubdomain(pool)) throw nameError(key, range, `IPPool name ${describeValue(pool)}`);
    if (!config.reservations) return;
    for (const value of [range.start, range.end]) {
      const reservation = reservationName({ family: range.cidr.family, value }, networkName);
      if (!isDnsSubdomain(reservation))
        throw nameError(key, range, `OverlappingRangeIPReservation name ${describeValue(reservation)}`);
    }
    if (networkName === undefined && range.cidr.family === 6 && range.start < LEADING_COLONS_BELOW) {
      const mappedOnly = range.start >= V4_MAPPED && range.end <= V4_MAPPED_LAST;
      if (!mappedOnly)
        throw nameError(key, range, 'OverlappingRangeIPReservation names of its addresses below ::1:0:0 ("--…")');
    }
  });
  if (config.nodeSlices) {
    const slicePool = networkName ?? config.name;
    if (!isDnsSubdomain(slicePool)) {
      const key = networkName === undefined ? 'name' : 'ipam.network_name';
      throw configError(
        `${key} ${describeValue(slicePool)} cannot name a NodeSlicePool: Kubernetes accepts lowercase letters, digits, "-" and "." ` +
          '(set ipam.network_name)',
      );
    }
  }
}

function nameError(key: string, range: RangeConfig, what: string) {
  return configError(
    `${key} ${formatCidr(range.cidr)} gives ${what}, which Kubernetes rejects (names must start and end with a lowercase letter or ` +
      'digit, at most 253 characters); set ipam.network_name to prefix the names, or choose another range',
  );
}
