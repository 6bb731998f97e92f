import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrevResult } from '../../../src/cni/prev-result.ts';
import { renderResult } from '../../../src/cni/result.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { formatCidr, parseCidr } from '../../../src/ip/cidr.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

function configError(pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof HereaboutsError, `expected HereaboutsError, got ${String(err)}`);
    assert.equal(cniCodeOf(err), 7);
    assert.match(err.message, pattern);
    return true;
  };
}

// A bridge plugin's 0.4.0 result around our IPAM answer: interfaces and ips[].interface filled in.
const bridge040 = {
  cniVersion: '0.4.0',
  interfaces: [
    { name: 'cni0', mac: '0a:58:0a:01:02:01' },
    { name: 'eth0', mac: '0a:58:0a:01:02:05', sandbox: '/var/run/netns/x' },
  ],
  ips: [
    { version: '4', interface: 1, address: '10.1.2.5/24', gateway: '10.1.2.1' },
    { version: '6', interface: 1, address: '2001:db8::5/64' },
  ],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: {},
};

test('parsePrevResult() reads a 0.4.0 bridge result', () => {
  const prev = parsePrevResult(bridge040, '0.4.0');
  assert.equal(prev.cniVersion, '0.4.0');
  assert.deepEqual(
    prev.ips.map((ip) => formatCidr(ip.address)),
    ['10.1.2.5/24', '2001:db8::5/64'],
  );
  assert.equal(prev.ips[0]?.gateway === undefined ? undefined : formatIP(prev.ips[0].gateway), '10.1.2.1');
  assert.equal(prev.ips[0]?.interface, 1);
  assert.equal(prev.ips[1]?.gateway, undefined);
});

test('parsePrevResult() reads a 1.1.0 result without ips[].version', () => {
  const prev = parsePrevResult({ cniVersion: '1.1.0', ips: [{ address: '10.1.2.5/24', interface: 0 }] }, '1.1.0');
  assert.deepEqual(
    prev.ips.map((ip) => formatCidr(ip.address)),
    ['10.1.2.5/24'],
  );
});

for (const version of ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const) {
  test(`parsePrevResult() reads back our own ${version} rendering`, () => {
    const rendered = renderResult(
      { ips: [{ address: parseCidr('10.9.0.7/16'), gateway: parseIP('10.9.0.1') }], routes: [] },
      version,
    );
    const prev = parsePrevResult(JSON.parse(JSON.stringify(rendered)), version);
    assert.equal(prev.cniVersion, version);
    assert.equal(formatCidr(prev.ips[0]!.address), '10.9.0.7/16');
  });
}

test('parsePrevResult() takes the request version when the result carries none', () => {
  assert.equal(parsePrevResult({ ips: [] }, '1.0.0').cniVersion, '1.0.0');
});

test('parsePrevResult() accepts a result without ips', () => {
  assert.deepEqual(parsePrevResult({ cniVersion: '1.0.0' }, '1.0.0').ips, []);
});

test('parsePrevResult() ignores routes and dns (later plugins may change them)', () => {
  const prev = parsePrevResult({ ips: [], routes: 'not even a list', dns: 5 }, '1.0.0');
  assert.deepEqual(prev.ips, []);
});

test('parsePrevResult() ignores ips[].version in 1.x results', () => {
  const prev = parsePrevResult({ cniVersion: '1.0.0', ips: [{ version: '6', address: '10.0.0.1/8' }] }, '1.0.0');
  assert.equal(prev.ips.length, 1);
});

test('parsePrevResult() rejects a missing prevResult with code 7', () => {
  assert.throws(() => parsePrevResult(undefined, '1.0.0'), configError(/^prevResult is missing$/));
});

test('parsePrevResult() rejects a null prevResult with code 7', () => {
  assert.throws(() => parsePrevResult(null, '1.0.0'), configError(/prevResult is missing/));
});

test('parsePrevResult() rejects a non-object prevResult', () => {
  assert.throws(() => parsePrevResult([1], '1.0.0'), configError(/^prevResult must be an object, got a list$/));
});

test('parsePrevResult() rejects an unsupported prevResult.cniVersion, naming it', () => {
  assert.throws(
    () => parsePrevResult({ cniVersion: '0.2.0', ip4: { ip: '10.0.0.1/8' } }, '1.0.0'),
    configError(/^prevResult.cniVersion "0.2.0" is not a supported version$/),
  );
});

test('parsePrevResult() rejects ips that is not a list', () => {
  assert.throws(
    () => parsePrevResult({ ips: {} }, '1.0.0'),
    configError(/^prevResult.ips must be a list, got an object$/),
  );
});

test('parsePrevResult() rejects an ips entry that is not an object, naming its index', () => {
  assert.throws(
    () => parsePrevResult({ ips: ['10.0.0.1/8'] }, '1.0.0'),
    configError(/^prevResult.ips\[0\] must be an object/),
  );
});

test('parsePrevResult() rejects a missing address, naming the field', () => {
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.1/8' }, { gateway: '10.0.0.1' }] }, '1.0.0'),
    configError(/^prevResult.ips\[1\].address must be a CIDR string, got undefined$/),
  );
});

test('parsePrevResult() rejects an address without a prefix length, naming it', () => {
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.1' }] }, '1.0.0'),
    configError(/^prevResult.ips\[0\].address "10.0.0.1" is not an address with a prefix length$/),
  );
});

test('parsePrevResult() rejects a gateway that is not an address', () => {
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.5/8', gateway: 'router' }] }, '1.0.0'),
    configError(/^prevResult.ips\[0\].gateway "router" is not an IP address$/),
  );
});

test('parsePrevResult() rejects a gateway that is not a string', () => {
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.5/8', gateway: 10 }] }, '1.0.0'),
    configError(/^prevResult.ips\[0\].gateway must be an IP address string, got 10$/),
  );
});

test('parsePrevResult() rejects a 0.x version field that contradicts the address', () => {
  assert.throws(
    () => parsePrevResult({ cniVersion: '0.4.0', ips: [{ version: '6', address: '10.0.0.5/8' }] }, '0.4.0'),
    configError(/^prevResult.ips\[0\].version "6" does not match address "10.0.0.5\/8"$/),
  );
});

for (const index of [-1, 1.5, '0']) {
  test(`parsePrevResult() rejects interface ${JSON.stringify(index)}`, () => {
    assert.throws(
      () => parsePrevResult({ ips: [{ address: '10.0.0.5/8', interface: index }] }, '1.0.0'),
      configError(/^prevResult.ips\[0\].interface must be a non-negative integer/),
    );
  });
}
