// The steps of one commit (pool-commit.ts), driven one at a time on an in-memory API server: what each step leaves in
// the commit's state and in its host's memory, and which reservations a commit may remove.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstFree } from '../../../../src/allocator/first-free.ts';
import { monotonicMs } from '../../../../src/clock.ts';
import { ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../../../src/kube/api.ts';
import type { CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../../src/store/kubernetes/contention.ts';
import { getObject } from '../../../../src/store/kubernetes/objects.ts';
import { AGAIN, PoolCommit } from '../../../../src/store/kubernetes/pool-commit.ts';
import { createObject } from '../../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PoolChange, PoolRef } from '../../../../src/store/store.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const record: AllocationRecord = { containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' };
const pool: PoolRef = { name: 'steps', network: 'net', networkNamed: false, range: rangeOf('10.65.0.0/24') };
const KEY = 'kube-system/steps';

const lowestFree: Plan<bigint> = (current, refused) => {
  const address = firstFree(pool.range, current, refused);
  if (address === undefined) throw new Error('exhausted');
  return { change: { claim: { address, record } }, value: address };
};

function setup(memory = new WriteMemory()): { api: MemoryApiClient; ctx: CommitContext } {
  const api = new MemoryApiClient(new MemoryApiServer(), { namespace: 'kube-system' });
  return {
    api,
    ctx: { api, node: 'n1', reservations: true, budgetMs: 5_000, cleanupTimeoutMs: 1_000, log: quiet, memory },
  };
}

async function reservedByOthers(api: MemoryApiClient, ...names: string[]): Promise<void> {
  for (const name of names) {
    const reservation = { metadata: { name }, spec: { podref: 'other/pod', ifname: 'net1', containerid: 'x' } };
    await createObject(api, 'overlappingrangeipreservations', reservation);
  }
}

/** resume() and plan() on the API's view: the change the next step gets. */
async function planned(commit: PoolCommit<bigint>): Promise<PoolChange> {
  await commit.resume();
  const turn = await commit.plan();
  assert.notEqual(turn, AGAIN);
  if (turn === AGAIN || turn.change === null) throw new Error('expected a change');
  return turn.change;
}

test('reserve() refuses an address another writer reserved; the first collision marks the pool busy, the second spreads plans and marks it contended', async () => {
  const memory = new WriteMemory();
  const { api, ctx } = setup(memory);
  await reservedByOthers(api, '10.65.0.1', '10.65.0.2');
  const commit = new PoolCommit(ctx, pool, lowestFree);
  assert.equal(commit.spread, undefined, 'an uncontended pool is searched lowest-first');

  assert.equal(await commit.reserve(await planned(commit)), AGAIN);
  assert.deepEqual([...commit.refused], [ip('10.65.0.1')]);
  assert.equal(commit.collisions, 1);
  assert.equal(commit.spread, undefined, 'one collision can be a leaked reservation: still lowest-first');
  assert.equal(memory.busy.contended(KEY, monotonicMs()), true);
  assert.equal(memory.contention.contended(KEY, monotonicMs()), false);

  const second = await commit.plan();
  if (second === AGAIN || second.change === null) throw new Error('expected a change');
  assert.equal(await commit.reserve(second.change), AGAIN);
  assert.equal(commit.collisions, 2);
  assert.notEqual(commit.spread, undefined, 'the second collision spreads the search');
  assert.equal(memory.contention.contended(KEY, monotonicMs()), true);

  assert.notEqual(
    new PoolCommit(ctx, pool, lowestFree).spread,
    undefined,
    'the next commit of this host starts spread',
  );
  assert.equal(
    new PoolCommit(setup().ctx, pool, lowestFree).spread,
    undefined,
    'a commit with another memory does not',
  );
});

test('plan() on the node cache\'s view confirms "nothing to do" on the API\'s view first', async () => {
  const { api, ctx } = setup();
  const nothing: Plan<null> = () => ({ change: null, value: null });
  const commit = new PoolCommit(ctx, pool, nothing, {
    initial: { allocations: new Map(), resourceVersion: '1', fresh: false },
  });
  await commit.resume();
  const before = api.requests;
  assert.equal(await commit.plan(), AGAIN);
  assert.equal(api.requests, before + 1, 'one read');
  assert.equal(commit.view.fresh, true);
  assert.deepEqual(await commit.plan(), { value: null, change: null });
});

for (const ambiguous of [true, false]) {
  test(`a pool write that failed ${ambiguous ? 'after it was sent (it may have landed) keeps' : 'before it was sent removes'} the claim's reservation`, async () => {
    const { api, ctx } = setup();
    let uncertain = false;
    const commit = new PoolCommit(ctx, pool, lowestFree, { onUncertain: () => void (uncertain = true) });
    const change = await planned(commit);
    assert.equal(await commit.reserve(change), 'ready');
    assert.deepEqual([...commit.created.keys()], [ip('10.65.0.1')]);

    const send = api.send.bind(api);
    api.send = async (req: ApiRequest): Promise<ApiResponse> => {
      if (req.path.includes('/ippools'))
        throw new ApiUnreachableError(`${req.method} ippools: no answer`, { ambiguous });
      return send(req);
    };
    await assert.rejects(commit.write(change, ip('10.65.0.1')), ApiUnreachableError);
    assert.equal(uncertain, ambiguous, "the caller's cache is told only of a write that may have landed");
    assert.equal(commit.created.has(ip('10.65.0.1')), !ambiguous);

    await commit.settleUnused(undefined);
    api.send = send;
    const reservation = await getObject(api, 'overlappingrangeipreservations', '10.65.0.1');
    assert.equal(
      reservation !== undefined,
      ambiguous,
      ambiguous ? 'a possibly committed address stays reserved' : 'an unused reservation is removed',
    );
  });
}
