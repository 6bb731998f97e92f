import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { release } from '../../../src/ipam/release.ts';
import { poolRefs } from '../../../src/ipam/pools.ts';
import type { Plan, PoolRef } from '../../../src/store/store.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const config = testNetwork([testRange('10.0.0.0/29'), testRange('fd00::/120')]);
const pod = { containerId: 'c1', ifname: 'eth0', podRef: 'default/pod1' };

test("release() frees the attachment's address in every range", async () => {
  const store = new MemoryStore();
  await assign(store, config, pod);
  const released = await release(store, config, pod);
  assert.deepEqual(released.map(formatIP), ['10.0.0.1', 'fd00::1']);
  for (const pool of poolRefs(config)) assert.equal((await store.read(pool)).size, 0);
});

test('release() of an unknown attachment succeeds and writes nothing', async () => {
  const store = new MemoryStore();
  await assign(store, config, pod);
  assert.deepEqual(await release(store, config, { containerId: 'nobody', ifname: 'eth0' }), []);
  assert.deepEqual([...store.writes.values()], [1, 1]);
});

test('release() only frees the named interface of the container', async () => {
  const store = new MemoryStore();
  await assign(store, config, pod);
  await assign(store, config, { ...pod, ifname: 'net1' });
  const released = await release(store, config, { containerId: 'c1', ifname: 'net1' });
  assert.deepEqual(released.map(formatIP), ['10.0.0.2', 'fd00::2']);
});

test("release() matches the container id, not the pod: an old sandbox's DEL leaves the new one's address", async () => {
  const store = new MemoryStore();
  await assign(store, config, pod);
  await assign(store, config, { ...pod, containerId: 'c2' }); // same pod, new sandbox: record now says c2
  assert.deepEqual(await release(store, config, { containerId: 'c1', ifname: 'eth0' }), []);
  assert.equal((await release(store, config, { containerId: 'c2', ifname: 'eth0' })).length, 2);
});

test('release() keeps releasing after a failing range and reports every error at the end', async () => {
  class FailingPool extends MemoryStore {
    override async update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
      if (pool.name === '10.0.0.0-29') throw new HereaboutsError(ErrorKind.Unavailable, 'lock timeout on 10.0.0.0-29');
      return super.update(pool, plan);
    }
  }
  const store = new FailingPool();
  const [, v6Pool] = poolRefs(config);
  assert.ok(v6Pool !== undefined);
  await store.update(v6Pool, () => ({
    change: { claim: { address: parseIP('fd00::1').value, record: { ...pod } } },
    value: undefined,
  }));
  await assert.rejects(
    release(store, config, pod),
    (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11,
  );
  assert.equal((await store.read(v6Pool)).size, 0);
});

test('release() combines errors from several ranges into one HereaboutsError with an AggregateError cause', async () => {
  class AllFail extends MemoryStore {
    override update<T>(pool: PoolRef): Promise<T> {
      return Promise.reject(new HereaboutsError(ErrorKind.Io, `cannot write ${pool.name}`));
    }
  }
  await assert.rejects(release(new AllFail(), config, pod), (err: unknown) => {
    return (
      err instanceof HereaboutsError &&
      cniCodeOf(err) === 5 &&
      /cannot write 10\.0\.0\.0-29; cannot write fd00---120/.test(err.message) &&
      err.cause instanceof AggregateError &&
      err.cause.errors.length === 2
    );
  });
});

test('release() frees a legacy record (no ifname) of its container, the lowest one, when none names its interface, as Whereabouts before 0.7 did', async () => {
  const store = new MemoryStore();
  const [v4] = poolRefs(config);
  assert.ok(v4 !== undefined);
  const legacy = { containerId: 'c1', ifname: '', podRef: 'default/pod1' };
  store.seed(v4, [
    [parseIP('10.0.0.3').value, legacy],
    [parseIP('10.0.0.2').value, legacy],
    [parseIP('10.0.0.4').value, { ...legacy, containerId: 'c9' }],
  ]);
  assert.deepEqual((await release(store, config, pod)).map(formatIP), ['10.0.0.2']);
  // one record naming the interface wins over the legacy ones
  store.seed(v4, [
    [parseIP('10.0.0.2').value, legacy],
    [parseIP('10.0.0.5').value, pod],
  ]);
  assert.deepEqual((await release(store, config, pod)).map(formatIP), ['10.0.0.5']);
  assert.deepEqual(
    [...(await store.read(v4)).keys()].map((v) => formatIP({ family: 4, value: v })),
    ['10.0.0.2'],
  );
  // another container's legacy record stays
  store.seed(v4, [[parseIP('10.0.0.4').value, { ...legacy, containerId: 'c9' }]]);
  assert.deepEqual(await release(store, config, pod), []);
});
