import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP, parseIP, type Family } from '../../../src/ip/address.ts';
import { formatCidr, parseCidr } from '../../../src/ip/cidr.ts';
import { clampSpan, offsetOf, parseExcludeText, parseRangeText, usableSpan, valueAt } from '../../../src/ip/range.ts';
import type { Block } from '../../../src/ip/block.ts';

const ip = (text: string): bigint => parseIP(text).value;
const span = (first: string, last: string): Block => ({ first: ip(first), last: ip(last) });
const text = (family: Family, value: bigint): string => formatIP({ family, value });

// usableSpan

test('usableSpan() of an IPv4 /24 drops the network and broadcast addresses', () => {
  assert.deepEqual(usableSpan(parseCidr('10.0.0.0/24')), span('10.0.0.1', '10.0.0.254'));
});

test('usableSpan() of an IPv4 /30 holds the two middle addresses', () => {
  assert.deepEqual(usableSpan(parseCidr('10.0.0.4/30')), span('10.0.0.5', '10.0.0.6'));
});

test('usableSpan() ignores host bits of the prefix', () => {
  assert.deepEqual(usableSpan(parseCidr('10.0.0.77/24')), span('10.0.0.1', '10.0.0.254'));
});

test('usableSpan() of an IPv4 /31 holds both addresses', () => {
  assert.deepEqual(usableSpan(parseCidr('10.0.0.6/31')), span('10.0.0.6', '10.0.0.7'));
});

test('usableSpan() of an IPv4 /32 is the single address', () => {
  assert.deepEqual(usableSpan(parseCidr('10.0.0.9/32')), span('10.0.0.9', '10.0.0.9'));
});

test('usableSpan() of 0.0.0.0/0 is 0.0.0.1 to 255.255.255.254', () => {
  const s = usableSpan(parseCidr('0.0.0.0/0'));
  assert.deepEqual(s, span('0.0.0.1', '255.255.255.254'));
  assert.equal(s.last - s.first + 1n, 2n ** 32n - 2n);
});

test('usableSpan() of an IPv6 /64 drops the first and the last address', () => {
  assert.deepEqual(usableSpan(parseCidr('fd00::/64')), span('fd00::1', 'fd00::ffff:ffff:ffff:fffe'));
});

test('usableSpan() of an IPv6 /127 holds both addresses', () => {
  assert.deepEqual(usableSpan(parseCidr('fd00::4/127')), span('fd00::4', 'fd00::5'));
});

test('usableSpan() of an IPv6 /128 is the single address', () => {
  assert.deepEqual(usableSpan(parseCidr('fd00::9/128')), span('fd00::9', 'fd00::9'));
});

test('usableSpan() of ::/0 is ::1 to ffff:…:fffe', () => {
  const s = usableSpan(parseCidr('::/0'));
  assert.equal(text(6, s.first), '::1');
  assert.equal(text(6, s.last), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe');
  assert.equal(s.last - s.first + 1n, 2n ** 128n - 2n);
});

// clampSpan

const slash24 = span('10.0.0.1', '10.0.0.254');

test('clampSpan() without bounds is the usable span', () => {
  assert.deepEqual(clampSpan(slash24, {}), { block: slash24, ignored: [] });
});

test('clampSpan() applies a start and an end inside the span', () => {
  assert.deepEqual(clampSpan(slash24, { start: ip('10.0.0.10'), end: ip('10.0.0.20') }), {
    block: span('10.0.0.10', '10.0.0.20'),
    ignored: [],
  });
});

test('clampSpan() accepts start equal to end', () => {
  assert.deepEqual(
    clampSpan(slash24, { start: ip('10.0.0.10'), end: ip('10.0.0.10') }).block,
    span('10.0.0.10', '10.0.0.10'),
  );
});

test('clampSpan() ignores a start on the network address', () => {
  assert.deepEqual(clampSpan(slash24, { start: ip('10.0.0.0') }), {
    block: slash24,
    ignored: [{ bound: 'start', value: ip('10.0.0.0'), reason: 'outside-span' }],
  });
});

test('clampSpan() ignores an end on the broadcast address', () => {
  assert.deepEqual(clampSpan(slash24, { end: ip('10.0.0.255') }), {
    block: slash24,
    ignored: [{ bound: 'end', value: ip('10.0.0.255'), reason: 'outside-span' }],
  });
});

test('clampSpan() ignores an end before the start, as Whereabouts does', () => {
  assert.deepEqual(clampSpan(slash24, { start: ip('10.0.0.20'), end: ip('10.0.0.10') }), {
    block: span('10.0.0.20', '10.0.0.254'),
    ignored: [{ bound: 'end', value: ip('10.0.0.10'), reason: 'before-start' }],
  });
});

test('clampSpan() ignores both bounds when both are outside', () => {
  const r = clampSpan(slash24, { start: ip('10.0.1.1'), end: ip('9.0.0.1') });
  assert.deepEqual(r.block, slash24);
  assert.deepEqual(
    r.ignored.map((i) => i.bound),
    ['start', 'end'],
  );
});

// parseRangeText

test('parseRangeText() reads a CIDR without start or end', () => {
  const r = parseRangeText('10.0.0.0/24');
  assert.equal(formatCidr(r.cidr), '10.0.0.0/24');
  assert.equal(r.start, undefined);
  assert.equal(r.end, undefined);
});

test('parseRangeText() masks host bits of a CIDR and implies no start (Whereabouts semantics)', () => {
  const r = parseRangeText('192.168.2.225/28');
  assert.equal(formatCidr(r.cidr), '192.168.2.224/28');
  assert.equal(r.start, undefined);
});

test('parseRangeText() reads an IPv6 CIDR', () => {
  const r = parseRangeText('fd00:1:2::/48');
  assert.deepEqual(r.cidr, { family: 6, address: ip('fd00:1:2::'), prefix: 48 });
});

test('parseRangeText() reads A-B/len as start, end and the prefix of B', () => {
  const r = parseRangeText('10.0.0.10-10.0.0.20/24');
  assert.equal(formatCidr(r.cidr), '10.0.0.0/24');
  assert.equal(r.start, ip('10.0.0.10'));
  assert.equal(r.end, ip('10.0.0.20'));
});

test('parseRangeText() reads an IPv6 A-B/len', () => {
  const r = parseRangeText('fd00::10-fd00::20/64');
  assert.equal(formatCidr(r.cidr), 'fd00::/64');
  assert.equal(r.start, ip('fd00::10'));
  assert.equal(r.end, ip('fd00::20'));
});

test('parseRangeText() keeps an inverted A-B/len for clampSpan to judge', () => {
  const r = parseRangeText('10.0.0.20-10.0.0.10/24');
  assert.equal(r.start, ip('10.0.0.20'));
  assert.equal(r.end, ip('10.0.0.10'));
});

test('parseRangeText() keeps network and broadcast bounds of A-B/len unclamped', () => {
  const r = parseRangeText('10.0.0.0-10.0.0.255/24');
  assert.equal(r.start, ip('10.0.0.0'));
  assert.equal(r.end, ip('10.0.0.255'));
});

const rejects = (input: string, type: typeof TypeError | typeof RangeError, message: string) => () =>
  assert.throws(
    () => parseRangeText(input),
    (e: unknown) => e instanceof type && e.message === message,
  );

test(
  'parseRangeText() rejects a bad address',
  rejects('10.0.0.300/24', TypeError, 'range "10.0.0.300/24": bad address "10.0.0.300"'),
);
test(
  'parseRangeText() rejects a missing prefix length',
  rejects('10.0.0.0', TypeError, 'range "10.0.0.0": missing /prefix length'),
);
test('parseRangeText() rejects an empty value', rejects('', TypeError, 'range "": missing /prefix length'));
test(
  'parseRangeText() rejects an IPv4 prefix over 32',
  rejects('10.0.0.0/33', TypeError, 'range "10.0.0.0/33": prefix length "33" is not 0-32'),
);
test(
  'parseRangeText() rejects an IPv6 prefix over 128',
  rejects('fd00::/129', TypeError, 'range "fd00::/129": prefix length "129" is not 0-128'),
);
test(
  'parseRangeText() rejects an empty prefix length',
  rejects('10.0.0.0/', TypeError, 'range "10.0.0.0/": prefix length "" is not 0-32'),
);
test(
  'parseRangeText() rejects a non-numeric prefix length',
  rejects('10.0.0.0/2x', TypeError, 'range "10.0.0.0/2x": prefix length "2x" is not 0-32'),
);
test(
  'parseRangeText() rejects a bad start address',
  rejects('10.0.0.x-10.0.0.20/24', TypeError, 'range "10.0.0.x-10.0.0.20/24": bad start address "10.0.0.x"'),
);
test(
  'parseRangeText() rejects a bad end address',
  rejects('10.0.0.10-10.0.0.x/24', TypeError, 'range "10.0.0.10-10.0.0.x/24": bad end address "10.0.0.x"'),
);
test(
  'parseRangeText() rejects A-/len without an end address',
  rejects('10.0.0.10-/24', TypeError, 'range "10.0.0.10-/24": bad end address ""'),
);
test(
  'parseRangeText() rejects A-B without a prefix length',
  rejects('10.0.0.10-10.0.0.20', TypeError, 'range "10.0.0.10-10.0.0.20": missing /prefix length'),
);
test(
  'parseRangeText() rejects a start outside the prefix of B',
  rejects('10.0.0.10-10.1.0.5/24', RangeError, 'range "10.0.0.10-10.1.0.5/24": start 10.0.0.10 is outside 10.1.0.0/24'),
);
test(
  'parseRangeText() rejects mixed families',
  rejects(
    '10.0.0.1-fd00::5/64',
    RangeError,
    'range "10.0.0.1-fd00::5/64": start 10.0.0.1 is IPv4 but fd00::/64 is IPv6',
  ),
);
test(
  'parseRangeText() rejects a zone index',
  rejects('fe80::1%eth0/64', TypeError, 'range "fe80::1%eth0/64": bad address "fe80::1%eth0"'),
);

// parseExcludeText

test('parseExcludeText() masks a CIDR: x.229/30 excludes .228 to .231', () => {
  assert.deepEqual(parseExcludeText('192.168.2.229/30'), { family: 4, block: span('192.168.2.228', '192.168.2.231') });
});

test('parseExcludeText() reads a single IPv4 address as a /32', () => {
  assert.deepEqual(parseExcludeText('10.0.0.7'), { family: 4, block: span('10.0.0.7', '10.0.0.7') });
});

test('parseExcludeText() reads a single IPv6 address as a /128', () => {
  assert.deepEqual(parseExcludeText('fd00::7'), { family: 6, block: span('fd00::7', 'fd00::7') });
});

test('parseExcludeText() reads an IPv6 CIDR', () => {
  assert.deepEqual(parseExcludeText('fd00::1:0/112'), { family: 6, block: span('fd00::1:0', 'fd00::1:ffff') });
});

test('parseExcludeText() rejects a bad address', () => {
  assert.throws(() => parseExcludeText('10.0.0.x'), {
    name: 'TypeError',
    message: 'exclude "10.0.0.x": bad address "10.0.0.x"',
  });
});

test('parseExcludeText() rejects a bad prefix length', () => {
  assert.throws(() => parseExcludeText('10.0.0.0/40'), {
    name: 'TypeError',
    message: 'exclude "10.0.0.0/40": prefix length "40" is not 0-32',
  });
});

// offsetOf / valueAt

test('offsetOf() is the distance from the network address', () => {
  assert.equal(offsetOf(parseCidr('10.0.0.0/24'), ip('10.0.0.5')), 5n);
});

test('offsetOf() measures from the masked network when the prefix has host bits', () => {
  assert.equal(offsetOf(parseCidr('10.0.0.200/24'), ip('10.0.0.5')), 5n);
});

test('offsetOf() of the network address is 0 and of the broadcast address is size-1', () => {
  const c = parseCidr('10.0.0.0/24');
  assert.equal(offsetOf(c, ip('10.0.0.0')), 0n);
  assert.equal(offsetOf(c, ip('10.0.0.255')), 255n);
});

test('offsetOf() and valueAt() round-trip offset 18446744073709551614 in a /64', () => {
  const c = parseCidr('fd00:0:0:7::/64');
  const v = valueAt(c, 18446744073709551614n);
  assert.equal(text(6, v), 'fd00::7:ffff:ffff:ffff:fffe');
  assert.equal(offsetOf(c, v), 18446744073709551614n);
});

test('offsetOf() and valueAt() round-trip the last address of a /48', () => {
  const c = parseCidr('fd00:1:2::/48');
  const offset = 2n ** 80n - 1n;
  assert.equal(text(6, valueAt(c, offset)), 'fd00:1:2:ffff:ffff:ffff:ffff:ffff');
  assert.equal(offsetOf(c, valueAt(c, offset)), offset);
});

test('valueAt() of ::/0 reaches the last IPv6 address', () => {
  assert.equal(text(6, valueAt(parseCidr('::/0'), 2n ** 128n - 1n)), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
});

test('valueAt() of 0.0.0.0/0 reaches 255.255.255.255', () => {
  assert.equal(text(4, valueAt(parseCidr('0.0.0.0/0'), 2n ** 32n - 1n)), '255.255.255.255');
});

test('valueAt() of a /32 has only offset 0', () => {
  const c = parseCidr('10.9.9.9/32');
  assert.equal(valueAt(c, 0n), ip('10.9.9.9'));
  assert.throws(() => valueAt(c, 1n), { name: 'RangeError', message: 'offset 1 is outside 10.9.9.9/32 (1 addresses)' });
});

test('offsetOf() rejects an address outside the prefix', () => {
  assert.throws(() => offsetOf(parseCidr('10.0.0.0/24'), ip('10.0.1.0')), {
    name: 'RangeError',
    message: 'address 10.0.1.0 is outside 10.0.0.0/24',
  });
});

test('offsetOf() rejects a value that is no address of the family', () => {
  assert.throws(() => offsetOf(parseCidr('0.0.0.0/0'), 2n ** 32n), {
    name: 'RangeError',
    message: 'address 4294967296 (not an IPv4 address) is outside 0.0.0.0/0',
  });
});

test('valueAt() rejects an offset past the prefix', () => {
  assert.throws(() => valueAt(parseCidr('10.0.0.0/24'), 256n), {
    name: 'RangeError',
    message: 'offset 256 is outside 10.0.0.0/24 (256 addresses)',
  });
});

test('valueAt() rejects a negative offset', () => {
  assert.throws(() => valueAt(parseCidr('fd00::/64'), -1n), {
    name: 'RangeError',
    message: 'offset -1 is outside fd00::/64 (18446744073709551616 addresses)',
  });
});
