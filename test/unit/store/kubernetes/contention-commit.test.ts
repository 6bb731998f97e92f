// A long-lived writer (the node agent) remembers that a shared pool is contended: after one commit had to spread
// its search, the next commit on that pool starts spread instead of re-probing the lowest addresses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstFree } from '../../../../src/allocator/first-free.ts';
import { monotonicMs } from '../../../../src/clock.ts';
import { freeFrom } from '../../../../src/allocator/free-from.ts';
import { commitPool, type CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../../src/store/kubernetes/contention.ts';
import { createObject } from '../../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PlanHints, PoolRef } from '../../../../src/store/store.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };

function claimPlan(record: AllocationRecord, seen: Array<PlanHints | undefined>): Plan<bigint> {
  const pool = rangeOf('10.61.0.0/24');
  return (current, refused, hints) => {
    seen.push(hints);
    const address =
      hints?.spread === undefined ? firstFree(pool, current, refused) : freeFrom(pool, current, refused, hints.spread);
    if (address === undefined) throw new Error('exhausted');
    return { change: { claim: { address, record } }, value: address };
  };
}

test('a commit on a pool that was just contended starts its search spread; another pool starts lowest-first', async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: 'kube-system' });
  const ctx: CommitContext = {
    api,
    node: 'n1',
    reservations: true,
    budgetMs: 5_000,
    cleanupTimeoutMs: 1_000,
    log: quiet,
    memory: new WriteMemory(),
  };
  const pool = (name: string, network?: string): PoolRef => ({
    name,
    network: network ?? 'net',
    networkNamed: network !== undefined,
    range: rangeOf('10.61.0.0/24'),
  });
  // Two other writers reserved the two lowest addresses and have not written the pool yet: racing writers.
  for (const name of ['10.61.0.1', '10.61.0.2']) {
    const reservation = { metadata: { name }, spec: { podref: 'other/pod', ifname: 'net1', containerid: 'x' } };
    await createObject(api, 'overlappingrangeipreservations', reservation);
  }
  const first: Array<PlanHints | undefined> = [];
  const a = await commitPool(
    ctx,
    pool('contended-a'),
    claimPlan({ containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' }, first),
  );
  assert.notEqual(a, ip('10.61.0.1'));
  assert.notEqual(a, ip('10.61.0.2'));
  assert.equal(first[0]?.spread, undefined, 'an uncontended start is lowest-first');
  assert.ok(
    first.some((h) => h?.spread !== undefined),
    'the second collision spreads the search',
  );

  const second: Array<PlanHints | undefined> = [];
  await commitPool(ctx, pool('contended-a'), claimPlan({ containerId: 'c2', ifname: 'net1', podRef: 'ns/p2' }, second));
  assert.notEqual(
    second[0]?.spread,
    undefined,
    'the next commit on the contended pool plans spread from its first plan',
  );

  const other: Array<PlanHints | undefined> = [];
  const c = await commitPool(
    ctx,
    pool('quiet-b', 'blue'),
    claimPlan({ containerId: 'c3', ifname: 'net1', podRef: 'ns/p3' }, other),
  );
  assert.equal(other[0]?.spread, undefined, 'a pool without contention keeps the lowest-first order');
  assert.equal(c, ip('10.61.0.1'), 'another network (its own reservation names) starts at the lowest address');
});

test('contention is remembered by the host that met it: a commit with another memory (another process) starts lowest-first', async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: 'kube-system' });
  const agent = new WriteMemory();
  const other = new WriteMemory();
  const context = (memory: WriteMemory): CommitContext => ({
    api,
    node: 'n1',
    reservations: true,
    budgetMs: 5_000,
    cleanupTimeoutMs: 1_000,
    log: quiet,
    memory,
  });
  const pool: PoolRef = { name: 'shared', network: 'net', networkNamed: false, range: rangeOf('10.61.0.0/24') };
  for (const name of ['10.61.0.1', '10.61.0.2']) {
    const reservation = { metadata: { name }, spec: { podref: 'other/pod', ifname: 'net1', containerid: 'x' } };
    await createObject(api, 'overlappingrangeipreservations', reservation);
  }
  const first: Array<PlanHints | undefined> = [];
  await commitPool(context(agent), pool, claimPlan({ containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' }, first));
  assert.ok(
    first.some((h) => h?.spread !== undefined),
    'the second collision spreads the search',
  );
  assert.equal(agent.contention.contended('kube-system/shared', monotonicMs()), true);
  assert.equal(other.contention.contended('kube-system/shared', monotonicMs()), false, 'another memory saw nothing');

  const elsewhere: Array<PlanHints | undefined> = [];
  await commitPool(context(other), pool, claimPlan({ containerId: 'c2', ifname: 'net1', podRef: 'ns/p2' }, elsewhere));
  assert.equal(elsewhere[0]?.spread, undefined, 'a host that met no contention plans lowest-first');
  const again: Array<PlanHints | undefined> = [];
  await commitPool(context(agent), pool, claimPlan({ containerId: 'c3', ifname: 'net1', podRef: 'ns/p3' }, again));
  assert.notEqual(again[0]?.spread, undefined, 'the host that met it plans spread from its first plan');
});
