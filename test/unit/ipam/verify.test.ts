import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { verify } from '../../../src/ipam/verify.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const config = testNetwork([testRange('10.0.0.0/29'), testRange('fd00::/120')], { addresses: ['192.168.0.10/24'] });
const pod = { containerId: 'c1', ifname: 'eth0', podRef: 'default/pod1' };

function checkFailed(pattern: RegExp) {
  return (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 102 && pattern.test(err.message);
}

test('verify() accepts addresses allocated to this container and ifname', async () => {
  const store = new MemoryStore();
  const assigned = await assign(store, config, pod);
  await verify(
    store,
    config,
    pod,
    assigned.map((a) => a.address),
  );
});

test('verify() skips static addresses', async () => {
  const store = new MemoryStore();
  await verify(store, config, pod, [parseIP('192.168.0.10')]);
});

test('verify() fails with code 102 for an address that is no longer allocated', async () => {
  await assert.rejects(
    verify(new MemoryStore(), config, pod, [parseIP('10.0.0.1')]),
    checkFailed(/address 10\.0\.0\.1 is not allocated, not to container c1 \(eth0\)/),
  );
});

test('verify() fails with code 102 for an address held by another attachment', async () => {
  const store = new MemoryStore();
  await assign(store, config, { containerId: 'c9', ifname: 'eth0', podRef: 'ns/other' });
  await assert.rejects(
    verify(store, config, pod, [parseIP('fd00::1')]),
    checkFailed(/address fd00::1 is allocated to ns\/other c9 \(eth0\), not to container c1 \(eth0\)/),
  );
});

test('verify() fails with code 102 for an address outside every range', async () => {
  await assert.rejects(
    verify(new MemoryStore(), config, pod, [parseIP('172.16.0.1')]),
    checkFailed(/172\.16\.0\.1 is in no configured range/),
  );
});

test('verify() fails for the right container on the wrong interface', async () => {
  const store = new MemoryStore();
  await assign(store, config, pod);
  await assert.rejects(
    verify(store, config, { containerId: 'c1', ifname: 'net1' }, [parseIP('10.0.0.1')]),
    checkFailed(/10\.0\.0\.1/),
  );
});
