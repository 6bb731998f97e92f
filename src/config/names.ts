// Kubernetes object names shared with Whereabouts (DESIGN §4): an IPPool per range or node slice, an
// OverlappingRangeIPReservation per address. A cluster switching binaries must find the same objects, so these
// follow Whereabouts' normalizeRange / IPPoolName / NormalizeIP byte for byte.
import { formatIP, parseIP, type IPAddress } from '../ip/address.ts';
import type { Cidr } from '../ip/cidr.ts';
import { networkOf } from '../ip/cidr.ts';

/**
 * The network name of AddressPools' own IPPools (`hereabouts-claims.<scope>.…`) and of their reservations
 * (`hereabouts-claims-<ip>`), DESIGN §12: no pod network may use it.
 */
export const CLAIMS_NETWORK = 'hereabouts-claims';

/** The name is the claims network's, or one of its IPPools' network names (`hereabouts-claims.…`). */
export function isClaimsName(name: string): boolean {
  return name === CLAIMS_NETWORK || name.startsWith(`${CLAIMS_NETWORK}.`);
}

/** The network_name a pool's reservations carry: an AddressPool's own IPPool's are all the claims network's. */
export function reservationNetworkFor(network: string): string {
  return isClaimsName(network) ? CLAIMS_NETWORK : network;
}

export interface PoolNameOptions {
  /** `network_name`; "" or absent means the unnamed network (no prefix). */
  readonly networkName?: string;
  /** Node-slice mode: the node owning the slice; the range is then the slice's CIDR. */
  readonly node?: string;
}

/**
 * `[<network_name>-][<node>-]<range>` with `:` and `/` replaced by `-`: "10.0.0.0/24" -> "10.0.0.0-24",
 * "fd00::/64" -> "fd00---64", node slice "10.0.0.16/28" on node1 of net "a" -> "a-node1-10.0.0.16-28".
 */
export function poolName(range: Cidr, options: PoolNameOptions = {}): string {
  // Whereabouts names the pool after net.IPNet.String(): the masked network address.
  const text = `${goIPString({ family: range.family, value: networkOf(range) })}/${range.prefix}`;
  const parts = [nonEmpty(options.networkName), nonEmpty(options.node), normalize(text).replaceAll('/', '-')];
  return parts.filter((p) => p !== undefined).join('-');
}

/** `[<network_name>-]<canonical IP>` with `:` -> `-`: "fd00::5" -> "fd00--5", "fd00::" -> "fd00--0". */
export function reservationName(ip: IPAddress, networkName?: string): string {
  const normalized = normalize(goIPString(ip));
  const prefix = nonEmpty(networkName);
  return prefix === undefined ? normalized : `${prefix}-${normalized}`;
}

export interface ParsedReservationName {
  readonly ip: IPAddress;
  /** The `network_name` prefix; absent for the unnamed network. */
  readonly networkName?: string;
  /** True when another (prefix, address) split of the name was also valid and no known network name decided. */
  readonly ambiguous: boolean;
}

/**
 * Inverse of reservationName. An IPv6 name can split two ways when the network name ends in hex-looking
 * segments ("n-a-1--5" is n + a:1::5 or n-a + 1::5), so callers that know the network names pass them; otherwise
 * the unprefixed reading wins, then the one with the longest prefix (network names are words, addresses rarely
 * start with one). Returns undefined when no split yields a canonically written address.
 */
export function parseReservationName(
  name: string,
  options: { readonly networkNames?: Iterable<string> } = {},
): ParsedReservationName | undefined {
  const candidates: Array<{ ip: IPAddress; networkName?: string }> = [];
  const whole = parseNormalizedIP(name);
  if (whole !== undefined) candidates.push({ ip: whole });
  for (let i = name.indexOf('-'); i > 0; i = name.indexOf('-', i + 1)) {
    const ip = parseNormalizedIP(name.slice(i + 1));
    if (ip !== undefined) candidates.push({ ip, networkName: name.slice(0, i) });
  }
  if (candidates.length === 0) return undefined;
  const known = new Set(options.networkNames ?? []);
  const byKnown = candidates.filter((c) => c.networkName !== undefined && known.has(c.networkName));
  const pool = byKnown.length > 0 ? byKnown : candidates;
  // Unprefixed first, else the longest prefix (candidates are in ascending prefix length after the first).
  const chosen = pool[0]?.networkName === undefined ? pool[0] : pool[pool.length - 1];
  if (chosen === undefined) return undefined;
  const ambiguous = byKnown.length !== 1 && candidates.length > 1;
  return chosen.networkName === undefined
    ? { ip: chosen.ip, ambiguous }
    : { ip: chosen.ip, networkName: chosen.networkName, ambiguous };
}

/** Kubernetes' rule for most object names (IsDNS1123Subdomain): lowercase RFC 1123 labels joined by '.', at most 253. */
export const MAX_OBJECT_NAME = 253;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isDnsSubdomain(name: string): boolean {
  return name.length <= MAX_OBJECT_NAME && DNS_SUBDOMAIN.test(name);
}

function parseNormalizedIP(text: string): IPAddress | undefined {
  if (text === '') return undefined;
  const candidate = text.includes('.') && !text.includes('-') ? text : text.replaceAll('-', ':');
  let ip: IPAddress;
  try {
    ip = parseIP(candidate);
  } catch (err) {
    if (err instanceof TypeError) return undefined;
    throw err;
  }
  // Only the canonical spelling is a name Whereabouts or we would have written.
  return normalize(goIPString(ip)) === text ? ip : undefined;
}

function normalize(text: string): string {
  // A name may not end in '-': Whereabouts appends a 0 to a trailing ':' ("fd00::" -> "fd00::0").
  return (text.endsWith(':') ? `${text}0` : text).replaceAll(':', '-');
}

/** Go's net.IP.String(): RFC 5952 text, except IPv4-mapped IPv6 addresses print as dotted quads. */
function goIPString(ip: IPAddress): string {
  if (ip.family === 6 && ip.value >> 32n === 0xffffn) {
    return formatIP({ family: 4, value: ip.value & 0xffffffffn });
  }
  return formatIP(ip);
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text === '' ? undefined : text;
}
