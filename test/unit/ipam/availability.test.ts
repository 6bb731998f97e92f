import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assign } from '../../../src/ipam/assign.ts';
import { checkAvailable } from '../../../src/ipam/availability.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

test('checkAvailable() passes while every range has a free address', async () => {
  const store = new MemoryStore();
  const config = testNetwork([testRange('10.0.0.0/30'), testRange('fd00::/120')]);
  await assign(store, config, { containerId: 'a', ifname: 'eth0', podRef: 'ns/a' });
  await checkAvailable(store, config);
});

// A runtime that honours STATUS marks the whole node NetworkNotReady on a failure, which evicts healthy pods:
// a full range is ADD's error (code 100), not the node's.
test('checkAvailable() passes when a range is exhausted: exhaustion is not a STATUS failure', async () => {
  const store = new MemoryStore();
  const config = testNetwork([testRange('fd00::/120'), testRange('10.0.0.0/30')], { networkName: 'blue' });
  for (const id of ['a', 'b']) await assign(store, config, { containerId: id, ifname: 'eth0', podRef: `ns/${id}` });
  await assert.rejects(
    assign(store, config, { containerId: 'c', ifname: 'eth0', podRef: 'ns/c' }),
    (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 100,
  );
  await checkAvailable(store, config);
});

test('checkAvailable() passes for a range made entirely of exclusions', async () => {
  await checkAvailable(new MemoryStore(), testNetwork([testRange('10.0.0.0/29', { exclude: ['10.0.0.0/29'] })]));
});

test("checkAvailable() passes the store's own status failure through", async () => {
  class Down extends MemoryStore {
    override status(): Promise<void> {
      return Promise.reject(new HereaboutsError(ErrorKind.NotReady, 'data_dir is not writable'));
    }
  }
  await assert.rejects(checkAvailable(new Down(), testNetwork([testRange('10.0.0.0/24')])), /data_dir is not writable/);
});
