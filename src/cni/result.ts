// The IPAM result and its JSON in each supported spec version. IPAM plugins return no `interfaces` and no
// `ips[].interface` (the calling plugin fills those in). 0.3.x and 0.4.0 carry `ips[].version`; 1.0.0 dropped
// it and 1.1.0 kept 1.0.0's shape. Empty `routes` and `dns` are omitted, as libcni does.
import { formatIP, type IPAddress } from '../ip/address.ts';
import { formatCidr, type Cidr } from '../ip/cidr.ts';
import type { DnsConfig, RouteConfig } from '../config/types.ts';
import { compareVersions, type CniVersion } from './version.ts';

export interface IpamResultIP {
  /** The address with its prefix length, host bits kept ("10.0.0.5/24"). */
  readonly address: Cidr;
  readonly gateway?: IPAddress;
}

export interface IpamResult {
  readonly ips: readonly IpamResultIP[];
  readonly routes: readonly RouteConfig[];
  readonly dns?: DnsConfig;
}

export interface IpJson {
  readonly version?: '4' | '6';
  readonly address: string;
  readonly gateway?: string;
}

export interface RouteJson {
  readonly dst: string;
  readonly gw?: string;
}

export interface DnsJson {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** Keys in the order they are printed: cniVersion first. */
export interface ResultJson {
  readonly cniVersion: CniVersion;
  readonly ips: readonly IpJson[];
  readonly routes?: readonly RouteJson[];
  readonly dns?: DnsJson;
}

export function renderResult(result: IpamResult, cniVersion: CniVersion): ResultJson {
  const withVersion = compareVersions(cniVersion, '1.0.0') < 0;
  const ips = result.ips.map((ip): IpJson => ({
    ...(withVersion ? { version: ip.address.family === 4 ? '4' : '6' } : {}),
    address: formatCidr(ip.address),
    ...(ip.gateway === undefined ? {} : { gateway: formatIP(ip.gateway) }),
  }));
  const routes = result.routes.map((r): RouteJson => ({
    dst: formatCidr(r.dst),
    ...(r.gw === undefined ? {} : { gw: formatIP(r.gw) }),
  }));
  const dns = result.dns === undefined ? undefined : renderDns(result.dns);
  return {
    cniVersion,
    ips,
    ...(routes.length > 0 ? { routes } : {}),
    ...(dns === undefined ? {} : { dns }),
  };
}

// Each DNS key is omitted when empty; the whole object when all are.
function renderDns(dns: DnsConfig): DnsJson | undefined {
  const out: DnsJson = {
    ...(dns.nameservers !== undefined && dns.nameservers.length > 0 ? { nameservers: [...dns.nameservers] } : {}),
    ...(dns.domain !== undefined && dns.domain !== '' ? { domain: dns.domain } : {}),
    ...(dns.search !== undefined && dns.search.length > 0 ? { search: [...dns.search] } : {}),
    ...(dns.options !== undefined && dns.options.length > 0 ? { options: [...dns.options] } : {}),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}
