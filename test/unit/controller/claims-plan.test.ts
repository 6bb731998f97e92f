// The plans a claim commits on its pool's IPPool (DESIGN §12), the records they write, and what the pool's status
// counts: pure functions over a Map of allocations, applied here as the store would apply them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ourPoolRef } from '../../../src/controller/claims/address-claims.ts';
import {
  heldBlocks,
  heldBy,
  planAddressClaim,
  planClaimRelease,
  planPrefixClaim,
} from '../../../src/controller/claims/claim-plan.ts';
import { claimSpaceOf, type ClaimSpace } from '../../../src/controller/claims/claim-space.ts';
import { parsePoolSpec } from '../../../src/controller/claims/pool-spec.ts';
import { claimsIn, poolCounts } from '../../../src/controller/claims/pool-status.ts';
import { parsePrefixRequest } from '../../../src/controller/claims/prefix-claims.ts';
import type { PoolView } from '../../../src/controller/pools/view.ts';
import { networkConfigsOf } from '../../../src/controller/slices/spec.ts';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import type { Block } from '../../../src/ip/block.ts';
import { formatCidr, parseCidr, type Cidr } from '../../../src/ip/cidr.ts';
import { claimHolder, claimRecord, holderKey, sameHolder, type ClaimHolder } from '../../../src/store/claim-record.ts';
import { claimsOf, type AllocationRecord, type Plan, type PlanHints, type Planned } from '../../../src/store/store.ts';
import { warmRecord } from '../../../src/store/warm-record.ts';
import { Prng } from '../../model/prng.ts';

const AT = '2025-01-01T00:00:00Z';
const ip = (text: string): bigint => parseIP(text).value;
const text = (value: bigint): string => formatIP({ family: 4, value });

/** The space of an own-addresses pool `default/p`. */
function ownSpace(spec: Record<string, unknown>): ClaimSpace {
  return claimSpaceOf({ kind: 'AddressPool', namespace: 'default', name: 'p' }, parsePoolSpec(spec, 'default'));
}

/** 10.0.0.0/24 without its network and broadcast addresses: 10.0.0.1-10.0.0.254. */
const SPACE = ownSpace({ addresses: ['10.0.0.0/24'], prefix: 24 });

const address = (name: string, namespace = 'default'): ClaimHolder => ({ kind: 'IPAddressClaim', namespace, name });
const prefix = (name: string, prefixLength: number, namespace = 'default') => ({
  kind: 'PrefixClaim' as const,
  namespace,
  name,
  prefixLength,
});
const pod = (name: string): AllocationRecord => ({
  containerId: `c-${name}`,
  ifname: 'eth0',
  podRef: `default/${name}`,
});

/** Runs a plan on `current` and applies its change as the store would. */
function commit<T>(
  current: Map<bigint, AllocationRecord>,
  plan: Plan<T>,
  refused: ReadonlySet<bigint> = new Set(),
  hints?: PlanHints,
): Planned<T> {
  const planned = plan(current, refused, hints);
  const change = planned.change;
  if (change !== null) {
    for (const released of change.release ?? []) {
      assert.ok(current.has(released), `released ${text(released)} is held`);
      current.delete(released);
    }
    for (const claim of claimsOf(change)) {
      assert.ok(!current.has(claim.address), `claimed ${text(claim.address)} is free`);
      current.set(claim.address, claim.record);
    }
  }
  return planned;
}

const claimAddress = (
  current: Map<bigint, AllocationRecord>,
  holder: ClaimHolder,
  options: { wanted?: bigint; resting?: ReadonlySet<bigint>; claimable?: boolean } = {},
  refused?: ReadonlySet<bigint>,
  hints?: PlanHints,
  space: ClaimSpace = SPACE,
) => commit(current, planAddressClaim(space, holder, { createdAt: AT, ...options }), refused, hints);

const claimPrefix = (
  current: Map<bigint, AllocationRecord>,
  holder: ClaimHolder & { prefixLength: number },
  cidr?: string,
  refused?: ReadonlySet<bigint>,
  space: ClaimSpace = SPACE,
) =>
  commit(
    current,
    planPrefixClaim(space, holder, { createdAt: AT, ...(cidr === undefined ? {} : { cidr: parseCidr(cidr) }) }),
    refused,
  );

/** The address an outcome holds, as text; the outcome's kind otherwise. */
function shown(planned: Planned<{ kind: string; address?: bigint; cidr?: Cidr; claimed?: boolean }>): string {
  const v = planned.value;
  if (v.address !== undefined) return `${v.kind} ${text(v.address)}${v.claimed === true ? ' claimed' : ''}`;
  if (v.cidr !== undefined) return `${v.kind} ${formatCidr(v.cidr)}${v.claimed === true ? ' claimed' : ''}`;
  return v.kind;
}

// ---------------------------------------------------------------------------------------------------------------
// Claim records

test('claimHolder(claimRecord(h)) gives h back, for address and prefix claims', () => {
  const holders: ClaimHolder[] = [
    address('m1'),
    address('machine-0.a', 'tenant-b'),
    prefix('pc', 28),
    prefix('whole', 0, 'x'),
    prefix('v6', 128, 'y'),
  ];
  for (const holder of holders) {
    const record = claimRecord(holder, AT);
    assert.equal(record.podRef, '');
    assert.equal(record.ifname, 'claim');
    assert.equal(record.createdAt, AT);
    assert.deepEqual(claimHolder(record), holder);
    const back = claimHolder(record);
    assert.ok(back !== undefined && sameHolder(back, holder));
    assert.equal(holderKey(holder), `${holder.namespace}/${holder.name}`);
  }
  assert.equal(claimRecord(address('m1'), AT).containerId, 'hereabouts-claim:default/m1');
  assert.equal(claimRecord(prefix('pc', 28), AT).containerId, 'hereabouts-prefix:28:default/pc');
});

test('sameHolder() tells kinds apart and ignores the prefix length', () => {
  assert.equal(sameHolder(address('a'), address('a')), true);
  assert.equal(sameHolder(address('a'), address('b')), false);
  assert.equal(sameHolder(address('a', 'x'), address('a', 'y')), false);
  assert.equal(sameHolder(address('a'), prefix('a', 28)), false);
  assert.equal(sameHolder(prefix('a', 28), prefix('a', 30)), true);
});

test("claimHolder() is undefined for warm records, pods' records and malformed ids", () => {
  const claimLike = (containerId: string): AllocationRecord => ({ containerId, ifname: 'claim', podRef: '' });
  const others: AllocationRecord[] = [
    warmRecord('node-a', '10.0.0.0-24', 's', AT),
    pod('web-0'),
    { containerId: 'abc', ifname: 'eth0', podRef: '' },
    // A claim's id, but not a claim's record: a pod, another interface.
    { containerId: 'hereabouts-claim:default/m1', ifname: 'claim', podRef: 'default/m1' },
    { containerId: 'hereabouts-claim:default/m1', ifname: 'eth0', podRef: '' },
    claimLike('hereabouts-claim:'),
    claimLike('hereabouts-claim:default'),
    claimLike('hereabouts-claim:/m1'),
    claimLike('hereabouts-claim:default/'),
    claimLike('hereabouts-warm:node-a/10.0.0.0-24'),
    claimLike('hereabouts-prefix:default/pc'),
    claimLike('hereabouts-prefix::default/pc'),
    claimLike('hereabouts-prefix:x:default/pc'),
    claimLike('hereabouts-prefix:-1:default/pc'),
    claimLike('hereabouts-prefix:129:default/pc'),
    claimLike('hereabouts-prefix:1.5:default/pc'),
    claimLike('hereabouts-prefix:1e1:default/pc'),
    claimLike('hereabouts-prefix: 5:default/pc'),
    claimLike('hereabouts-prefix:0x1e:default/pc'),
    claimLike('hereabouts-prefix:28:default'),
    claimLike('hereabouts-prefix:28:/pc'),
    claimLike('hereabouts-prefix:28:default/'),
    claimLike('other:default/m1'),
    claimLike(''),
  ];
  for (const record of others) assert.equal(claimHolder(record), undefined, JSON.stringify(record));
});

// ---------------------------------------------------------------------------------------------------------------
// heldBlocks, heldBy

test('heldBlocks() counts prefix records as their blocks; heldBy() finds the lowest record of a holder', () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.1'), pod('a')],
    [ip('10.0.0.8'), claimRecord(prefix('pc', 29), AT)],
    [ip('10.0.0.16'), claimRecord(address('m1'), AT)],
    [ip('10.0.0.17'), warmRecord('n', 'x', 's', AT)],
    [ip('10.0.0.40'), claimRecord(address('m2'), AT)],
    [ip('10.0.0.30'), claimRecord(address('m2'), AT)],
  ]);
  assert.deepEqual(
    heldBlocks(current, 4).map((b) => `${text(b.first)}-${text(b.last)}`),
    ['10.0.0.1-10.0.0.1', '10.0.0.8-10.0.0.17', '10.0.0.30-10.0.0.30', '10.0.0.40-10.0.0.40'],
  );
  assert.equal(heldBy(current, address('m1')), ip('10.0.0.16'));
  assert.equal(heldBy(current, address('m2')), ip('10.0.0.30'));
  assert.equal(heldBy(current, prefix('pc', 29)), ip('10.0.0.8'));
  assert.equal(heldBy(current, address('pc')), undefined, 'a PrefixClaim of that name is another holder');
  assert.equal(heldBy(current, address('a')), undefined, "a pod's record is no claim's");
  // A prefix record in an IPv6 pool holds 2^(128-length) addresses.
  const v6 = new Map([[parseIP('fd00::').value, claimRecord(prefix('pc', 64), AT)]]);
  assert.deepEqual(heldBlocks(v6, 6), [
    { first: parseIP('fd00::').value, last: parseIP('fd00::ffff:ffff:ffff:ffff').value },
  ]);
});

// ---------------------------------------------------------------------------------------------------------------
// planAddressClaim

test('planAddressClaim() takes the lowest free address, records the claim, and holds it again with no change', () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.1'), pod('a')],
    [ip('10.0.0.2'), pod('b')],
    [ip('10.0.0.4'), pod('c')],
  ]);
  const first = claimAddress(current, address('m1'));
  assert.equal(shown(first), 'held 10.0.0.3 claimed');
  assert.deepEqual(first.change, { claim: { address: ip('10.0.0.3'), record: claimRecord(address('m1'), AT) } });
  assert.equal(shown(claimAddress(current, address('m2'))), 'held 10.0.0.5 claimed');
  // The same claim again (a retry, a restart): what it holds, nothing to write, whatever else is asked.
  for (const options of [{}, { wanted: ip('10.0.0.100') }, { resting: new Set([ip('10.0.0.3')]) }]) {
    const again = claimAddress(current, address('m1'), options, new Set([ip('10.0.0.3')]));
    assert.equal(again.change, null);
    assert.equal(shown(again), 'held 10.0.0.3');
  }
  // A claim of the same name in another namespace is another claim.
  assert.equal(shown(claimAddress(current, address('m1', 'other'))), 'held 10.0.0.6 claimed');
});

test('planAddressClaim() not claimable (Whereabouts runs): what the claim holds is answered, nothing new is taken', () => {
  const current = new Map<bigint, AllocationRecord>([[ip('10.0.0.1'), pod('a')]]);
  assert.equal(shown(claimAddress(current, address('m1'))), 'held 10.0.0.2 claimed');
  const again = claimAddress(current, address('m1'), { claimable: false });
  assert.equal(again.change, null);
  assert.equal(shown(again), 'held 10.0.0.2');
  const blocked = claimAddress(current, address('m2'), { claimable: false });
  assert.equal(blocked.change, null);
  assert.equal(shown(blocked), 'blocked');
  assert.equal(current.size, 2);
});

test('planAddressClaim() with `wanted`: takes it when free, says taken or outside otherwise', () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.5'), pod('a')],
    [ip('10.0.0.8'), claimRecord(prefix('pc', 30), AT)],
  ]);
  const space = ownSpace({ addresses: ['10.0.0.0/24'], prefix: 24, excludedAddresses: ['10.0.0.100'] });
  const want = (wanted: string, refused?: Set<bigint>) =>
    claimAddress(current, address(`m-${wanted}`), { wanted: ip(wanted) }, refused, undefined, space);
  assert.equal(shown(want('10.0.0.5')), 'taken 10.0.0.5');
  assert.equal(shown(want('10.0.0.10')), 'taken 10.0.0.10', 'inside a prefix claim');
  assert.equal(shown(want('10.0.0.11')), 'taken 10.0.0.11', 'the last address of a prefix claim');
  assert.equal(shown(want('10.0.0.20', new Set([ip('10.0.0.20')]))), 'taken 10.0.0.20', 'refused');
  assert.equal(shown(want('10.0.0.0')), 'outside 10.0.0.0', 'the network address');
  assert.equal(shown(want('10.0.0.255')), 'outside 10.0.0.255', 'the broadcast address');
  assert.equal(shown(want('10.0.0.100')), 'outside 10.0.0.100', 'excluded');
  assert.equal(shown(want('10.0.1.1')), 'outside 10.0.1.1');
  for (const refusal of ['10.0.0.5', '10.0.0.10', '10.0.0.0', '10.0.1.1']) assert.equal(want(refusal).change, null);
  const free = want('10.0.0.77');
  assert.equal(shown(free), 'held 10.0.0.77 claimed');
  assert.equal(current.get(ip('10.0.0.77'))?.containerId, 'hereabouts-claim:default/m-10.0.0.77');
  // `wanted` is what the claim's IPAddress says: a resting address is no reason to refuse it.
  assert.equal(
    shown(claimAddress(current, address('r'), { wanted: ip('10.0.0.30'), resting: new Set([ip('10.0.0.30')]) })),
    'held 10.0.0.30 claimed',
  );
});

test('planAddressClaim() skips refused and resting addresses', () => {
  const current = new Map<bigint, AllocationRecord>();
  const refused = new Set([ip('10.0.0.1'), ip('10.0.0.2')]);
  const resting = new Set([ip('10.0.0.3'), ip('10.0.0.5')]);
  assert.equal(shown(claimAddress(current, address('a'), { resting }, refused)), 'held 10.0.0.4 claimed');
  assert.equal(shown(claimAddress(current, address('b'), { resting }, refused)), 'held 10.0.0.6 claimed');
  assert.equal(shown(claimAddress(current, address('c'), {}, refused)), 'held 10.0.0.3 claimed');
});

test('planAddressClaim() prefers an address this update already reserved, when it may take it', () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.60'), pod('a')],
    [ip('10.0.0.64'), claimRecord(prefix('pc', 30), AT)],
  ]);
  const hinted = (reserved: string[], options: { resting?: Set<bigint> } = {}, refused?: Set<bigint>) =>
    shown(claimAddress(new Map(current), address('m'), options, refused, { reserved: new Set(reserved.map(ip)) }));
  assert.equal(hinted(['10.0.0.50']), 'held 10.0.0.50 claimed');
  assert.equal(hinted(['10.0.0.60']), 'held 10.0.0.1 claimed', 'taken by a pod');
  assert.equal(hinted(['10.0.0.65']), 'held 10.0.0.1 claimed', 'inside a prefix claim');
  assert.equal(hinted(['10.0.0.0']), 'held 10.0.0.1 claimed', 'not an address of the pool');
  assert.equal(hinted(['10.0.1.9']), 'held 10.0.0.1 claimed', 'not an address of the pool');
  assert.equal(hinted(['10.0.0.50'], {}, new Set([ip('10.0.0.50')])), 'held 10.0.0.1 claimed', 'refused');
  assert.equal(hinted(['10.0.0.50'], { resting: new Set([ip('10.0.0.50')]) }), 'held 10.0.0.1 claimed', 'resting');
  assert.equal(hinted(['10.0.0.60', '10.0.0.51']), 'held 10.0.0.51 claimed', 'the next reserved one');
  // A claim that holds an address keeps it, hint or not.
  const held = new Map(current);
  claimAddress(held, address('m'));
  const again = claimAddress(held, address('m'), {}, undefined, { reserved: new Set([ip('10.0.0.50')]) });
  assert.equal(again.change, null);
  assert.equal(shown(again), 'held 10.0.0.1');
});

test("planAddressClaim() counts a prefix record's whole block as taken", () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.1'), claimRecord(address('x'), AT)],
    [ip('10.0.0.4'), claimRecord(prefix('pc', 30), AT)],
  ]);
  const got = ['a', 'b', 'c'].map((name) => shown(claimAddress(current, address(name))));
  assert.deepEqual(got, ['held 10.0.0.2 claimed', 'held 10.0.0.3 claimed', 'held 10.0.0.8 claimed']);
});

test('planAddressClaim() past the first 64 addresses: the counting pass skips prefix blocks too', () => {
  const current = new Map<bigint, AllocationRecord>();
  for (let i = 1; i < 64; i++) current.set(ip(`10.0.0.${i}`), claimRecord(address(`m${i}`), AT));
  current.set(ip('10.0.0.64'), claimRecord(prefix('pc', 26), AT));
  current.set(ip('10.0.0.128'), pod('p'));
  assert.equal(shown(claimAddress(current, address('next'))), 'held 10.0.0.129 claimed');
  assert.equal(
    shown(claimAddress(current, address('after'), {}, new Set([ip('10.0.0.130')]))),
    'held 10.0.0.131 claimed',
  );
});

test('planAddressClaim() says exhausted when nothing is left, and writes nothing', () => {
  const small = ownSpace({ addresses: ['10.0.0.10-10.0.0.12'], prefix: 24 });
  const current = new Map<bigint, AllocationRecord>();
  const got = ['a', 'b', 'c', 'd'].map((name) =>
    shown(claimAddress(current, address(name), {}, undefined, undefined, small)),
  );
  assert.deepEqual(got, ['held 10.0.0.10 claimed', 'held 10.0.0.11 claimed', 'held 10.0.0.12 claimed', 'exhausted']);
  assert.equal(claimAddress(current, address('d'), {}, undefined, undefined, small).change, null);
  // Refused and resting addresses count as gone; a prefix over the rest of the pool too.
  const empty = new Map<bigint, AllocationRecord>();
  const allRefused = new Set([ip('10.0.0.10'), ip('10.0.0.11')]);
  assert.equal(
    shown(claimAddress(empty, address('x'), { resting: new Set([ip('10.0.0.12')]) }, allRefused, undefined, small)),
    'exhausted',
  );
  const quad = ownSpace({ addresses: ['10.0.0.8/30'], prefix: 24 });
  const withPrefix = new Map([[ip('10.0.0.8'), claimRecord(prefix('pc', 30), AT)]]);
  assert.equal(shown(claimAddress(withPrefix, address('x'), {}, undefined, undefined, quad)), 'exhausted');
  const none = ownSpace({ addresses: ['10.0.0.0'], prefix: 24 });
  assert.equal(none.total, 0n);
  assert.equal(shown(claimAddress(new Map(), address('x'), {}, undefined, undefined, none)), 'exhausted');
});

test("planAddressClaim() in a network pool takes the pool's addresses only, around the pods", () => {
  const nad = {
    metadata: { namespace: 'default', name: 'net' },
    spec: {
      config: JSON.stringify({
        cniVersion: '1.0.0',
        name: 'n',
        type: 'macvlan',
        ipam: { type: 'hereabouts', range: '10.0.0.0/24', exclude: ['10.0.0.102/32'] },
      }),
    },
  };
  const space = claimSpaceOf(
    { kind: 'AddressPool', namespace: 'default', name: 'p' },
    parsePoolSpec({ network: { nad: { name: 'net' } }, addresses: ['10.0.0.100-10.0.0.103'] }, 'default'),
    networkConfigsOf(nad),
  );
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.1'), pod('a')],
    [ip('10.0.0.2'), pod('b')],
    [ip('10.0.0.100'), pod('c')],
  ]);
  const got = ['a', 'b', 'c'].map((name) =>
    shown(claimAddress(current, address(name), {}, undefined, undefined, space)),
  );
  assert.deepEqual(got, ['held 10.0.0.101 claimed', 'held 10.0.0.103 claimed', 'exhausted']);
});

// ---------------------------------------------------------------------------------------------------------------
// planPrefixClaim

test('planPrefixClaim() takes the lowest aligned free block inside the pool, and holds it again with no change', () => {
  const current = new Map<bigint, AllocationRecord>();
  // 10.0.0.0/30 holds the network address: the first /30 is 10.0.0.4/30.
  const first = claimPrefix(current, prefix('a', 30));
  assert.equal(shown(first), 'held 10.0.0.4/30 claimed');
  assert.deepEqual(first.change, { claim: { address: ip('10.0.0.4'), record: claimRecord(prefix('a', 30), AT) } });
  assert.equal(shown(claimPrefix(current, prefix('b', 30))), 'held 10.0.0.8/30 claimed');
  assert.equal(shown(claimPrefix(current, prefix('c', 29))), 'held 10.0.0.16/29 claimed');
  current.set(ip('10.0.0.25'), claimRecord(address('m'), AT));
  assert.equal(shown(claimPrefix(current, prefix('d', 29))), 'held 10.0.0.32/29 claimed', 'around an address claim');
  current.set(ip('10.0.0.40'), pod('p'));
  assert.equal(shown(claimPrefix(current, prefix('e', 30))), 'held 10.0.0.12/30 claimed');
  // Again: what it holds, whatever is asked now.
  for (const cidr of [undefined, '10.0.0.200/30']) {
    const again = claimPrefix(current, prefix('a', 30), cidr);
    assert.equal(again.change, null);
    assert.equal(shown(again), 'held 10.0.0.4/30');
  }
  // A /25 would hold the network or the broadcast address: none fits.
  assert.equal(shown(claimPrefix(new Map(), prefix('big', 25))), 'exhausted');
  const all = ownSpace({ addresses: ['10.0.0.0/24'], prefix: 24, allocateReservedIPAddresses: true });
  assert.equal(shown(claimPrefix(new Map(), prefix('big', 25), undefined, undefined, all)), 'held 10.0.0.0/25 claimed');
  assert.equal(shown(claimPrefix(new Map(), prefix('all', 24), undefined, undefined, all)), 'held 10.0.0.0/24 claimed');
});

test('planPrefixClaim() of an exact CIDR: free, taken, outside, misaligned', () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.33'), claimRecord(address('m'), AT)],
    [ip('10.0.0.64'), claimRecord(prefix('other', 27), AT)],
    [ip('10.0.0.200'), pod('p')],
  ]);
  const exact = (cidr: string, refused?: Set<bigint>) => claimPrefix(current, prefix(`x-${cidr}`, 28), cidr, refused);
  assert.equal(shown(exact('10.0.0.32/28')), 'taken 10.0.0.32/28', 'holds an address claim');
  assert.equal(shown(exact('10.0.0.80/28')), 'taken 10.0.0.80/28', 'inside a prefix claim');
  assert.equal(shown(exact('10.0.0.64/26')), 'taken 10.0.0.64/26', 'around a prefix claim');
  assert.equal(shown(exact('10.0.0.192/28')), 'taken 10.0.0.192/28', "holds a pod's address");
  assert.equal(shown(exact('10.0.0.16/28', new Set([ip('10.0.0.20')]))), 'taken 10.0.0.16/28', 'refused');
  assert.equal(shown(exact('10.0.0.0/28')), 'outside 10.0.0.0/28', 'holds the network address');
  assert.equal(shown(exact('10.0.0.240/28')), 'outside 10.0.0.240/28', 'holds the broadcast address');
  assert.equal(shown(exact('10.0.1.0/28')), 'outside 10.0.1.0/28');
  assert.equal(shown(exact('10.0.0.0/23')), 'outside 10.0.0.0/23');
  assert.equal(shown(exact('10.0.0.20/28')), 'misaligned 10.0.0.20/28');
  for (const cidr of ['10.0.0.32/28', '10.0.0.0/28', '10.0.0.20/28']) assert.equal(exact(cidr).change, null);
  const free = exact('10.0.0.16/28');
  assert.equal(shown(free), 'held 10.0.0.16/28 claimed');
  assert.equal(current.get(ip('10.0.0.16'))?.containerId, 'hereabouts-prefix:28:default/x-10.0.0.16/28');
});

test('planPrefixClaim() skips blocks holding a refused address', () => {
  const current = new Map<bigint, AllocationRecord>();
  assert.equal(
    shown(claimPrefix(current, prefix('a', 30), undefined, new Set([ip('10.0.0.6')]))),
    'held 10.0.0.8/30 claimed',
  );
  assert.equal(
    shown(claimPrefix(current, prefix('b', 28), undefined, new Set([ip('10.0.0.17'), ip('10.0.0.32')]))),
    'held 10.0.0.48/28 claimed',
  );
});

test('planPrefixClaim() around excluded addresses and the gateway of the pool', () => {
  const space = ownSpace({
    addresses: ['10.0.0.0/24'],
    prefix: 24,
    gateway: '10.0.0.1',
    excludedAddresses: ['10.0.0.9'],
  });
  const current = new Map<bigint, AllocationRecord>();
  assert.equal(shown(claimPrefix(current, prefix('a', 30), undefined, undefined, space)), 'held 10.0.0.4/30 claimed');
  assert.equal(shown(claimPrefix(current, prefix('b', 30), undefined, undefined, space)), 'held 10.0.0.12/30 claimed');
  assert.equal(shown(claimPrefix(current, prefix('c', 31), undefined, undefined, space)), 'held 10.0.0.2/31 claimed');
  assert.equal(shown(claimPrefix(current, prefix('d', 31), '10.0.0.8/31', undefined, space)), 'outside 10.0.0.8/31');
});

// ---------------------------------------------------------------------------------------------------------------
// planClaimRelease

test("planClaimRelease() releases that holder's records only, address or prefix", () => {
  const current = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.1'), claimRecord(address('m'), AT)],
    [ip('10.0.0.2'), claimRecord(address('m', 'other'), AT)],
    [ip('10.0.0.3'), claimRecord(address('n'), AT)],
    [ip('10.0.0.4'), claimRecord(prefix('m', 30), AT)],
    [ip('10.0.0.9'), claimRecord(address('m'), AT)], // a second record of the same claim (should never be)
    [ip('10.0.0.10'), pod('m')],
    [ip('10.0.0.11'), warmRecord('m', '10.0.0.0-24', 's', AT)],
  ]);
  const released = commit(current, planClaimRelease(address('m')));
  assert.deepEqual(released.value, [ip('10.0.0.1'), ip('10.0.0.9')]);
  assert.deepEqual(released.change, { release: [ip('10.0.0.1'), ip('10.0.0.9')] });
  assert.deepEqual([...current.keys()].map(text), ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.10', '10.0.0.11']);
  // The prefix claim, whatever length its release names.
  const prefixReleased = commit(current, planClaimRelease(prefix('m', 24)));
  assert.deepEqual(prefixReleased.value, [ip('10.0.0.4')]);
  assert.equal(current.has(ip('10.0.0.4')), false);
  // Nothing held: nothing to write.
  const again = commit(current, planClaimRelease(address('m')));
  assert.equal(again.change, null);
  assert.deepEqual(again.value, []);
  assert.deepEqual([...current.keys()].map(text), ['10.0.0.2', '10.0.0.3', '10.0.0.10', '10.0.0.11']);
});

// ---------------------------------------------------------------------------------------------------------------
// Pool status

function viewOf(allocations: Map<bigint, AllocationRecord>): PoolView {
  return {
    name: 'pool',
    uid: 'u',
    resourceVersion: '1',
    generation: 1,
    allocations,
    allocatedAt: new Map(),
    capacity: 0n,
    free: 0n,
    status: { conditions: [] },
    retired: false,
    problems: [],
  };
}

test("poolCounts() counts pods' records and claims, prefix blocks clipped to the pool's addresses", () => {
  // 10.0.0.10-10.0.0.20 less 10.0.0.15: 10 addresses.
  const space = ownSpace({ addresses: ['10.0.0.10-10.0.0.20'], prefix: 24, excludedAddresses: ['10.0.0.15'] });
  assert.equal(space.total, 10n);
  const allocations = new Map<bigint, AllocationRecord>([
    [ip('10.0.0.10'), pod('a')],
    [ip('10.0.0.11'), claimRecord(address('m'), AT)],
    [ip('10.0.0.12'), claimRecord(prefix('p4', 30), AT)], // 12-15: 15 is excluded, 3 count
    [ip('10.0.0.16'), claimRecord(prefix('p8', 29), AT)], // 16-23: 16-20 count
    [ip('10.0.0.100'), pod('far')], // not an address of the pool
    [ip('10.0.0.5'), warmRecord('n', 'x', 's', AT)], // nor this
  ]);
  const counts = poolCounts(space, viewOf(allocations), claimsIn(viewOf(allocations)));
  // Both blocks are out of range as wholes (one holds the excluded .15, one reaches past .20): reported, still counted.
  assert.deepEqual(counts, {
    total: 10n,
    used: 10n,
    free: 0n,
    outOfRange: ['PrefixClaim default/p4 (10.0.0.12)', 'PrefixClaim default/p8 (10.0.0.16)'],
  });
  allocations.delete(ip('10.0.0.16'));
  assert.deepEqual(poolCounts(space, viewOf(allocations), []), { total: 10n, used: 5n, free: 5n, outOfRange: [] });
  assert.deepEqual(poolCounts(space, undefined, []), { total: 10n, used: 0n, free: 10n, outOfRange: [] });
});

test('poolCounts() lists the claims whose address left the pool; claimsIn() finds the claims of an IPPool', () => {
  const before = ownSpace({ addresses: ['10.0.0.0/24'], prefix: 24 });
  const current = new Map<bigint, AllocationRecord>([[ip('10.0.0.99'), pod('p')]]);
  claimAddress(current, address('m1'), {}, undefined, undefined, before); // 10.0.0.1
  claimAddress(current, address('m2'), { wanted: ip('10.0.0.50') }, undefined, undefined, before);
  claimPrefix(current, prefix('pc', 30), '10.0.0.200/30', undefined, before);
  const view = viewOf(current);
  const claims = claimsIn(view);
  assert.deepEqual(claims.map((c) => `${c.claim} ${text(c.address)}`).sort(), [
    'IPAddressClaim default/m1 10.0.0.1',
    'IPAddressClaim default/m2 10.0.0.50',
    'PrefixClaim default/pc 10.0.0.200',
  ]);
  assert.deepEqual(poolCounts(before, view, claims).outOfRange, []);
  // The pool shrank to 10.0.0.40-10.0.0.60: m1 and the prefix are out, m2 is in; the pod counts, not as a claim.
  const after = ownSpace({ addresses: ['10.0.0.40-10.0.0.60'], prefix: 24, excludedAddresses: ['10.0.0.99'] });
  const counts = poolCounts(after, view, claims);
  assert.deepEqual([...counts.outOfRange].sort(), [
    'IPAddressClaim default/m1 (10.0.0.1)',
    'PrefixClaim default/pc (10.0.0.200)',
  ]);
  assert.equal(counts.used, 1n);
  assert.equal(counts.free, 20n);
  assert.deepEqual(claimsIn(undefined), []);
});

test('poolCounts() lists a prefix claim whose block now reaches outside the pool', () => {
  const space = ownSpace({ addresses: ['10.0.0.1-10.0.0.9'], prefix: 24 });
  const view = viewOf(new Map([[ip('10.0.0.8'), claimRecord(prefix('pc', 30), AT)]]));
  assert.deepEqual(poolCounts(space, view, claimsIn(view)).outOfRange, ['PrefixClaim default/pc (10.0.0.8)']);
});

// ---------------------------------------------------------------------------------------------------------------
// parsePrefixRequest, ourPoolRef

test('parsePrefixRequest() reads a length or a CIDR from a hereabouts pool', () => {
  assert.deepEqual(parsePrefixRequest({ poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: 28 }), {
    pool: { kind: 'AddressPool', name: 'p' },
    prefixLength: 28,
  });
  assert.deepEqual(parsePrefixRequest({ poolRef: { kind: 'GlobalAddressPool', name: 'g' }, cidr: '10.0.0.16/28' }), {
    pool: { kind: 'GlobalAddressPool', name: 'g' },
    cidr: parseCidr('10.0.0.16/28'),
  });
});

const BAD_PREFIX_REQUESTS: Array<[string, unknown, RegExp]> = [
  ['no spec', undefined, /^spec\.poolRef\.kind undefined must be one of AddressPool, GlobalAddressPool$/],
  [
    'another kind',
    { poolRef: { kind: 'InClusterIPPool', name: 'p' }, prefixLength: 28 },
    /^spec\.poolRef\.kind "InClusterIPPool" must be one of AddressPool, GlobalAddressPool$/,
  ],
  [
    'a kind in lower case',
    { poolRef: { kind: 'addresspool', name: 'p' }, prefixLength: 28 },
    /^spec\.poolRef\.kind "addresspool" must be one of/,
  ],
  [
    'no pool name',
    { poolRef: { kind: 'AddressPool' }, prefixLength: 28 },
    /^spec\.poolRef\.name undefined must name a pool$/,
  ],
  [
    'an empty pool name',
    { poolRef: { kind: 'AddressPool', name: '' }, prefixLength: 28 },
    /^spec\.poolRef\.name "" must name a pool$/,
  ],
  [
    'neither length nor CIDR',
    { poolRef: { kind: 'AddressPool', name: 'p' } },
    /^spec: give exactly one of prefixLength and cidr$/,
  ],
  [
    'both length and CIDR',
    { poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: 28, cidr: '10.0.0.0/28' },
    /^spec: give exactly one of prefixLength and cidr$/,
  ],
  [
    'a length past 128',
    { poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: 129 },
    /^spec\.prefixLength 129 must be a prefix length of 0-128$/,
  ],
  [
    'a negative length',
    { poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: -1 },
    /^spec\.prefixLength -1 must/,
  ],
  [
    'a fractional length',
    { poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: 27.5 },
    /^spec\.prefixLength 27\.5/,
  ],
  ['a length as text', { poolRef: { kind: 'AddressPool', name: 'p' }, prefixLength: '28' }, /^spec\.prefixLength "28"/],
  [
    'a CIDR without a prefix',
    { poolRef: { kind: 'AddressPool', name: 'p' }, cidr: '10.0.0.16' },
    /^spec\.cidr "10\.0\.0\.16": invalid CIDR .*missing \/prefix$/,
  ],
  [
    'a CIDR that is not one',
    { poolRef: { kind: 'AddressPool', name: 'p' }, cidr: 'ten/28' },
    /^spec\.cidr "ten\/28": invalid CIDR/,
  ],
  ['a CIDR as a number', { poolRef: { kind: 'AddressPool', name: 'p' }, cidr: 28 }, /^spec\.cidr 28: invalid CIDR/],
];

for (const [what, spec, message] of BAD_PREFIX_REQUESTS) {
  test(`parsePrefixRequest() refuses ${what}, naming the field`, () => {
    assert.throws(
      () => parsePrefixRequest(spec),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
  });
}

test('ourPoolRef() answers only for hereabouts.cni.cncf.io AddressPool and GlobalAddressPool', () => {
  const claim = (poolRef: unknown) => ({ spec: { poolRef } });
  const GROUP = 'hereabouts.cni.cncf.io';
  assert.deepEqual(ourPoolRef(claim({ apiGroup: GROUP, kind: 'AddressPool', name: 'p' })), {
    kind: 'AddressPool',
    name: 'p',
  });
  assert.deepEqual(ourPoolRef(claim({ apiGroup: GROUP, kind: 'GlobalAddressPool', name: 'g' })), {
    kind: 'GlobalAddressPool',
    name: 'g',
  });
  const others: unknown[] = [
    claim({ apiGroup: 'ipam.cluster.x-k8s.io', kind: 'InClusterIPPool', name: 'p' }),
    claim({ apiGroup: 'ipam.cluster.x-k8s.io', kind: 'AddressPool', name: 'p' }),
    claim({ apiGroup: GROUP, kind: 'InClusterIPPool', name: 'p' }),
    claim({ apiGroup: GROUP, kind: 'addresspool', name: 'p' }),
    claim({ apiGroup: GROUP, kind: 'PrefixClaim', name: 'p' }),
    claim({ apiGroup: `${GROUP}/v1alpha1`, kind: 'AddressPool', name: 'p' }),
    claim({ kind: 'AddressPool', name: 'p' }),
    claim({ apiGroup: GROUP, kind: 'AddressPool' }),
    claim({ apiGroup: GROUP, kind: 'AddressPool', name: '' }),
    claim(undefined),
    { spec: null },
    {},
    null,
    'AddressPool',
  ];
  for (const object of others) assert.equal(ourPoolRef(object), undefined, JSON.stringify(object));
});

// ---------------------------------------------------------------------------------------------------------------
// Property: random claims and releases through the plans never overlap and stay in the pool

interface Held {
  readonly holder: ClaimHolder;
  readonly block: Block;
}

/** Every claim record of the pool with its block; pods' records as single addresses. */
function recordsOf(current: ReadonlyMap<bigint, AllocationRecord>): Array<{ record: AllocationRecord; block: Block }> {
  return [...current]
    .map(([first, record]) => {
      const length = claimHolder(record)?.prefixLength;
      const size = length === undefined ? 1n : 1n << BigInt(32 - length);
      return { record, block: { first, last: first + size - 1n } };
    })
    .sort((x, y) => (x.block.first < y.block.first ? -1 : 1));
}

const inside = (blocks: readonly Block[], block: Block): boolean =>
  blocks.some((b) => block.first >= b.first && block.last <= b.last);

/** Brute force: the lowest address of the space not held, refused or resting. */
function lowestFree(space: ClaimSpace, current: ReadonlyMap<bigint, AllocationRecord>, avoid: ReadonlySet<bigint>) {
  const held = new Set<bigint>();
  for (const { block } of recordsOf(current)) for (let v = block.first; v <= block.last; v++) held.add(v);
  for (const block of space.blocks)
    for (let v = block.first; v <= block.last; v++) if (!avoid.has(v) && !held.has(v)) return v;
  return undefined;
}

/** Brute force: the lowest aligned free block of the length. */
function lowestFreeBlock(
  space: ClaimSpace,
  current: ReadonlyMap<bigint, AllocationRecord>,
  refused: ReadonlySet<bigint>,
  length: number,
): bigint | undefined {
  const size = 1n << BigInt(32 - length);
  const held = recordsOf(current).map((r) => r.block);
  const base = ip('10.0.0.0');
  for (let first = base; first + size - 1n <= base + 255n; first += size) {
    const block = { first, last: first + size - 1n };
    if (!inside(space.blocks, block)) continue;
    if (held.some((h) => h.first <= block.last && h.last >= block.first)) continue;
    let clear = true;
    for (const r of refused) if (r >= block.first && r <= block.last) clear = false;
    if (clear) return first;
  }
  return undefined;
}

function checkInvariants(space: ClaimSpace, current: ReadonlyMap<bigint, AllocationRecord>, where: string): void {
  const records = recordsOf(current);
  const shownRecord = (r: { record: AllocationRecord; block: Block }) =>
    `${r.record.containerId} ${text(r.block.first)}-${text(r.block.last)}`;
  for (let i = 1; i < records.length; i++) {
    const before = records[i - 1];
    const after = records[i];
    assert.ok(before !== undefined && after !== undefined);
    if (after.block.first <= before.block.last)
      assert.fail(`${where}: ${shownRecord(before)} overlaps ${shownRecord(after)}`);
  }
  for (const r of records)
    if (!inside(space.blocks, r.block)) assert.fail(`${where}: ${shownRecord(r)} is outside the pool`);
  // One record per holder.
  const holders = records.flatMap(({ record }) => {
    const h = claimHolder(record);
    return h === undefined ? [] : [`${h.kind} ${holderKey(h)}`];
  });
  if (new Set(holders).size !== holders.length) assert.fail(`${where}: a holder with two records`);
}

const SPACES: Array<[string, ClaimSpace]> = [
  ['a /24 without reserved addresses', SPACE],
  ['a whole /24', ownSpace({ addresses: ['10.0.0.0/24'], prefix: 24, allocateReservedIPAddresses: true })],
  [
    'a /24 with holes',
    ownSpace({
      addresses: ['10.0.0.0/24'],
      prefix: 24,
      gateway: '10.0.0.1',
      excludedAddresses: ['10.0.0.64/28', '10.0.0.130-10.0.0.141', '10.0.0.200'],
    }),
  ],
];

for (const [name, space] of SPACES) {
  test(`random address claims, prefix claims and releases in ${name} never overlap and stay in the pool`, () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 15; seed++) {
      const rng = new Prng(seed * 7919 + name.length);
      const current = new Map<bigint, AllocationRecord>();
      const live: Held[] = [];
      let next = 0;
      for (let step = 0; step < 300; step++) {
        const where = `seed ${seed} step ${step}`;
        const refused = new Set<bigint>();
        if (rng.chance(0.3)) for (let i = rng.int(4); i > 0; i--) refused.add(ip('10.0.0.0') + BigInt(rng.int(256)));
        // Phases of filling (no releases) and of churn, so the pool runs full as well as fragmented.
        const filling = Math.floor(step / 100) % 2 === 0;
        const [toAddress, toPrefix, toRelease] = filling ? [0.55, 0.95, 0.95] : [0.25, 0.45, 0.95];
        const roll = rng.next();
        if (roll < toAddress) {
          // An address claim: a new one, or one again.
          const again = live.length > 0 && rng.chance(0.15) ? rng.pick(live) : undefined;
          const holder = again?.holder.kind === 'IPAddressClaim' ? again.holder : address(`m${next++}`);
          const resting = new Set<bigint>();
          if (rng.chance(0.3)) for (let i = rng.int(3); i > 0; i--) resting.add(ip('10.0.0.0') + BigInt(rng.int(256)));
          const wanted = rng.chance(0.2) ? ip('10.0.0.0') + BigInt(rng.int(300)) : undefined;
          const hints = rng.chance(0.2) ? { reserved: new Set([ip('10.0.0.0') + BigInt(rng.int(256))]) } : undefined;
          const holding = heldBy(current, holder);
          const expected =
            wanted === undefined && hints === undefined
              ? lowestFree(space, current, new Set([...refused, ...resting]))
              : undefined;
          const planned = claimAddress(
            current,
            holder,
            { ...(wanted === undefined ? {} : { wanted }), resting },
            refused,
            hints,
            space,
          );
          const v = planned.value;
          seen.add(`address ${v.kind}`);
          if (holding !== undefined) {
            assert.deepEqual(v, { kind: 'held', address: holding, claimed: false }, where);
            assert.equal(planned.change, null, where);
          } else if (v.kind === 'held') {
            assert.ok(v.claimed, where);
            assert.ok(!refused.has(v.address), `${where}: took refused ${text(v.address)}`);
            if (wanted !== undefined) assert.equal(v.address, wanted, where);
            else assert.ok(!resting.has(v.address), `${where}: took resting ${text(v.address)}`);
            if (expected !== undefined) assert.equal(text(v.address), text(expected), `${where}: not the lowest free`);
            live.push({ holder, block: { first: v.address, last: v.address } });
          } else if (v.kind === 'exhausted') {
            assert.equal(wanted, undefined, where);
            const avoid = new Set([...refused, ...resting]);
            assert.equal(lowestFree(space, current, avoid), undefined, `${where}: exhausted with a free address`);
          } else {
            assert.notEqual(v.kind, 'blocked', `${where}: blocked although claimable`);
            if (v.kind === 'blocked') continue;
            assert.equal(v.address, wanted, where);
            const isIn = space.blocks.some((b) => v.address >= b.first && v.address <= b.last);
            assert.equal(v.kind === 'outside', !isIn, where);
          }
        } else if (roll < toPrefix) {
          const length = 26 + rng.int(5);
          const holder = prefix(`p${next++}`, length);
          const size = 1n << BigInt(32 - length);
          let cidr: string | undefined;
          if (rng.chance(0.3)) {
            const first = ip('10.0.0.0') + (BigInt(rng.int(300)) / size) * size + (rng.chance(0.1) ? 1n : 0n);
            cidr = `${text(first)}/${length}`;
          }
          const expected = cidr === undefined ? lowestFreeBlock(space, current, refused, length) : undefined;
          const planned = claimPrefix(current, holder, cidr, refused, space);
          const v = planned.value;
          seen.add(`prefix ${v.kind}`);
          if (v.kind === 'held') {
            assert.equal(v.cidr.prefix, length, where);
            if (cidr !== undefined) assert.equal(formatCidr(v.cidr), cidr, where);
            else assert.equal(text(v.cidr.address), text(expected ?? -1n), `${where}: not the lowest free block`);
            live.push({ holder, block: { first: v.cidr.address, last: v.cidr.address + size - 1n } });
          } else if (v.kind === 'exhausted') {
            assert.equal(expected, undefined, `${where}: exhausted with a free /${length}`);
          } else {
            assert.ok(cidr !== undefined, where);
            assert.equal(planned.change, null, where);
          }
        } else if (roll < toRelease && live.length > 0) {
          const i = rng.int(live.length);
          const gone = live[i];
          assert.ok(gone !== undefined);
          live.splice(i, 1);
          const planned = commit(current, planClaimRelease(gone.holder));
          assert.deepEqual(planned.value, [gone.block.first], where);
          assert.equal(heldBy(current, gone.holder), undefined, where);
          seen.add('release');
        } else {
          // A record the plans did not write (a hand edit, a pod): only ever on a free address of the pool.
          const free = lowestFree(space, current, new Set());
          if (free !== undefined) current.set(free, pod(`x${next++}`));
        }
        checkInvariants(space, current, where);
        // Everything live is where it was claimed, and nothing else is a claim's.
        const claimed = new Map<string, bigint>();
        for (const [at, record] of current) {
          const h = claimHolder(record);
          if (h !== undefined) claimed.set(`${h.kind} ${holderKey(h)}`, at);
        }
        assert.equal(claimed.size, live.length, where);
        for (const held of live)
          assert.equal(claimed.get(`${held.holder.kind} ${holderKey(held.holder)}`), held.block.first, where);
      }
    }
    // The runs went where the plans decide something: every outcome was met.
    const outcomes = ['held', 'exhausted', 'taken', 'outside'].map((k) => `address ${k}`);
    outcomes.push(...['held', 'exhausted', 'taken', 'outside', 'misaligned'].map((k) => `prefix ${k}`), 'release');
    assert.deepEqual(
      outcomes.filter((o) => !seen.has(o)),
      [],
    );
  });
}
