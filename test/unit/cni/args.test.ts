import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCniArgs } from '../../../src/cni/args.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { cniError } from '../../support/cni-error.ts';

const envError = (pattern: RegExp) => cniError(4, pattern);

test('parseCniArgs() of undefined is empty', () => {
  const args = parseCniArgs(undefined);
  assert.deepEqual(args.ips, []);
  assert.equal(args.ignoreUnknown, false);
  assert.equal(args.raw.size, 0);
});

test('parseCniArgs() of an empty string is empty', () => {
  assert.equal(parseCniArgs('').raw.size, 0);
});

test('parseCniArgs() reads the kubelet keys', () => {
  const args = parseCniArgs(
    'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=1234-5678',
  );
  assert.equal(args.podNamespace, 'ns1');
  assert.equal(args.podName, 'web-0');
  assert.equal(args.podInfraContainerId, 'abc');
  assert.equal(args.podUid, '1234-5678');
  assert.equal(args.ignoreUnknown, true);
});

test('parseCniArgs() leaves absent pod keys undefined', () => {
  const args = parseCniArgs('K8S_POD_NAME=web-0');
  assert.equal(args.podNamespace, undefined);
  assert.equal('podNamespace' in args, false);
});

test('parseCniArgs() treats an empty value as absent', () => {
  assert.equal(parseCniArgs('K8S_POD_NAME=').podName, undefined);
});

test('parseCniArgs() reads one IP', () => {
  const ips = parseCniArgs('IP=10.0.0.5').ips;
  assert.deepEqual(ips.map(formatIP), ['10.0.0.5']);
});

test('parseCniArgs() reads a comma-separated IP list of both families', () => {
  const ips = parseCniArgs('IP=10.0.0.5,2001:db8::5').ips;
  assert.deepEqual(ips.map(formatIP), ['10.0.0.5', '2001:db8::5']);
});

test('parseCniArgs() accepts IPs with a prefix length and keeps the address', () => {
  const ips = parseCniArgs('IP=10.0.0.5/24').ips;
  assert.deepEqual(ips.map(formatIP), ['10.0.0.5']);
});

test('parseCniArgs() rejects an invalid IP, naming it', () => {
  assert.throws(() => parseCniArgs('IP=10.0.0.5,bogus'), envError(/CNI_ARGS IP=.* invalid address "bogus"/));
});

test('parseCniArgs() rejects a pair without "=", naming it', () => {
  assert.throws(() => parseCniArgs('K8S_POD_NAME=a;novalue'), envError(/^CNI_ARGS pair "novalue" is not KEY=VALUE$/));
});

test('parseCniArgs() rejects a pair with two "="', () => {
  assert.throws(() => parseCniArgs('K8S_POD_NAME=a=b'), envError(/pair "K8S_POD_NAME=a=b"/));
});

test('parseCniArgs() rejects an empty key', () => {
  assert.throws(() => parseCniArgs('=value'), envError(/pair "=value"/));
});

test('parseCniArgs() tolerates empty segments', () => {
  assert.equal(parseCniArgs(';K8S_POD_NAME=a;;').podName, 'a');
});

test('parseCniArgs() keeps the last duplicate', () => {
  assert.equal(parseCniArgs('K8S_POD_NAME=a;K8S_POD_NAME=b').podName, 'b');
});

test('parseCniArgs() is case-sensitive about keys', () => {
  assert.throws(() => parseCniArgs('k8s_pod_name=a'), envError(/unknown key "k8s_pod_name"/));
});

test('parseCniArgs() rejects unknown keys without IgnoreUnknown, naming them', () => {
  assert.throws(
    () => parseCniArgs('FOO=1;K8S_POD_NAME=a;BAR=2'),
    envError(/^CNI_ARGS has unknown keys "FOO", "BAR" \(set IgnoreUnknown=1 to allow them\)$/),
  );
});

test('parseCniArgs() rejects unknown keys with IgnoreUnknown=0', () => {
  assert.throws(() => parseCniArgs('IgnoreUnknown=0;FOO=1'), envError(/unknown key "FOO"/));
});

for (const value of ['1', 'true', 'TRUE', 'True']) {
  test(`parseCniArgs() keeps unknown keys in raw with IgnoreUnknown=${value}`, () => {
    const args = parseCniArgs(`IgnoreUnknown=${value};FOO=1`);
    assert.equal(args.ignoreUnknown, true);
    assert.equal(args.raw.get('FOO'), '1');
  });
}

test('parseCniArgs() rejects a non-boolean IgnoreUnknown, naming the value', () => {
  assert.throws(() => parseCniArgs('IgnoreUnknown=yes'), envError(/IgnoreUnknown="yes" is not a boolean/));
});

test('parseCniArgs() accepts GATEWAY (a Whereabouts key) without IgnoreUnknown', () => {
  assert.equal(parseCniArgs('GATEWAY=10.0.0.1').raw.get('GATEWAY'), '10.0.0.1');
});
