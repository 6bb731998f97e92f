// `prevResult` (the ADD result a runtime hands back on CHECK, and may on DEL), read in any supported spec
// version. Only the addresses matter to an IPAM plugin; routes and DNS may have been changed by later plugins
// in the chain, which the spec allows, so they are not read. prevResult is part of the network configuration:
// a malformed one is a config error (code 7) naming the field.
import { parseIP, type IPAddress } from '../ip/address.ts';
import { parseCidr, type Cidr } from '../ip/cidr.ts';
import { configError } from '../errors.ts';
import { describeValue, quote } from '../log/quote.ts';
import { compareVersions, isSupportedVersion, type CniVersion } from './version.ts';
import { isRecord } from '../record.ts';

export interface PrevResultIP {
  /** Address with its prefix length, host bits kept. */
  readonly address: Cidr;
  readonly gateway?: IPAddress;
  /** Index into the result's `interfaces`, when the interface plugin set it. */
  readonly interface?: number;
}

export interface PrevResult {
  /** The result's own cniVersion, or the request's when the result carries none. */
  readonly cniVersion: CniVersion;
  readonly ips: readonly PrevResultIP[];
}

export function parsePrevResult(prev: unknown, cniVersion: CniVersion): PrevResult {
  if (prev === undefined || prev === null) throw configError('prevResult is missing');
  if (!isRecord(prev)) throw configError(`prevResult must be an object, got ${describeValue(prev)}`);

  const own = prev['cniVersion'];
  if (own !== undefined && !isSupportedVersion(own)) {
    throw configError(`prevResult.cniVersion ${describeValue(own)} is not a supported version`);
  }
  const version = own ?? cniVersion;
  const ipsValue = prev['ips'];
  if (ipsValue === undefined) return { cniVersion: version, ips: [] };
  if (!Array.isArray(ipsValue)) throw configError(`prevResult.ips must be a list, got ${describeValue(ipsValue)}`);
  const hasVersionField = compareVersions(version, '1.0.0') < 0;
  return {
    cniVersion: version,
    ips: ipsValue.map((ip, i) => parseIPConfig(ip, `prevResult.ips[${i}]`, hasVersionField)),
  };
}

function parseIPConfig(value: unknown, key: string, hasVersionField: boolean): PrevResultIP {
  if (!isRecord(value)) throw configError(`${key} must be an object, got ${describeValue(value)}`);

  const addressText = value['address'];
  if (typeof addressText !== 'string') {
    throw configError(`${key}.address must be a CIDR string, got ${describeValue(addressText)}`);
  }
  let address: Cidr;
  try {
    address = parseCidr(addressText);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    throw configError(`${key}.address ${quote(addressText)} is not an address with a prefix length`);
  }

  // 0.x results say the family twice; a contradiction means the result was not written by a CNI library.
  const family = value['version'];
  if (hasVersionField && family !== undefined && family !== String(address.family)) {
    throw configError(`${key}.version ${describeValue(family)} does not match address ${quote(addressText)}`);
  }

  let gateway: IPAddress | undefined;
  const gatewayText = value['gateway'];
  if (gatewayText !== undefined) {
    if (typeof gatewayText !== 'string') {
      throw configError(`${key}.gateway must be an IP address string, got ${describeValue(gatewayText)}`);
    }
    try {
      gateway = parseIP(gatewayText);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      throw configError(`${key}.gateway ${quote(gatewayText)} is not an IP address`);
    }
  }

  const indexValue = value['interface'];
  if (indexValue !== undefined && !isIndex(indexValue)) {
    throw configError(`${key}.interface must be a non-negative integer, got ${describeValue(indexValue)}`);
  }

  return {
    address,
    ...(gateway === undefined ? {} : { gateway }),
    ...(indexValue === undefined ? {} : { interface: indexValue }),
  };
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
