// What a hereabouts pool kind (AddressPool, GlobalAddressPool) asks for, read and checked without I/O. A pool either
// lists its own addresses (as the Cluster API in-cluster provider's pools: addresses, prefix, gateway, excluded
// addresses) or names a network its pods use (a NetworkAttachmentDefinition and one of its ranges), optionally
// narrowed to some of that range's addresses. Every problem names the field and the value.
import { bitsOf, formatIP, tryParseIP, type Family, type IPAddress } from '../../ip/address.ts';
import { mergeBlocks, type Block } from '../../ip/block.ts';
import { blockOfCidr } from '../../ip/block.ts';
import { masked, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { recordOf } from '../../record.ts';

export interface NadRef {
  readonly namespace: string;
  readonly name: string;
}

interface PoolSpecBase {
  /** The addresses listed (merged blocks); in network mode, a narrowing of the range (absent: the whole range). */
  readonly addresses?: readonly Block[];
  readonly excluded: readonly Block[];
  readonly gateway?: IPAddress;
  /** How long a released address rests before it is handed out again (0: at once). */
  readonly reuseGraceMs: number;
}

export interface OwnAddressesSpec extends PoolSpecBase {
  readonly mode: 'addresses';
  readonly family: Family;
  readonly addresses: readonly Block[];
  readonly prefix: number;
  /** Hand out the subnet's network and broadcast addresses too (the in-cluster provider's key; never the gateway). */
  readonly allocateReserved: boolean;
}

export interface NetworkSpec extends PoolSpecBase {
  readonly mode: 'network';
  /** The families of spec.addresses and spec.excludedAddresses, checked against the network's range. */
  readonly addressFamily?: Family;
  readonly excludedFamily?: Family;
  readonly nad: NadRef;
  /** Which of the NAD's ranges (absent: its first). */
  readonly range?: Cidr;
}

export type AddressPoolSpec = OwnAddressesSpec | NetworkSpec;

/**
 * The pool's spec, or a TypeError naming the field. `namespace` is the pool's (absent: cluster-scoped): a namespaced
 * pool may only name a network of its own namespace, so a tenant's pool cannot draw on another tenant's network.
 */
export function parsePoolSpec(spec: unknown, namespace: string | undefined): AddressPoolSpec {
  const s = recordOf(spec);
  const excluded = blocksOf(s['excludedAddresses'], 'spec.excludedAddresses');
  const gateway = optionalIP(s['gateway'], 'spec.gateway');
  const grace = s['reuseGraceSeconds'];
  if (grace !== undefined && (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0))
    throw new TypeError(`spec.reuseGraceSeconds ${JSON.stringify(grace)} must be a whole number of seconds >= 0`);
  const reuseGraceMs = typeof grace === 'number' ? grace * 1000 : 0;
  const listed = s['addresses'] === undefined ? undefined : blocksOf(s['addresses'], 'spec.addresses');

  if (s['network'] !== undefined) {
    const network = recordOf(s['network']);
    const nad = recordOf(network['nad']);
    const name = nad['name'];
    if (typeof name !== 'string' || name === '')
      throw new TypeError(`spec.network.nad.name ${JSON.stringify(name)} must name a NetworkAttachmentDefinition`);
    const nadNamespace = nad['namespace'] ?? namespace;
    if (typeof nadNamespace !== 'string' || nadNamespace === '')
      throw new TypeError('spec.network.nad.namespace is required in a cluster-scoped pool');
    if (namespace !== undefined && nadNamespace !== namespace)
      throw new TypeError(
        `spec.network.nad.namespace ${JSON.stringify(nadNamespace)}: a pool in namespace ${namespace} may only name a network of its own namespace`,
      );
    let range: Cidr | undefined;
    if (network['range'] !== undefined) range = cidrOf(network['range'], 'spec.network.range');
    if (s['prefix'] !== undefined)
      throw new TypeError('spec.prefix: a pool that names a network takes the prefix of the network range');
    return {
      mode: 'network',
      nad: { namespace: nadNamespace, name },
      ...(range === undefined ? {} : { range }),
      ...(listed === undefined ? {} : { addresses: listed }),
      ...familyField('addressFamily', s['addresses']),
      ...familyField('excludedFamily', s['excludedAddresses']),
      excluded,
      ...(gateway === undefined ? {} : { gateway }),
      reuseGraceMs,
    };
  }

  if (listed === undefined || listed.length === 0)
    throw new TypeError('spec.addresses: a pool needs addresses, or spec.network to draw on a network');
  const family = familyOf(s['addresses'] as unknown[]);
  const prefix = s['prefix'];
  if (typeof prefix !== 'number' || !Number.isInteger(prefix) || prefix < 0 || prefix > bitsOf(family))
    throw new TypeError(`spec.prefix ${JSON.stringify(prefix)} must be a prefix length of 0-${bitsOf(family)}`);
  if (gateway !== undefined && gateway.family !== family)
    throw new TypeError(`spec.gateway ${formatIP(gateway)} is not IPv${family} like spec.addresses`);
  const allocateReserved = s['allocateReservedIPAddresses'] === true;
  return {
    mode: 'addresses',
    family,
    addresses: listed,
    prefix,
    ...(gateway === undefined ? {} : { gateway }),
    excluded,
    allocateReserved,
    reuseGraceMs,
  };
}

/** The subnet an own-addresses pool serves: the gateway's (else its first address's) prefix. */
export function subnetOf(spec: OwnAddressesSpec): Cidr {
  const anchor = spec.gateway?.value ?? spec.addresses[0]?.first ?? 0n;
  return masked({ family: spec.family, address: anchor, prefix: spec.prefix });
}

export function describeBlock(family: Family, block: Block): string {
  return block.first === block.last
    ? formatIP({ family, value: block.first })
    : `${formatIP({ family, value: block.first })}-${formatIP({ family, value: block.last })}`;
}

function blocksOf(value: unknown, field: string): Block[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`${field} must be a list of addresses, ranges and CIDRs`);
  let family: Family | undefined;
  const blocks = value.map((entry: unknown, i) => {
    const parsed = entryOf(entry, `${field}[${i}]`);
    family ??= parsed.family;
    if (parsed.family !== family)
      throw new TypeError(`${field}[${i}] ${JSON.stringify(entry)} mixes IPv4 and IPv6 in one pool`);
    return parsed.block;
  });
  return mergeBlocks(blocks);
}

/** `{ [key]: family }` of a list already checked by blocksOf (empty when the list is). */
function familyField(key: 'addressFamily' | 'excludedFamily', entries: unknown): Partial<Record<typeof key, Family>> {
  return Array.isArray(entries) && entries.length > 0 ? { [key]: familyOf(entries) } : {};
}

function familyOf(entries: readonly unknown[]): Family {
  return entryOf(entries[0], 'spec.addresses[0]').family;
}

/** One entry: "10.0.0.5", "10.0.0.10-10.0.0.20" or "10.0.1.0/28". */
function entryOf(entry: unknown, field: string): { family: Family; block: Block } {
  if (typeof entry !== 'string') throw new TypeError(`${field} ${JSON.stringify(entry)} must be a string`);
  const bad = (why: string): TypeError => new TypeError(`${field} ${JSON.stringify(entry)}: ${why}`);
  if (entry.includes('/')) {
    const cidr = cidrOf(entry, field);
    return { family: cidr.family, block: blockOfCidr(cidr) };
  }
  const dash = entry.indexOf('-');
  if (dash >= 0) {
    const from = tryParseIP(entry.slice(0, dash).trim());
    const to = tryParseIP(entry.slice(dash + 1).trim());
    if (from === undefined || to === undefined) throw bad('not an address range A-B');
    if (from.family !== to.family) throw bad('the two ends are of different families');
    if (to.value < from.value) throw bad('the range ends before it starts');
    return { family: from.family, block: { first: from.value, last: to.value } };
  }
  const ip = tryParseIP(entry);
  if (ip === undefined) throw bad('not an IP address, a range A-B or a CIDR');
  return { family: ip.family, block: { first: ip.value, last: ip.value } };
}

function cidrOf(value: unknown, field: string): Cidr {
  try {
    return parseCidr(value as string);
  } catch (err) {
    throw new TypeError(`${field} ${JSON.stringify(value)}: ${(err as Error).message}`, { cause: err });
  }
}

function optionalIP(value: unknown, field: string): IPAddress | undefined {
  if (value === undefined || value === '') return undefined;
  const ip = typeof value === 'string' ? tryParseIP(value) : undefined;
  if (ip === undefined) throw new TypeError(`${field} ${JSON.stringify(value)} is not an IP address`);
  return ip;
}
