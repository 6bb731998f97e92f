import { test } from 'node:test';
import assert from 'node:assert/strict';
import { poolRefs } from '../../../src/ipam/pools.ts';
import { testNetwork, testRange } from '../../support/memory-store.ts';

test('poolRefs() names unnamed-network pools by range and files them under the CNI network name', () => {
  const refs = poolRefs(testNetwork([testRange('10.0.0.0/24'), testRange('fd00::/64')], { name: 'macvlan-conf' }));
  assert.deepEqual(
    refs.map((r) => [r.name, r.network, r.networkNamed]),
    [
      ['10.0.0.0-24', 'macvlan-conf', false],
      ['fd00---64', 'macvlan-conf', false],
    ],
  );
});

test('poolRefs() prefixes network_name and files the pools under it', () => {
  const [ref] = poolRefs(testNetwork([testRange('10.0.0.0/24')], { name: 'conf', networkName: 'blue' }));
  assert.deepEqual([ref?.name, ref?.network, ref?.networkNamed], ['blue-10.0.0.0-24', 'blue', true]);
});
