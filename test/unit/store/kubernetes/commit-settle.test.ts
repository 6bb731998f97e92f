// What a commit reports once its pool write landed: the API is the truth, so neither the caller's cache nor anything
// after the write turns a committed address into a failed request, and the reservations it held are settled.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstFree } from '../../../../src/allocator/first-free.ts';
import { ErrorKind, HereaboutsError } from '../../../../src/errors.ts';
import { ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../../../src/kube/api.ts';
import { commitPool, type CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../../src/store/kubernetes/contention.ts';
import { getObject } from '../../../../src/store/kubernetes/objects.ts';
import { createObject, mergePatch } from '../../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../../../src/store/store.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const record: AllocationRecord = { containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' };
const pool: PoolRef = { name: 'settle', network: 'net', networkNamed: false, range: rangeOf('10.66.0.0/24') };

const lowestFree: Plan<bigint> = (current, refused) => {
  const address = firstFree(pool.range, current, refused);
  if (address === undefined) throw new Error('exhausted');
  return { change: { claim: { address, record } }, value: address };
};

test("a landed write whose caller's cache cannot be written is done: the cache is dropped and the unused reservations are settled", async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: 'kube-system' });
  const whereabouts = new MemoryApiClient(server, { namespace: 'kube-system' });
  const empty = { metadata: { name: 'settle' }, spec: { range: '10.66.0.0/24', allocations: {} } };
  await createObject(api, 'ippools', empty);
  // Between this commit's reservation of .1 and its pool write, a writer that reserves after its pool write
  // (Whereabouts) commits .1: the commit plans again, takes .2, and its reservation of .1 is left unused.
  const send = api.send.bind(api);
  let raced = false;
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (!raced && req.method === 'PATCH' && req.path.includes('/ippools/')) {
      raced = true;
      await mergePatch(whereabouts, 'ippools', 'settle', {
        spec: { allocations: { '1': { id: 'c-wb', podref: 'default/wb', ifname: 'net1' } } },
      });
    }
    return send(req);
  };
  let dropped = false;
  const ctx: CommitContext = {
    api,
    node: 'n1',
    reservations: true,
    budgetMs: 5_000,
    cleanupTimeoutMs: 1_000,
    log: quiet,
    memory: new WriteMemory(),
  };
  const value = await commitPool(ctx, pool, lowestFree, {
    onSettled: () => {
      throw new Error('ENOSPC: no space left on device, write');
    },
    onUncertain: () => void (dropped = true),
  });
  assert.ok(raced);
  assert.equal(value, ip('10.66.0.2'));
  assert.equal(dropped, true, "the caller's cache, behind the API now, is dropped");
  const unused = (await getObject(api, 'overlappingrangeipreservations', '10.66.0.1')) as { spec: { podref: string } };
  assert.equal(unused.spec.podref, 'default/wb', "the unused reservation of .1 was not handed to .1's holder");
});

/** A client whose reservation reads fail once a pool write landed; with `pool: true`, later pool writes fail too. */
function failingAfterWrite(fail: { readonly pool: boolean }): MemoryApiClient {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: 'kube-system' });
  const send = api.send.bind(api);
  let written = false;
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (written && req.method === 'GET' && req.path.includes('/overlappingrangeipreservations/'))
      throw new ApiUnreachableError('GET overlappingrangeipreservations: no answer', { ambiguous: false });
    if (written && fail.pool && req.method !== 'GET' && req.path.includes('/ippools'))
      throw new ApiUnreachableError('PATCH ippools: no answer', { ambiguous: false });
    const res = await send(req);
    if (req.method !== 'GET' && req.path.includes('/ippools')) written = true;
    return res;
  };
  return api;
}

const contextOf = (api: MemoryApiClient): CommitContext => ({
  api,
  node: 'n1',
  reservations: true,
  budgetMs: 2_000,
  cleanupTimeoutMs: 500,
  log: quiet,
  memory: new WriteMemory(),
});

async function heldAfter(api: MemoryApiClient): Promise<{ offsets: string[]; reserved: boolean }> {
  const object = (await getObject(api, 'ippools', 'settle')) as { spec: { allocations: Record<string, unknown> } };
  return {
    offsets: Object.keys(object.spec.allocations),
    reserved: (await getObject(api, 'overlappingrangeipreservations', '10.66.0.1')) !== undefined,
  };
}

test('a commit that cannot confirm its reservation after the pool write gives the address back and fails', async () => {
  const api = failingAfterWrite({ pool: false });
  await assert.rejects(
    commitPool(contextOf(api), pool, lowestFree),
    (err: unknown) => err instanceof HereaboutsError && err.kind === ErrorKind.Unavailable,
  );
  // a retry of the same pod must not find a record whose reservation may be gone: neither is left
  assert.deepEqual(await heldAfter(new MemoryApiClient(api.server, { namespace: 'kube-system' })), {
    offsets: [],
    reserved: false,
  });
});

test('a commit that can neither confirm nor give back its claim fails with the address committed and reserved', async () => {
  const api = failingAfterWrite({ pool: true });
  await assert.rejects(
    commitPool(contextOf(api), pool, lowestFree),
    (err: unknown) => err instanceof HereaboutsError && err.kind === ErrorKind.Unavailable,
  );
  assert.deepEqual(await heldAfter(new MemoryApiClient(api.server, { namespace: 'kube-system' })), {
    offsets: ['1'],
    reserved: true,
  });
});

test('a release whose reservation delete meets a conflict, then a lost answer, still deletes the reservation: a DEL leaves none of its attachment', async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: 'kube-system' });
  const empty = { metadata: { name: 'settle' }, spec: { range: '10.66.0.0/24', allocations: {} } };
  await createObject(api, 'ippools', empty);
  const ctx: CommitContext = {
    api,
    node: 'n1',
    reservations: true,
    budgetMs: 5_000,
    cleanupTimeoutMs: 2_000,
    log: quiet,
    memory: new WriteMemory(),
  };
  const address = await commitPool(ctx, pool, lowestFree);
  const name = '10.66.0.1';
  assert.ok((await getObject(api, 'overlappingrangeipreservations', name)) !== undefined, 'reserved');
  // The first delete is answered 409 (as if the reservation had changed since it was read), the second is applied
  // but its answer lost (504).
  const send = api.send.bind(api);
  let deletes = 0;
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (req.method === 'DELETE' && req.path.includes('/overlappingrangeipreservations/')) {
      deletes++;
      if (deletes === 1)
        return { status: 409, body: { kind: 'Status', status: 'Failure', reason: 'Conflict', code: 409 } };
      if (deletes === 2) {
        await send(req);
        return { status: 504, body: { kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504 } };
      }
    }
    return send(req);
  };
  const release: Plan<void> = () => ({ change: { release: [address] }, value: undefined });
  await commitPool(ctx, pool, release);
  api.send = send;
  assert.equal(await getObject(api, 'overlappingrangeipreservations', name), undefined, 'the reservation is gone');
  assert.ok(deletes >= 2, `${deletes} deletes`);
});
