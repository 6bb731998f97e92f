import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from '../../../src/cni/errors.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { checkCapacity } from '../../../src/ipam/capacity.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';

test('checkCapacity() passes while every range has a free address', async () => {
  const store = new MemoryStore();
  const config = testNetwork([testRange('10.0.0.0/30'), testRange('fd00::/120')]);
  await assign(store, config, { containerId: 'a', ifname: 'eth0', podRef: 'ns/a' });
  await checkCapacity(store, config);
});

test('checkCapacity() fails with code 50 naming the exhausted range', async () => {
  const store = new MemoryStore();
  const config = testNetwork([testRange('fd00::/120'), testRange('10.0.0.0/30')], { networkName: 'blue' });
  for (const id of ['a', 'b']) await assign(store, config, { containerId: id, ifname: 'eth0', podRef: `ns/${id}` });
  await assert.rejects(checkCapacity(store, config), (err: unknown) => {
    return err instanceof CniError && err.code === 50 && /no free address in range 10\.0\.0\.0\/30 \(pool blue-10\.0\.0\.0-30\)/.test(err.message);
  });
});

test('checkCapacity() passes the store\'s own status failure through', async () => {
  class Down extends MemoryStore {
    override async status(): Promise<void> {
      throw new CniError(50, 'data_dir is not writable');
    }
  }
  await assert.rejects(checkCapacity(new Down(), testNetwork([testRange('10.0.0.0/24')])), /data_dir is not writable/);
});

test('checkCapacity() counts a range made entirely of exclusions as exhausted', async () => {
  const config = testNetwork([testRange('10.0.0.0/29', { exclude: ['10.0.0.0/29'] })]);
  await assert.rejects(checkCapacity(new MemoryStore(), config), (err: unknown) => err instanceof CniError && err.code === 50);
});
