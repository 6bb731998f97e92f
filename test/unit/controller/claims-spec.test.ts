// The pool kinds' specs (DESIGN §12): parsePoolSpec names the field and the value of every problem; claimSpaceOf turns
// a spec (and, for a pool that names a network, the network's NAD) into what claims may take and where they are
// recorded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  claimSpaceOf,
  countOf,
  ownPoolName,
  subtract,
  type ClaimSpace,
  type PoolIdentity,
} from '../../../src/controller/claims/claim-space.ts';
import { describeBlock, parsePoolSpec, subnetOf } from '../../../src/controller/claims/pool-spec.ts';
import { networkConfigsOf } from '../../../src/controller/slices/spec.ts';
import { isDnsSubdomain } from '../../../src/config/names.ts';
import type { NetworkConfig } from '../../../src/config/types.ts';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const POOL: PoolIdentity = { kind: 'AddressPool', namespace: 'default', name: 'p' };
const GLOBAL: PoolIdentity = { kind: 'GlobalAddressPool', name: 'p' };

const ip = (text: string): bigint => parseIP(text).value;

/** The space of a pool spec (namespaced pool `default/p` unless said otherwise). */
function spaceOf(spec: Record<string, unknown>, identity: PoolIdentity = POOL, networks?: NetworkConfig[]): ClaimSpace {
  return claimSpaceOf(identity, parsePoolSpec(spec, identity.namespace), networks);
}

/** The space's addresses as text ("10.0.0.1-10.0.0.254", "10.0.0.7"). */
function blocksOf(space: ClaimSpace): string[] {
  return space.blocks.map((b) => describeBlock(space.family, b));
}

/** A NetworkAttachmentDefinition whose single plugin has this IPAM section. */
function nad(ipam: Record<string, unknown>, namespace = 'default', name = 'net'): unknown {
  return {
    metadata: { namespace, name },
    spec: {
      config: JSON.stringify({
        cniVersion: '1.0.0',
        name: 'n',
        type: 'macvlan',
        ipam: { type: 'hereabouts', ...ipam },
      }),
    },
  };
}

const networkOf = (ipam: Record<string, unknown>): NetworkConfig[] => networkConfigsOf(nad(ipam));
const onNet = (extra: Record<string, unknown> = {}, network: Record<string, unknown> = {}) => ({
  network: { nad: { name: 'net' }, ...network },
  ...extra,
});

// ---------------------------------------------------------------------------------------------------------------
// parsePoolSpec: every problem names its field and value

const own = (extra: Record<string, unknown>) => ({ addresses: ['10.0.0.0/24'], prefix: 24, ...extra });

const BAD_SPECS: Array<[string, Record<string, unknown>, RegExp]> = [
  [
    'a bad address',
    own({ addresses: ['10.0.0.300'] }),
    /^spec\.addresses\[0\] "10\.0\.0\.300": not an IP address, a range A-B or a CIDR$/,
  ],
  [
    'a bad address in the middle of the list',
    own({ addresses: ['10.0.0.1', 'ten'] }),
    /^spec\.addresses\[1\] "ten": not an IP address/,
  ],
  [
    'a range with a bad end',
    own({ addresses: ['10.0.0.1-10.0.0'] }),
    /^spec\.addresses\[0\] "10\.0\.0\.1-10\.0\.0": not an address range A-B$/,
  ],
  [
    'a range ending before it starts',
    own({ addresses: ['10.0.0.20-10.0.0.10'] }),
    /^spec\.addresses\[0\] "10\.0\.0\.20-10\.0\.0\.10": the range ends before it starts$/,
  ],
  [
    'a range of two families',
    own({ addresses: ['10.0.0.1-fd00::1'] }),
    /^spec\.addresses\[0\] "10\.0\.0\.1-fd00::1": the two ends are of different families$/,
  ],
  [
    'a CIDR with a prefix out of range',
    own({ addresses: ['10.0.0.0/33'] }),
    /^spec\.addresses\[0\] "10\.0\.0\.0\/33": invalid CIDR .*prefix must be 0-32$/,
  ],
  [
    'a CIDR with a bad address',
    own({ addresses: ['10.0.0/24'] }),
    /^spec\.addresses\[0\] "10\.0\.0\/24": invalid CIDR .*bad address/,
  ],
  ['an entry that is not a string', own({ addresses: [7] }), /^spec\.addresses\[0\] 7 must be a string$/],
  [
    'addresses that are not a list',
    own({ addresses: '10.0.0.0/24' }),
    /^spec\.addresses must be a list of addresses, ranges and CIDRs$/,
  ],
  [
    'addresses of both families',
    own({ addresses: ['10.0.0.0/24', 'fd00::/120'] }),
    /^spec\.addresses\[1\] "fd00::\/120" mixes IPv4 and IPv6 in one pool$/,
  ],
  [
    'a bad excluded address',
    own({ excludedAddresses: ['10.0.0.5', '10.0.0.x'] }),
    /^spec\.excludedAddresses\[1\] "10\.0\.0\.x": not an IP address/,
  ],
  [
    'an excluded range ending before it starts',
    own({ excludedAddresses: ['10.0.0.9-10.0.0.8'] }),
    /^spec\.excludedAddresses\[0\] "10\.0\.0\.9-10\.0\.0\.8": the range ends before it starts$/,
  ],
  [
    'excluded addresses of both families',
    own({ excludedAddresses: ['fd00::5', '10.0.0.5'] }),
    /^spec\.excludedAddresses\[1\] "10\.0\.0\.5" mixes IPv4 and IPv6/,
  ],
  ['an IPv4 prefix of 33', own({ prefix: 33 }), /^spec\.prefix 33 must be a prefix length of 0-32$/],
  ['a negative prefix', own({ prefix: -1 }), /^spec\.prefix -1 must be a prefix length of 0-32$/],
  ['a fractional prefix', own({ prefix: 24.5 }), /^spec\.prefix 24\.5 must be a prefix length/],
  ['a prefix as text', own({ prefix: '24' }), /^spec\.prefix "24" must be a prefix length/],
  ['no prefix', { addresses: ['10.0.0.0/24'] }, /^spec\.prefix undefined must be a prefix length of 0-32$/],
  [
    'an IPv6 prefix of 129',
    { addresses: ['fd00::/120'], prefix: 129 },
    /^spec\.prefix 129 must be a prefix length of 0-128$/,
  ],
  [
    'a gateway that is not an IP',
    own({ gateway: '10.0.0.256' }),
    /^spec\.gateway "10\.0\.0\.256" is not an IP address$/,
  ],
  ['a gateway that is a number', own({ gateway: 5 }), /^spec\.gateway 5 is not an IP address$/],
  [
    'a gateway of the other family',
    own({ gateway: 'fd00::1' }),
    /^spec\.gateway fd00::1 is not IPv4 like spec\.addresses$/,
  ],
  [
    'an IPv4 gateway in an IPv6 pool',
    { addresses: ['fd00::/120'], prefix: 64, gateway: '10.0.0.1' },
    /^spec\.gateway 10\.0\.0\.1 is not IPv6 like spec\.addresses$/,
  ],
  [
    'no addresses and no network',
    { prefix: 24 },
    /^spec\.addresses: a pool needs addresses, or spec\.network to draw on a network$/,
  ],
  ['an empty address list', own({ addresses: [] }), /^spec\.addresses: a pool needs addresses/],
  [
    'a negative reuse grace',
    own({ reuseGraceSeconds: -1 }),
    /^spec\.reuseGraceSeconds -1 must be a whole number of seconds >= 0$/,
  ],
  ['a fractional reuse grace', own({ reuseGraceSeconds: 1.5 }), /^spec\.reuseGraceSeconds 1\.5 must be a whole number/],
  ['a reuse grace as text', own({ reuseGraceSeconds: '30' }), /^spec\.reuseGraceSeconds "30" must be a whole number/],
  [
    'a network naming a NAD without a name',
    { network: { nad: {} } },
    /^spec\.network\.nad\.name undefined must name a NetworkAttachmentDefinition$/,
  ],
  [
    'a network naming a NAD with an empty name',
    { network: { nad: { name: '' } } },
    /^spec\.network\.nad\.name "" must name a NetworkAttachmentDefinition$/,
  ],
  [
    'a network pool naming a NAD of another namespace',
    { network: { nad: { namespace: 'other', name: 'net' } } },
    /^spec\.network\.nad\.namespace "other": a pool in namespace default may only name a network of its own namespace$/,
  ],
  [
    'a network pool with a bad range',
    { network: { nad: { name: 'net' }, range: '10.0.0.0' } },
    /^spec\.network\.range "10\.0\.0\.0": invalid CIDR .*missing \/prefix$/,
  ],
  [
    'a network pool with a prefix',
    { network: { nad: { name: 'net' } }, prefix: 24 },
    /^spec\.prefix: a pool that names a network takes the prefix of the network range$/,
  ],
  [
    'a network pool with a bad narrowing',
    { network: { nad: { name: 'net' } }, addresses: ['10.0.0.9-10.0.0.1'] },
    /^spec\.addresses\[0\] "10\.0\.0\.9-10\.0\.0\.1": the range ends before it starts$/,
  ],
  [
    'a network pool with a bad reuse grace',
    { network: { nad: { name: 'net' } }, reuseGraceSeconds: -5 },
    /^spec\.reuseGraceSeconds -5 must be/,
  ],
];

for (const [what, spec, message] of BAD_SPECS) {
  test(`parsePoolSpec() refuses ${what}, naming the field and the value`, () => {
    assert.throws(
      () => parsePoolSpec(spec, 'default'),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
  });
}

test('parsePoolSpec() asks a cluster-scoped pool for the namespace of the NAD it names', () => {
  assert.throws(
    () => parsePoolSpec({ network: { nad: { name: 'net' } } }, undefined),
    (err: unknown) =>
      err instanceof TypeError &&
      /^spec\.network\.nad\.namespace is required in a cluster-scoped pool$/.test(err.message),
  );
  const spec = parsePoolSpec({ network: { nad: { namespace: 'tenant-a', name: 'net' } } }, undefined);
  assert.equal(spec.mode, 'network');
  assert.deepEqual(spec.nad, { namespace: 'tenant-a', name: 'net' });
});

test("parsePoolSpec() gives a namespaced pool its own namespace's NAD, named or implied", () => {
  for (const nadRef of [{ name: 'net' }, { namespace: 'default', name: 'net' }]) {
    const spec = parsePoolSpec({ network: { nad: nadRef } }, 'default');
    assert.equal(spec.mode, 'network');
    assert.deepEqual(spec.nad, { namespace: 'default', name: 'net' });
  }
});

test('parsePoolSpec() reads an own-addresses pool: merged addresses, family, prefix, gateway, reuse grace', () => {
  const spec = parsePoolSpec(
    {
      addresses: ['10.0.0.8/30', '10.0.0.5', '10.0.0.6-10.0.0.9', '10.0.0.20-10.0.0.21'],
      prefix: 24,
      gateway: '10.0.0.1',
      excludedAddresses: ['10.0.0.7'],
      reuseGraceSeconds: 30,
      allocateReservedIPAddresses: true,
    },
    'default',
  );
  assert.equal(spec.mode, 'addresses');
  assert.equal(spec.family, 4);
  assert.equal(spec.prefix, 24);
  assert.deepEqual(
    spec.addresses.map((b) => describeBlock(4, b)),
    ['10.0.0.5-10.0.0.11', '10.0.0.20-10.0.0.21'],
  );
  assert.deepEqual(
    spec.excluded.map((b) => describeBlock(4, b)),
    ['10.0.0.7'],
  );
  assert.equal(spec.gateway === undefined ? undefined : formatIP(spec.gateway), '10.0.0.1');
  assert.equal(spec.reuseGraceMs, 30_000);
  assert.equal(spec.allocateReserved, true);
  // Only `true` turns the reserved addresses on; the grace defaults to none; an empty gateway is no gateway.
  const plain = parsePoolSpec(own({ allocateReservedIPAddresses: 'true', gateway: '' }), 'default');
  assert.equal(plain.mode === 'addresses' && plain.allocateReserved, false);
  assert.equal(plain.reuseGraceMs, 0);
  assert.equal(plain.gateway, undefined);
});

test('subnetOf() is the gateway prefix, else the first address prefix', () => {
  const withGateway = parsePoolSpec({ addresses: ['10.0.5.0/28'], prefix: 16, gateway: '10.0.255.254' }, 'default');
  const withoutGateway = parsePoolSpec({ addresses: ['10.0.5.7-10.0.5.9'], prefix: 28 }, 'default');
  assert.ok(withGateway.mode === 'addresses' && withoutGateway.mode === 'addresses');
  assert.deepEqual(subnetOf(withGateway), parseCidr('10.0.0.0/16'));
  assert.deepEqual(subnetOf(withoutGateway), parseCidr('10.0.5.0/28'));
});

// ---------------------------------------------------------------------------------------------------------------
// claimSpaceOf: pools that list their own addresses

const RESERVED_CASES: Array<{
  what: string;
  spec: Record<string, unknown>;
  blocks: string[];
  reserved: string[];
  total: bigint;
}> = [
  {
    what: 'an IPv4 /24 without a gateway',
    spec: { addresses: ['10.0.0.0/24'], prefix: 24 },
    blocks: ['10.0.0.1-10.0.0.254'],
    reserved: ['10.0.0.0-10.0.0.255'],
    total: 254n,
  },
  {
    what: 'an IPv4 /24 with a gateway',
    spec: { addresses: ['10.0.0.0/24'], prefix: 24, gateway: '10.0.0.1' },
    blocks: ['10.0.0.2-10.0.0.254'],
    reserved: ['10.0.0.0', '10.0.0.2-10.0.0.255'],
    total: 253n,
  },
  {
    what: 'an IPv4 /24 with a gateway in its middle',
    spec: { addresses: ['10.0.0.0/24'], prefix: 24, gateway: '10.0.0.100' },
    blocks: ['10.0.0.1-10.0.0.99', '10.0.0.101-10.0.0.254'],
    reserved: ['10.0.0.0-10.0.0.99', '10.0.0.101-10.0.0.255'],
    total: 253n,
  },
  {
    what: 'an IPv4 /31 (no network or broadcast address)',
    spec: { addresses: ['10.0.0.0/31'], prefix: 31 },
    blocks: ['10.0.0.0-10.0.0.1'],
    reserved: ['10.0.0.0-10.0.0.1'],
    total: 2n,
  },
  {
    what: 'an IPv4 /31 with a gateway',
    spec: { addresses: ['10.0.0.0/31'], prefix: 31, gateway: '10.0.0.0' },
    blocks: ['10.0.0.1'],
    reserved: ['10.0.0.1'],
    total: 1n,
  },
  {
    what: 'an IPv4 /32',
    spec: { addresses: ['10.0.0.7'], prefix: 32 },
    blocks: ['10.0.0.7'],
    reserved: ['10.0.0.7'],
    total: 1n,
  },
  {
    what: 'an IPv6 /64 (its first address only: no broadcast)',
    spec: { addresses: ['fd00::/120'], prefix: 64 },
    blocks: ['fd00::1-fd00::ff'],
    reserved: ['fd00::-fd00::ff'],
    total: 255n,
  },
  {
    what: 'an IPv6 /64 with a gateway',
    spec: { addresses: ['fd00::/120'], prefix: 64, gateway: 'fd00::1' },
    blocks: ['fd00::2-fd00::ff'],
    reserved: ['fd00::', 'fd00::2-fd00::ff'],
    total: 254n,
  },
  {
    what: 'an IPv6 /127',
    spec: { addresses: ['fd00::/127'], prefix: 127 },
    blocks: ['fd00::-fd00::1'],
    reserved: ['fd00::-fd00::1'],
    total: 2n,
  },
  {
    what: 'an IPv6 /128',
    spec: { addresses: ['fd00::9'], prefix: 128 },
    blocks: ['fd00::9'],
    reserved: ['fd00::9'],
    total: 1n,
  },
];

for (const c of RESERVED_CASES) {
  test(`claimSpaceOf() of ${c.what}: network and broadcast left out unless allocateReservedIPAddresses, the gateway always`, () => {
    const space = spaceOf(c.spec);
    assert.deepEqual(blocksOf(space), c.blocks);
    assert.equal(space.total, c.total);
    const all = spaceOf({ ...c.spec, allocateReservedIPAddresses: true });
    assert.deepEqual(blocksOf(all), c.reserved);
    assert.equal(all.total, countOf(all.blocks));
  });
}

test('claimSpaceOf() of an own-addresses pool: its own IPPool, reservations under hereabouts-claims, prefixes served', () => {
  const space = spaceOf({ addresses: ['10.0.0.0/24'], prefix: 24, gateway: '10.0.0.1', reuseGraceSeconds: 60 });
  assert.equal(space.family, 4);
  assert.equal(space.prefix, 24);
  assert.equal(space.gateway === undefined ? undefined : formatIP(space.gateway), '10.0.0.1');
  assert.equal(space.reservations, true);
  assert.equal(space.prefixes, true);
  assert.equal(space.reuseGraceMs, 60_000);
  assert.equal(space.pool.name, 'hereabouts-claims.ns.default.1.p-10.0.0.0-24');
  assert.equal(space.pool.network, 'hereabouts-claims');
  assert.equal(space.pool.networkNamed, true);
  assert.deepEqual(space.pool.range.cidr, parseCidr('10.0.0.0/24'));
  assert.deepEqual(space.pool.range, space.range);
  assert.equal(space.range.start, ip('10.0.0.2'));
  assert.equal(space.range.end, ip('10.0.0.254'));
  assert.deepEqual(space.range.exclude, []);
});

test('claimSpaceOf() leaves out excluded addresses; the range spans the blocks and every gap is a hole', () => {
  const space = spaceOf({
    addresses: ['10.0.0.10-10.0.0.20', '10.0.0.40/30'],
    prefix: 24,
    excludedAddresses: ['10.0.0.12', '10.0.0.15-10.0.0.16', '10.0.0.18/31', '10.0.0.43', '10.0.0.100'],
  });
  assert.deepEqual(blocksOf(space), [
    '10.0.0.10-10.0.0.11',
    '10.0.0.13-10.0.0.14',
    '10.0.0.17',
    '10.0.0.20',
    '10.0.0.40-10.0.0.42',
  ]);
  assert.equal(space.total, 9n);
  assert.equal(space.range.start, ip('10.0.0.10'));
  assert.equal(space.range.end, ip('10.0.0.42'));
  assert.deepEqual(
    space.range.exclude.map((b) => describeBlock(4, b)),
    ['10.0.0.12', '10.0.0.15-10.0.0.16', '10.0.0.18-10.0.0.19', '10.0.0.21-10.0.0.39'],
  );
});

test('claimSpaceOf() of a pool whose addresses are all reserved or excluded: nothing to hand out', () => {
  const space = spaceOf({
    addresses: ['10.0.0.0', '10.0.0.255', '10.0.0.9'],
    prefix: 24,
    excludedAddresses: ['10.0.0.9'],
  });
  assert.deepEqual(space.blocks, []);
  assert.equal(space.total, 0n);
  assert.ok(space.range.end < space.range.start, 'an empty range');
});

test('claimSpaceOf() counts large pools without walking them', () => {
  assert.equal(spaceOf({ addresses: ['10.0.0.0/16'], prefix: 16, gateway: '10.0.0.1' }).total, 65_533n);
  assert.equal(spaceOf({ addresses: ['fd00::/64'], prefix: 64 }).total, (1n << 64n) - 1n);
  assert.equal(spaceOf({ addresses: ['fd00::/64'], prefix: 64, allocateReservedIPAddresses: true }).total, 1n << 64n);
});

test('claimSpaceOf() refuses addresses outside the subnet, naming them and the subnet', () => {
  const refuses = (spec: Record<string, unknown>, message: RegExp) =>
    assert.throws(
      () => spaceOf(spec),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
  refuses(
    { addresses: ['10.0.0.0/24', '10.0.1.5'], prefix: 24 },
    /^spec\.addresses 10\.0\.1\.5 is outside the subnet 10\.0\.0\.0\/24$/,
  );
  refuses(
    { addresses: ['10.0.0.250-10.0.1.5'], prefix: 24 },
    /^spec\.addresses 10\.0\.0\.250-10\.0\.1\.5 is outside the subnet 10\.0\.0\.0\/24$/,
  );
  refuses({ addresses: ['10.0.0.0/23'], prefix: 24 }, /^spec\.addresses 10\.0\.0\.0-10\.0\.1\.255 is outside/);
  // The gateway anchors the subnet: addresses of another subnet than the gateway's are refused.
  refuses(
    { addresses: ['10.0.0.0/24'], prefix: 24, gateway: '10.0.1.1' },
    /^spec\.addresses 10\.0\.0\.0-10\.0\.0\.255 is outside the subnet 10\.0\.1\.0\/24$/,
  );
  refuses(
    { addresses: ['fd00::1', 'fd01::1'], prefix: 64 },
    /^spec\.addresses fd01::1 is outside the subnet fd00::\/64$/,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// claimSpaceOf: pools that name a network

test("claimSpaceOf() of a network pool draws on the NAD's first range, in the very IPPool its pods use", () => {
  const networks = networkOf({
    ipRanges: [{ range: '10.0.0.0/24' }, { range: '10.1.0.0/24' }],
  });
  const space = spaceOf(onNet(), POOL, networks);
  assert.deepEqual(blocksOf(space), ['10.0.0.1-10.0.0.254']);
  assert.equal(space.total, 254n);
  assert.equal(space.pool.name, '10.0.0.0-24');
  assert.equal(space.pool.network, 'n');
  assert.equal(space.pool.networkNamed, false);
  assert.deepEqual(space.pool.range, networks[0]?.ipam.ranges[0]);
  assert.equal(space.prefix, 24);
  assert.equal(space.family, 4);
  assert.equal(space.prefixes, false, 'a network pool shares its IPPool with pods: no prefixes');
  assert.equal(space.reservations, true, 'enable_overlapping_ranges defaults to true');
  assert.equal(space.gateway, undefined);
});

test('claimSpaceOf() of a network pool takes the named range, host bits or not', () => {
  const networks = networkOf({ ipRanges: [{ range: '10.0.0.0/24' }, { range: '10.1.0.0/24' }] });
  for (const range of ['10.1.0.0/24', '10.1.0.77/24']) {
    const space = spaceOf(onNet({}, { range }), POOL, networks);
    assert.equal(space.pool.name, '10.1.0.0-24');
    assert.deepEqual(blocksOf(space), ['10.1.0.1-10.1.0.254']);
  }
  const v6 = networkConfigsOf(nad({ range: '10.0.0.0/24', ipRanges: [{ range: 'fd00::/120' }] }));
  const space6 = spaceOf(onNet({}, { range: 'fd00::/120' }), POOL, v6);
  assert.equal(space6.family, 6);
  assert.equal(space6.prefix, 120);
  assert.equal(space6.pool.name, 'fd00---120');
});

test("claimSpaceOf() refuses a range that is not the NAD's, a missing NAD, a NAD without our IPAM and node slices", () => {
  const networks = networkOf({ range: '10.0.0.0/24' });
  const refuses = (spec: Record<string, unknown>, nets: NetworkConfig[] | undefined, message: RegExp) =>
    assert.throws(
      () => spaceOf(spec, POOL, nets),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
  refuses(
    onNet({}, { range: '10.2.0.0/24' }),
    networks,
    /^spec\.network\.range 10\.2\.0\.0\/24 is not a range of NetworkAttachmentDefinition default\/net$/,
  );
  refuses(onNet({}, { range: '10.0.0.0/25' }), networks, /^spec\.network\.range 10\.0\.0\.0\/25 is not a range/);
  refuses(onNet({}, { range: 'fd00::/24' }), networks, /^spec\.network\.range fd00::\/24 is not a range/);
  refuses(onNet(), undefined, /^NetworkAttachmentDefinition default\/net not found$/);
  const hostLocal = {
    metadata: { namespace: 'default', name: 'net' },
    spec: { config: JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'macvlan', ipam: { type: 'host-local' } }) },
  };
  refuses(
    onNet(),
    networkConfigsOf(hostLocal),
    /^NetworkAttachmentDefinition default\/net has no hereabouts or whereabouts IPAM range$/,
  );
  refuses(
    onNet(),
    networkOf({ range: '10.0.0.0/16', node_slice_size: '/24' }),
    /^NetworkAttachmentDefinition default\/net uses node_slice_size: claims cannot yet draw on a node-slice network/,
  );
});

test("claimSpaceOf() honours the NAD's range_start, range_end, exclude and gateway", () => {
  const networks = networkOf({
    range: '10.0.0.0/24',
    range_start: '10.0.0.10',
    range_end: '10.0.0.50',
    exclude: ['10.0.0.20/30'],
    gateway: '10.0.0.30',
  });
  const space = spaceOf(onNet(), POOL, networks);
  assert.deepEqual(blocksOf(space), ['10.0.0.10-10.0.0.19', '10.0.0.24-10.0.0.29', '10.0.0.31-10.0.0.50']);
  assert.equal(space.total, 10n + 6n + 20n);
  assert.equal(space.gateway === undefined ? undefined : formatIP(space.gateway), '10.0.0.30');
  // The pool's own gateway and exclusions are taken out as well.
  const narrowed = spaceOf(onNet({ gateway: '10.0.0.11', excludedAddresses: ['10.0.0.40-10.0.0.49'] }), POOL, networks);
  assert.deepEqual(blocksOf(narrowed), [
    '10.0.0.10',
    '10.0.0.12-10.0.0.19',
    '10.0.0.24-10.0.0.29',
    '10.0.0.31-10.0.0.39',
    '10.0.0.50',
  ]);
  assert.equal(narrowed.gateway === undefined ? undefined : formatIP(narrowed.gateway), '10.0.0.11');
  assert.equal(narrowed.total, countOf(narrowed.blocks));
  // The claims' range has the same addresses: the span of the blocks, every gap a hole.
  assert.equal(narrowed.range.start, ip('10.0.0.10'));
  assert.equal(narrowed.range.end, ip('10.0.0.50'));
  assert.deepEqual(
    narrowed.range.exclude.map((b) => describeBlock(4, b)),
    ['10.0.0.11', '10.0.0.20-10.0.0.23', '10.0.0.30', '10.0.0.40-10.0.0.49'],
  );
});

test("claimSpaceOf() narrows a network pool to the listed addresses inside the network's range", () => {
  const networks = networkOf({ range: '10.0.0.0/24', exclude: ['10.0.0.104/30'] });
  const space = spaceOf(onNet({ addresses: ['10.0.0.100-10.0.0.110', '10.0.0.200'] }), POOL, networks);
  assert.deepEqual(blocksOf(space), ['10.0.0.100-10.0.0.103', '10.0.0.108-10.0.0.110', '10.0.0.200']);
  assert.equal(space.total, 8n);
  assert.equal(space.pool.name, '10.0.0.0-24', 'still the network pool');
  // At the edges of the usable span: allowed.
  assert.deepEqual(blocksOf(spaceOf(onNet({ addresses: ['10.0.0.1', '10.0.0.254'] }), POOL, networks)), [
    '10.0.0.1',
    '10.0.0.254',
  ]);
});

test("claimSpaceOf() refuses narrowing addresses outside the network's range, naming them and the range", () => {
  const networks = networkOf({ range: '10.0.0.0/24', range_start: '10.0.0.10', range_end: '10.0.0.99' });
  const refuses = (addresses: string[], message: RegExp) =>
    assert.throws(
      () => spaceOf(onNet({ addresses }), POOL, networks),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
  refuses(['10.0.0.5'], /^spec\.addresses 10\.0\.0\.5 is outside the network's range 10\.0\.0\.10-10\.0\.0\.99$/);
  refuses(['10.0.0.90-10.0.0.100'], /^spec\.addresses 10\.0\.0\.90-10\.0\.0\.100 is outside the network's range/);
  refuses(['10.0.1.0/28'], /^spec\.addresses 10\.0\.1\.0-10\.0\.1\.15 is outside the network's range/);
  // The network address of the CIDR is not in the usable span.
  assert.throws(
    () => spaceOf(onNet({ addresses: ['10.0.0.0/28'] }), POOL, networkOf({ range: '10.0.0.0/24' })),
    /spec\.addresses 10\.0\.0\.0-10\.0\.0\.15 is outside the network's range 10\.0\.0\.1-10\.0\.0\.254/,
  );
});

// A network pool's addresses, gateway and exclusions are of the network's family (an IPv6 gateway would otherwise be
// written into IPv4 IPAddresses, IPv6 exclusions ignored).
test("claimSpaceOf() refuses a network pool's addresses, gateway and exclusions of the other family, naming them", () => {
  const networks = networkOf({ range: '10.0.0.0/24' });
  assert.throws(() => spaceOf(onNet({ addresses: ['fd00::1'] }), POOL, networks), /spec\.addresses is IPv6/);
  assert.throws(() => spaceOf(onNet({ gateway: 'fd00::1' }), POOL, networks), /spec\.gateway fd00::1 is IPv6/);
  assert.throws(
    () => spaceOf(onNet({ excludedAddresses: ['fd00::/120'] }), POOL, networks),
    /spec\.excludedAddresses is IPv6, but the network's range 10\.0\.0\.0\/24 is IPv4/,
  );
});

test('claimSpaceOf() follows enable_overlapping_ranges: reservations only when the network makes them', () => {
  assert.equal(spaceOf(onNet(), POOL, networkOf({ range: '10.0.0.0/24' })).reservations, true);
  assert.equal(
    spaceOf(onNet(), POOL, networkOf({ range: '10.0.0.0/24', enable_overlapping_ranges: true })).reservations,
    true,
  );
  assert.equal(
    spaceOf(onNet(), POOL, networkOf({ range: '10.0.0.0/24', enable_overlapping_ranges: false })).reservations,
    false,
  );
});

test('claimSpaceOf() of a network with network_name records in <network_name>-<range>', () => {
  const space = spaceOf(onNet(), POOL, networkOf({ range: '10.0.0.0/24', network_name: 'blue' }));
  assert.equal(space.pool.name, 'blue-10.0.0.0-24');
  assert.equal(space.pool.network, 'blue');
  assert.equal(space.pool.networkNamed, true);
});

test('claimSpaceOf() of a network pool keeps its reuse grace', () => {
  const space = spaceOf(onNet({ reuseGraceSeconds: 5 }), POOL, networkOf({ range: '10.0.0.0/24' }));
  assert.equal(space.reuseGraceMs, 5000);
});

// ---------------------------------------------------------------------------------------------------------------
// Pool names

test('ownPoolName() differs between namespaced and cluster-scoped pools, namespaces, names and subnets', () => {
  const subnet = parseCidr('10.0.0.0/24');
  const names = [
    ownPoolName(POOL, subnet),
    ownPoolName(GLOBAL, subnet),
    ownPoolName({ kind: 'AddressPool', namespace: 'other', name: 'p' }, subnet),
    ownPoolName({ kind: 'AddressPool', namespace: 'default', name: 'q' }, subnet),
    ownPoolName({ kind: 'AddressPool', namespace: 'global', name: 'p' }, subnet),
    ownPoolName({ kind: 'GlobalAddressPool', name: 'ns.default.p' }, subnet),
    ownPoolName(POOL, parseCidr('10.0.1.0/24')),
    ownPoolName(POOL, parseCidr('10.0.0.0/25')),
    // A name and a subnet that would spell another pool's without the length in front.
    ownPoolName({ kind: 'AddressPool', namespace: 'default', name: 'x' }, parseCidr('2001:db8::/64')),
    ownPoolName({ kind: 'AddressPool', namespace: 'default', name: 'x-2001' }, parseCidr('db8::/64')),
  ];
  assert.deepEqual(names.slice(0, 2), [
    'hereabouts-claims.ns.default.1.p-10.0.0.0-24',
    'hereabouts-claims.global.1.p-10.0.0.0-24',
  ]);
  assert.equal(new Set(names).size, names.length, names.join(' '));
  for (const name of names) assert.ok(isDnsSubdomain(name), name);
  assert.equal(ownPoolName(POOL, parseCidr('fd00::/64')), 'hereabouts-claims.ns.default.1.p-fd00---64');
});

test("claimSpaceOf() names a namespaced and a cluster-scoped pool's IPPools differently for the same spec", () => {
  const spec = { addresses: ['10.0.0.0/24'], prefix: 24 };
  const namespaced = spaceOf(spec, POOL);
  const global = spaceOf(spec, GLOBAL);
  assert.notEqual(namespaced.pool.name, global.pool.name);
  assert.equal(global.pool.name, 'hereabouts-claims.global.1.p-10.0.0.0-24');
  assert.deepEqual(namespaced.blocks, global.blocks);
});

// ---------------------------------------------------------------------------------------------------------------
// subtract, countOf

const b = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });

test('subtract() cuts holes out of blocks: inside, at the edges, across blocks, covering all', () => {
  assert.deepEqual(subtract([b(0, 10)], [b(3, 4), b(6, 6)]), [b(0, 2), b(5, 5), b(7, 10)]);
  assert.deepEqual(subtract([b(0, 10)], [b(0, 0), b(10, 10)]), [b(1, 9)]);
  assert.deepEqual(subtract([b(0, 10)], [b(-5, 3), b(8, 20)]), [b(4, 7)]);
  assert.deepEqual(subtract([b(0, 10)], [b(0, 10)]), []);
  assert.deepEqual(subtract([b(0, 10)], [b(-1, 11)]), []);
  assert.deepEqual(subtract([b(0, 10)], []), [b(0, 10)]);
  assert.deepEqual(subtract([], [b(0, 10)]), []);
  assert.deepEqual(subtract([b(0, 10)], [b(20, 30)]), [b(0, 10)]);
  // One hole over two blocks; holes unsorted, overlapping and adjacent; blocks unsorted and adjacent (merged).
  assert.deepEqual(subtract([b(0, 5), b(10, 15)], [b(4, 11)]), [b(0, 3), b(12, 15)]);
  assert.deepEqual(subtract([b(10, 15), b(0, 5)], [b(3, 3), b(1, 2), b(12, 14), b(13, 13)]), [
    b(0, 0),
    b(4, 5),
    b(10, 11),
    b(15, 15),
  ]);
  assert.deepEqual(subtract([b(0, 4), b(5, 9)], [b(4, 5)]), [b(0, 3), b(6, 9)]);
});

test('subtract() agrees with a set difference on random blocks', () => {
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const randomBlocks = (): Array<{ first: bigint; last: bigint }> =>
    Array.from({ length: rand(5) }, () => {
      const first = rand(60);
      return b(first, first + rand(8));
    });
  const members = (blocks: ReadonlyArray<{ first: bigint; last: bigint }>): Set<bigint> => {
    const out = new Set<bigint>();
    for (const block of blocks) for (let v = block.first; v <= block.last; v++) out.add(v);
    return out;
  };
  for (let round = 0; round < 500; round++) {
    const from = randomBlocks();
    const holes = randomBlocks();
    const cut = members(holes);
    const want = [...members(from)].filter((v) => !cut.has(v)).sort((x, y) => (x < y ? -1 : 1));
    const got = subtract(from, holes);
    assert.deepEqual(
      [...members(got)].sort((x, y) => (x < y ? -1 : 1)),
      want,
    );
    assert.equal(countOf(got), BigInt(want.length));
    for (let i = 1; i < got.length; i++)
      assert.ok((got[i]?.first ?? 0n) > (got[i - 1]?.last ?? 0n) + 1n, 'sorted, disjoint and not adjacent');
  }
});
