import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';
import { parseReservationName, poolName, reservationName } from '../../../src/config/names.ts';

// Expected strings are Whereabouts' (pkg/storage/kubernetes: IPPoolName, normalizeRange, NormalizeIP).

test('poolName() of an IPv4 range on the unnamed network replaces "/" with "-"', () => {
  assert.equal(poolName(parseCidr('10.0.0.0/8')), '10.0.0.0-8');
});

test('poolName() prefixes network_name', () => {
  assert.equal(poolName(parseCidr('10.0.0.0/8'), { networkName: 'test' }), 'test-10.0.0.0-8');
});

test('poolName() treats an empty network_name as the unnamed network', () => {
  assert.equal(poolName(parseCidr('192.168.2.0/24'), { networkName: '' }), '192.168.2.0-24');
});

test('poolName() of an IPv6 range replaces every ":" and the "/"', () => {
  assert.equal(poolName(parseCidr('fd00::/64')), 'fd00---64');
  assert.equal(poolName(parseCidr('2001:db8:1::/48'), { networkName: 'v6net' }), 'v6net-2001-db8-1---48');
});

test('poolName() names the range by its masked network address, as net.IPNet.String() does', () => {
  assert.equal(poolName(parseCidr('10.0.0.77/24')), '10.0.0.0-24');
});

test('poolName() of a node slice is [network-]node-slice', () => {
  assert.equal(poolName(parseCidr('10.0.0.0/8'), { node: 'testnode' }), 'testnode-10.0.0.0-8');
  assert.equal(
    poolName(parseCidr('10.0.0.16/28'), { networkName: 'testnetwork', node: 'testnode' }),
    'testnetwork-testnode-10.0.0.16-28',
  );
});

test('reservationName() of an IPv4 address is the address', () => {
  assert.equal(reservationName(parseIP('10.0.0.5')), '10.0.0.5');
  assert.equal(reservationName(parseIP('10.0.0.5'), 'mynet'), 'mynet-10.0.0.5');
});

test('reservationName() of an IPv6 address replaces ":" with "-"', () => {
  assert.equal(reservationName(parseIP('fd00::5')), 'fd00--5');
  assert.equal(reservationName(parseIP('2001:db8:0:0:1:0:0:1')), '2001-db8--1-0-0-1');
});

test('reservationName() appends 0 to an address ending in "::"', () => {
  assert.equal(reservationName(parseIP('fd00::')), 'fd00--0');
  assert.equal(reservationName(parseIP('fd00::'), 'mynet'), 'mynet-fd00--0');
});

test('reservationName() prints an IPv4-mapped IPv6 address as a dotted quad, as Go does', () => {
  assert.equal(reservationName(parseIP('::ffff:10.1.2.3')), '10.1.2.3');
});

test('parseReservationName() reads an unprefixed IPv4 name', () => {
  assert.deepEqual(parseReservationName('10.0.0.5'), { ip: parseIP('10.0.0.5'), ambiguous: false });
});

test('parseReservationName() splits a network prefix containing dashes from an IPv4 address', () => {
  assert.deepEqual(parseReservationName('macvlan-net-10.0.0.5'), {
    ip: parseIP('10.0.0.5'),
    networkName: 'macvlan-net',
    ambiguous: false,
  });
});

test('parseReservationName() reads IPv6 names, including the trailing-0 form', () => {
  assert.deepEqual(parseReservationName('fd00--0'), { ip: parseIP('fd00::'), ambiguous: false });
  assert.deepEqual(parseReservationName('my-net-fd00--5'), {
    ip: parseIP('fd00::5'),
    networkName: 'my-net',
    ambiguous: false,
  });
});

test('parseReservationName() inverts reservationName() for "::"-only addresses with a prefix', () => {
  const name = reservationName(parseIP('::5'), 'net');
  assert.equal(name, 'net---5');
  assert.deepEqual(parseReservationName(name), { ip: parseIP('::5'), networkName: 'net', ambiguous: false });
});

test('parseReservationName() uses known network names to settle an ambiguous IPv6 name', () => {
  // "n-a-1--5" is n + a:1::5 or n-a + 1::5.
  const settled = parseReservationName('n-a-1--5', { networkNames: ['n'] });
  assert.deepEqual(settled, { ip: parseIP('a:1::5'), networkName: 'n', ambiguous: false });
  const guessed = parseReservationName('n-a-1--5');
  assert.equal(guessed?.ambiguous, true);
  assert.deepEqual(guessed.ip, parseIP('1::5'));
});

test('parseReservationName() rejects names that are not a canonically written address', () => {
  assert.equal(parseReservationName('mynet-10.0.0.0-24'), undefined);
  assert.equal(parseReservationName('fd00-0-0-0-0-0-0-5'), undefined);
  assert.equal(parseReservationName('010.0.0.5'), undefined);
  assert.equal(parseReservationName(''), undefined);
});
