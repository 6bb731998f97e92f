import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { assign } from '../../../src/ipam/assign.ts';
import { collectGarbage } from '../../../src/ipam/gc.ts';
import { poolRefs } from '../../../src/ipam/pools.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../../src/store/store.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { warmRecord } from '../../../src/store/warm-record.ts';

const config = testNetwork([testRange('10.0.0.0/28')]);
const [pool] = poolRefs(config);
if (pool === undefined) throw new Error('no pool');
const att = (containerId: string, ifname = 'eth0') => ({ containerId, ifname, podRef: `ns/${containerId}` });

test('collectGarbage() releases allocations whose attachment is not in the valid list', async () => {
  const store = new MemoryStore();
  for (const id of ['a', 'b', 'c']) await assign(store, config, att(id));
  const report = await collectGarbage(store, config, [att('a'), att('c')]);
  assert.deepEqual(
    report.released.map((r) => [formatIP(r.address), r.record.containerId]),
    [['10.0.0.2', 'b']],
  );
  assert.deepEqual(report.errors, []);
  assert.deepEqual(
    [...(await store.read(pool)).values()].map((r) => r.containerId),
    ['a', 'c'],
  );
});

test('collectGarbage() matches container and ifname together', async () => {
  const store = new MemoryStore();
  await assign(store, config, att('a'));
  await assign(store, config, att('a', 'net1'));
  const report = await collectGarbage(store, config, [att('a')]);
  assert.deepEqual(
    report.released.map((r) => r.record.ifname),
    ['net1'],
  );
});

test('collectGarbage() keeps every interface of a container named without an ifname', async () => {
  const store = new MemoryStore();
  await assign(store, config, att('a'));
  await assign(store, config, att('a', 'net1'));
  const report = await collectGarbage(store, config, [], { keepContainers: new Set(['a']) });
  assert.deepEqual(report.released, []);
});

test('collectGarbage() with an empty valid list releases everything of this node', async () => {
  const store = new MemoryStore();
  for (const id of ['a', 'b']) await assign(store, config, att(id));
  assert.equal((await collectGarbage(store, config, [])).released.length, 2);
  assert.equal((await store.read(pool)).size, 0);
});

test('collectGarbage() leaves records of other nodes and records without a node alone', async () => {
  const store = new MemoryStore({ node: 'node-a' });
  const record = (containerId: string, node?: string): AllocationRecord => ({
    containerId,
    ifname: 'eth0',
    podRef: `ns/${containerId}`,
    ...(node === undefined ? {} : { node }),
  });
  store.seed(pool, [
    [parseIP('10.0.0.1').value, record('mine', 'node-a')],
    [parseIP('10.0.0.2').value, record('theirs', 'node-b')],
    [parseIP('10.0.0.3').value, record('whereabouts')],
  ]);
  const report = await collectGarbage(store, config, []);
  assert.deepEqual(
    report.released.map((r) => r.record.containerId),
    ['mine'],
  );
  assert.equal((await store.read(pool)).size, 2);
});

test("collectGarbage() never collects the node agent's warm records: they are no attachment's", async () => {
  const store = new MemoryStore({ node: 'node-a' });
  store.seed(pool, [
    [parseIP('10.0.0.1').value, { containerId: 'gone', ifname: 'eth0', podRef: 'ns/gone', node: 'node-a' }],
    [parseIP('10.0.0.2').value, warmRecord('node-a', pool.name, 's', '2020-01-01T00:00:00Z')],
  ]);
  const report = await collectGarbage(store, config, []);
  assert.deepEqual(
    report.released.map((r) => r.record.containerId),
    ['gone'],
  );
  assert.deepEqual([...(await store.read(pool)).keys()], [parseIP('10.0.0.2').value]);
});

test('collectGarbage() reports a failing pool and still collects the others', async () => {
  const two = testNetwork([testRange('10.0.0.0/28'), testRange('fd00::/120')]);
  class FailingV4 extends MemoryStore {
    override async update<T>(p: PoolRef, plan: Plan<T>): Promise<T> {
      if (p.range.cidr.family === 4) throw new HereaboutsError(ErrorKind.Unavailable, 'busy');
      return super.update(p, plan);
    }
  }
  const store = new FailingV4();
  const [, v6Pool] = poolRefs(two);
  assert.ok(v6Pool !== undefined);
  store.seed(v6Pool, [[parseIP('fd00::1').value, { containerId: 'x', ifname: 'eth0', podRef: '' }]]);
  const report = await collectGarbage(store, two, []);
  assert.equal(report.errors.length, 1);
  assert.deepEqual(
    report.released.map((r) => formatIP(r.address)),
    ['fd00::1'],
  );
});

// An ADD may commit after the runtime took its valid-attachments snapshot: such an allocation is not garbage yet.
test('collectGarbage() spares allocations younger than gc_grace_seconds', async () => {
  const store = new MemoryStore();
  const graced = testNetwork([testRange('10.0.0.0/28')], { gcGraceSeconds: 60 });
  await assign(store, graced, att('just-added'));
  const report = await collectGarbage(store, graced, []);
  assert.deepEqual(report.released, []);
  assert.equal((await store.read(pool)).size, 1);
});

test('collectGarbage() releases allocations older than gc_grace_seconds, and records without createdAt', async () => {
  const store = new MemoryStore();
  const graced = testNetwork([testRange('10.0.0.0/28')], { gcGraceSeconds: 60 });
  const at = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000).toISOString();
  store.seed(pool, [
    [parseIP('10.0.0.1').value, { containerId: 'old', ifname: 'eth0', podRef: 'ns/old', createdAt: at(61) }],
    [parseIP('10.0.0.2').value, { containerId: 'young', ifname: 'eth0', podRef: 'ns/young', createdAt: at(50) }],
    [parseIP('10.0.0.3').value, { containerId: 'legacy', ifname: 'eth0', podRef: 'ns/legacy' }],
  ]);
  const report = await collectGarbage(store, graced, []);
  assert.deepEqual(
    report.released.map((r) => r.record.containerId),
    ['old', 'legacy'],
  );
});

test('an idempotent ADD by a new container restarts the grace period of its record', async () => {
  const store = new MemoryStore();
  const graced = testNetwork([testRange('10.0.0.0/28')], { gcGraceSeconds: 60 });
  store.seed(pool, [
    [
      parseIP('10.0.0.1').value,
      { containerId: 'c1', ifname: 'eth0', podRef: 'ns/p', createdAt: new Date(Date.now() - 3_600_000).toISOString() },
    ],
  ]);
  await assign(store, graced, { containerId: 'c2', ifname: 'eth0', podRef: 'ns/p' });
  assert.deepEqual((await collectGarbage(store, graced, [])).released, []);
});
