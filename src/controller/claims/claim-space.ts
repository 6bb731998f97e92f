// Where a pool's claims are recorded and what they may take, from its spec (and, for a pool that names a network,
// the network's IPAM config as its pods' plugin reads it). Pure.
//
// A pool that lists its own addresses is backed by an IPPool of its own (named after the pool, so two pools never
// share one), whose reservations carry the network name `hereabouts-claims`: pools whose addresses overlap then
// never hand out one address twice. A pool that names a network records its claims in the very IPPool (and
// reservations) the network's pods use, through the same write path, so a machine and a pod can never hold one
// address.
import type { NetworkConfig, RangeConfig } from '../../config/types.ts';
import { CLAIMS_NETWORK, poolName } from '../../config/names.ts';
import { formatIP, type Family, type IPAddress } from '../../ip/address.ts';
import { intersectBlocks, mergeBlocks, type Block } from '../../ip/block.ts';
import { formatCidr, lastOf, networkOf, type Cidr } from '../../ip/cidr.ts';
import { poolRefs } from '../../store/pool-refs.ts';
import type { PoolRef } from '../../store/store.ts';
import { describeBlock, subnetOf, type AddressPoolSpec, type OwnAddressesSpec } from './pool-spec.ts';

export interface PoolIdentity {
  readonly kind: string;
  /** Absent for a cluster-scoped pool. */
  readonly namespace?: string;
  readonly name: string;
}

export interface ClaimSpace {
  /** The IPPool the claims are recorded in. */
  readonly pool: PoolRef;
  /** What an address claim may take: the pool's addresses as a range with holes. */
  readonly range: RangeConfig;
  /** The same addresses as blocks (what a prefix claim may take, what counts as in range). */
  readonly blocks: readonly Block[];
  readonly family: Family;
  /** The prefix length an IPAddress is given. */
  readonly prefix: number;
  readonly gateway?: IPAddress;
  /** Reserve each claimed address cluster-wide (OverlappingRangeIPReservation). */
  readonly reservations: boolean;
  /** Prefix claims are served only where the controller is the pool's only writer (own addresses). */
  readonly prefixes: boolean;
  readonly reuseGraceMs: number;
  /** How many addresses the pool has. */
  readonly total: bigint;
}

/**
 * The claims' IPPool of an own-addresses pool: its name carries the pool's scope, namespace and name, the name's
 * length first, so that no pool's name and subnet can spell another's (pool "x" on 2001:db8::/64 and pool "x-2001"
 * on db8::/64 would otherwise both be "…x-2001-db8---64").
 */
export function ownPoolName(identity: PoolIdentity, subnet: Cidr): string {
  const scope = identity.namespace === undefined ? 'global' : `ns.${identity.namespace}`;
  return poolName(subnet, { networkName: `${CLAIMS_NETWORK}.${scope}.${identity.name.length}.${identity.name}` });
}

/**
 * The claim space of a pool, or a TypeError saying why it cannot serve. `networks`: the IPAM sections of the
 * network's NAD (networkConfigsOf), for a pool that names one; undefined when the NAD does not exist.
 */
export function claimSpaceOf(
  identity: PoolIdentity,
  spec: AddressPoolSpec,
  networks?: readonly NetworkConfig[],
): ClaimSpace {
  if (spec.mode === 'addresses') return ownSpace(identity, spec);
  const nadName = `NetworkAttachmentDefinition ${spec.nad.namespace}/${spec.nad.name}`;
  if (networks === undefined) throw new TypeError(`${nadName} not found`);
  const candidates = networks.flatMap((config) => poolRefs(config).map((ref) => ({ config, ref })));
  if (candidates.length === 0) throw new TypeError(`${nadName} has no hereabouts or whereabouts IPAM range`);
  const chosen =
    spec.range === undefined
      ? candidates[0]
      : candidates.find(
          (c) =>
            c.ref.range.cidr.family === spec.range?.family &&
            c.ref.range.cidr.prefix === spec.range.prefix &&
            c.ref.range.cidr.address === networkOf(spec.range),
        );
  if (chosen === undefined)
    throw new TypeError(`spec.network.range ${formatCidr(spec.range as Cidr)} is not a range of ${nadName}`);
  if (chosen.config.ipam.nodeSliceSize !== undefined)
    throw new TypeError(
      `${nadName} uses node_slice_size: claims cannot yet draw on a node-slice network (its space belongs to the nodes' slices)`,
    );
  const range = chosen.ref.range;
  const family = range.cidr.family;
  const ofFamily = (field: string, found: Family | undefined): void => {
    if (found !== undefined && found !== family)
      throw new TypeError(`${field} is IPv${found}, but the network's range ${formatCidr(range.cidr)} is IPv${family}`);
  };
  ofFamily(`spec.gateway ${spec.gateway === undefined ? '' : formatIP(spec.gateway)}`, spec.gateway?.family);
  ofFamily('spec.addresses', spec.addressFamily);
  ofFamily('spec.excludedAddresses', spec.excludedFamily);
  let blocks = subtract([{ first: range.start, last: range.end }], range.exclude);
  if (range.gateway !== undefined) blocks = subtract(blocks, [single(range.gateway.value)]);
  if (spec.addresses !== undefined) {
    for (const listed of spec.addresses)
      if (listed.first < range.start || listed.last > range.end)
        throw new TypeError(
          `spec.addresses ${describeBlock(family, listed)} is outside the network's range ${formatIP({ family, value: range.start })}-${formatIP({ family, value: range.end })}`,
        );
    blocks = intersect(blocks, spec.addresses);
  }
  blocks = subtract(blocks, spec.excluded);
  const gateway = spec.gateway ?? range.gateway;
  if (gateway !== undefined) blocks = subtract(blocks, [single(gateway.value)]);
  return {
    pool: chosen.ref,
    range: rangeOf(range.cidr, blocks),
    blocks,
    family,
    prefix: range.cidr.prefix,
    ...(gateway === undefined ? {} : { gateway }),
    reservations: chosen.config.ipam.enableOverlappingRanges,
    prefixes: false,
    reuseGraceMs: spec.reuseGraceMs,
    total: countOf(blocks),
  };
}

function ownSpace(identity: PoolIdentity, spec: OwnAddressesSpec): ClaimSpace {
  const subnet = subnetOf(spec);
  const family = spec.family;
  const inSubnet = { first: networkOf(subnet), last: lastOf(subnet) };
  for (const listed of spec.addresses)
    if (listed.first < inSubnet.first || listed.last > inSubnet.last)
      throw new TypeError(
        `spec.addresses ${describeBlock(family, listed)} is outside the subnet ${formatCidr(subnet)}`,
      );
  let blocks = subtract(spec.addresses, spec.excluded);
  const reserved: Block[] = [];
  // As the in-cluster provider: the gateway is never handed out; the network address and the IPv4 broadcast only
  // with allocateReservedIPAddresses.
  if (spec.gateway !== undefined) reserved.push(single(spec.gateway.value));
  if (!spec.allocateReserved) {
    if ((family === 4 && spec.prefix < 31) || (family === 6 && spec.prefix < 127))
      reserved.push(single(inSubnet.first));
    if (family === 4 && spec.prefix < 31) reserved.push(single(inSubnet.last));
  }
  blocks = subtract(blocks, reserved);
  return {
    pool: {
      name: ownPoolName(identity, subnet),
      network: CLAIMS_NETWORK,
      networkNamed: true,
      range: rangeOf(subnet, blocks),
    },
    range: rangeOf(subnet, blocks),
    blocks,
    family,
    prefix: spec.prefix,
    ...(spec.gateway === undefined ? {} : { gateway: spec.gateway }),
    reservations: true,
    prefixes: true,
    reuseGraceMs: spec.reuseGraceMs,
    total: countOf(blocks),
  };
}

/** The blocks as a range: its span from the lowest to the highest address, every gap between blocks a hole. */
function rangeOf(cidr: Cidr, blocks: readonly Block[]): RangeConfig {
  const first = blocks[0];
  const last = blocks[blocks.length - 1];
  if (first === undefined || last === undefined)
    return { cidr, start: networkOf(cidr) + 1n, end: networkOf(cidr), exclude: [] }; // nothing to hand out
  const exclude: Block[] = [];
  for (let i = 1; i < blocks.length; i++) {
    const before = blocks[i - 1] as Block;
    exclude.push({ first: before.last + 1n, last: (blocks[i] as Block).first - 1n });
  }
  return { cidr, start: first.first, end: last.last, exclude };
}

function single(value: bigint): Block {
  return { first: value, last: value };
}

export function countOf(blocks: readonly Block[]): bigint {
  return blocks.reduce((sum, b) => sum + (b.last - b.first + 1n), 0n);
}

/** `from` minus `holes`, merged and sorted. */
export function subtract(from: readonly Block[], holes: readonly Block[]): Block[] {
  const cut = mergeBlocks(holes);
  const out: Block[] = [];
  for (const block of mergeBlocks(from)) {
    let first = block.first;
    for (const hole of cut) {
      if (hole.last < first || hole.first > block.last) continue;
      if (hole.first > first) out.push({ first, last: hole.first - 1n });
      first = hole.last + 1n;
      if (first > block.last) break;
    }
    if (first <= block.last) out.push({ first, last: block.last });
  }
  return out;
}

function intersect(a: readonly Block[], b: readonly Block[]): Block[] {
  const out: Block[] = [];
  for (const x of mergeBlocks(a))
    for (const y of mergeBlocks(b)) {
      const both = intersectBlocks(x, y);
      if (both !== undefined) out.push(both);
    }
  return mergeBlocks(out);
}
