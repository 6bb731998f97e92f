import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderResult, type IpamResult } from '../../../src/cni/result.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const dualStack: IpamResult = {
  ips: [
    { address: parseCidr('10.1.2.5/24'), gateway: parseIP('10.1.2.1') },
    { address: parseCidr('2001:db8:0:0::5/64') },
  ],
  routes: [{ dst: parseCidr('0.0.0.0/0'), gw: parseIP('10.1.2.1') }, { dst: parseCidr('192.168.0.0/16') }],
  dns: { nameservers: ['10.1.2.53'], domain: 'example.org', search: ['a.example.org'], options: ['ndots:2'] },
};

const dnsJson =
  '"dns":{"nameservers":["10.1.2.53"],"domain":"example.org","search":["a.example.org"],"options":["ndots:2"]}';
const routesJson = '"routes":[{"dst":"0.0.0.0/0","gw":"10.1.2.1"},{"dst":"192.168.0.0/16"}]';

for (const version of ['0.3.0', '0.3.1', '0.4.0'] as const) {
  test(`renderResult() for ${version} carries ips[].version`, () => {
    assert.equal(
      JSON.stringify(renderResult(dualStack, version)),
      `{"cniVersion":"${version}","ips":[` +
        '{"version":"4","address":"10.1.2.5/24","gateway":"10.1.2.1"},' +
        '{"version":"6","address":"2001:db8::5/64"}],' +
        `${routesJson},${dnsJson}}`,
    );
  });
}

for (const version of ['1.0.0', '1.1.0'] as const) {
  test(`renderResult() for ${version} has no ips[].version`, () => {
    assert.equal(
      JSON.stringify(renderResult(dualStack, version)),
      `{"cniVersion":"${version}","ips":[` +
        '{"address":"10.1.2.5/24","gateway":"10.1.2.1"},' +
        '{"address":"2001:db8::5/64"}],' +
        `${routesJson},${dnsJson}}`,
    );
  });
}

test('renderResult() never emits interfaces or ips[].interface (IPAM plugins leave them to the caller)', () => {
  const json = renderResult(dualStack, '1.1.0');
  assert.equal('interfaces' in json, false);
  assert.ok(json.ips.every((ip) => !('interface' in ip)));
});

test('renderResult() omits empty routes and absent dns', () => {
  const result: IpamResult = { ips: [{ address: parseCidr('10.0.0.2/8') }], routes: [] };
  assert.equal(
    JSON.stringify(renderResult(result, '1.0.0')),
    '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/8"}]}',
  );
});

test('renderResult() omits a dns whose fields are all empty', () => {
  const result: IpamResult = {
    ips: [{ address: parseCidr('10.0.0.2/8') }],
    routes: [],
    dns: { nameservers: [], domain: '', search: [], options: [] },
  };
  assert.equal('dns' in renderResult(result, '0.4.0'), false);
});

test('renderResult() keeps only the non-empty dns fields', () => {
  const result: IpamResult = { ips: [], routes: [], dns: { search: ['svc.local'] } };
  assert.deepEqual(renderResult(result, '1.1.0').dns, { search: ['svc.local'] });
});

test('renderResult() keeps host bits of the address', () => {
  const result: IpamResult = { ips: [{ address: parseCidr('192.168.10.77/22') }], routes: [] };
  assert.equal(renderResult(result, '1.1.0').ips[0]?.address, '192.168.10.77/22');
});

test('renderResult() prints IPv6 in RFC 5952 form', () => {
  const result: IpamResult = {
    ips: [{ address: parseCidr('2001:0DB8:0000:0000:0000:0000:0000:0010/120'), gateway: parseIP('2001:db8::1') }],
    routes: [{ dst: parseCidr('::/0'), gw: parseIP('2001:db8:0:0:0:0:0:1') }],
  };
  assert.equal(
    JSON.stringify(renderResult(result, '0.3.1')),
    '{"cniVersion":"0.3.1","ips":[{"version":"6","address":"2001:db8::10/120","gateway":"2001:db8::1"}],' +
      '"routes":[{"dst":"::/0","gw":"2001:db8::1"}]}',
  );
});

test('renderResult() renders an empty ips list as []', () => {
  assert.equal(JSON.stringify(renderResult({ ips: [], routes: [] }, '1.1.0')), '{"cniVersion":"1.1.0","ips":[]}');
});

test('renderResult() puts cniVersion first', () => {
  assert.equal(Object.keys(renderResult(dualStack, '1.1.0'))[0], 'cniVersion');
});
