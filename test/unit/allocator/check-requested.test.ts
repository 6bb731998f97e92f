import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRequested } from '../../../src/allocator/check-requested.ts';
import { ip, ips, none, rangeOf, record } from './range-fixture.ts';

const noRefusals: ReadonlySet<bigint> = new Set();
const range = rangeOf('10.0.0.0/24', {
  start: '10.0.0.10',
  end: '10.0.0.200',
  exclude: ['10.0.0.48/28', '10.0.0.50', '10.0.0.100'],
  gateway: '10.0.0.11',
});
const span = { first: ip('10.0.0.10'), last: ip('10.0.0.200') };

test('checkRequested() grants a free address', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.12')), { ok: true });
});

test('checkRequested() grants range_start and range_end themselves', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.10')), { ok: true });
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.200')), { ok: true });
});

test('checkRequested() refuses an address of the CIDR below range_start as outside-range', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.9')), {
    ok: false,
    reason: 'outside-range',
    span,
  });
});

test('checkRequested() refuses an address of the CIDR above range_end as outside-range', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.201')), {
    ok: false,
    reason: 'outside-range',
    span,
  });
});

test('checkRequested() refuses the network address as outside-range', () => {
  const verdict = checkRequested(rangeOf('10.0.0.0/24'), none, noRefusals, ip('10.0.0.0'));
  assert.deepEqual(verdict, {
    ok: false,
    reason: 'outside-range',
    span: { first: ip('10.0.0.1'), last: ip('10.0.0.254') },
  });
});

test('checkRequested() refuses the broadcast address as outside-range', () => {
  assert.equal(checkRequested(rangeOf('10.0.0.0/24'), none, noRefusals, ip('10.0.0.255')).ok, false);
});

test('checkRequested() refuses an address of another prefix as outside-range', () => {
  const verdict = checkRequested(range, none, noRefusals, ip('192.168.0.12'));
  assert.equal(!verdict.ok && verdict.reason, 'outside-range');
});

test('checkRequested() refuses an excluded address and names the configured block', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.60')), {
    ok: false,
    reason: 'excluded',
    block: { first: ip('10.0.0.48'), last: ip('10.0.0.63') },
  });
});

test('checkRequested() refuses a single-IP exclude', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.100')), {
    ok: false,
    reason: 'excluded',
    block: { first: ip('10.0.0.100'), last: ip('10.0.0.100') },
  });
});

test('checkRequested() refuses the gateway', () => {
  assert.deepEqual(checkRequested(range, none, noRefusals, ip('10.0.0.11')), { ok: false, reason: 'gateway' });
});

test('checkRequested() refuses an allocated address and returns its holder', () => {
  assert.deepEqual(checkRequested(range, ips('10.0.0.12'), noRefusals, ip('10.0.0.12')), {
    ok: false,
    reason: 'taken',
    holder: record,
  });
});

test('checkRequested() refuses an address reserved elsewhere as taken without a holder', () => {
  assert.deepEqual(checkRequested(range, none, new Set([ip('10.0.0.12')]), ip('10.0.0.12')), {
    ok: false,
    reason: 'taken',
  });
});

test('checkRequested() reports an excluded address as excluded even when it is allocated', () => {
  const verdict = checkRequested(range, ips('10.0.0.100'), noRefusals, ip('10.0.0.100'));
  assert.equal(!verdict.ok && verdict.reason, 'excluded');
});

test('checkRequested() grants the single address of a /32', () => {
  assert.deepEqual(checkRequested(rangeOf('10.0.0.9/32'), none, noRefusals, ip('10.0.0.9')), { ok: true });
});

test('checkRequested() grants both addresses of a /127', () => {
  const r = rangeOf('fd00::4/127');
  assert.deepEqual(checkRequested(r, none, noRefusals, ip('fd00::4')), { ok: true });
  assert.deepEqual(checkRequested(r, none, noRefusals, ip('fd00::5')), { ok: true });
});

test('checkRequested() grants the second-to-last address of an IPv6 /64 and refuses the last', () => {
  const r = rangeOf('fd00::/64');
  assert.deepEqual(checkRequested(r, none, noRefusals, ip('fd00::ffff:ffff:ffff:fffe')), { ok: true });
  const last = checkRequested(r, none, noRefusals, ip('fd00::ffff:ffff:ffff:ffff'));
  assert.equal(!last.ok && last.reason, 'outside-range');
});
