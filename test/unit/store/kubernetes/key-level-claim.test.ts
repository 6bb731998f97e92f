// A lone claim is written as a JSON patch whose tests are its preconditions (commit.ts, claimPatch). What those
// tests must stop, on the in-memory API server (its JSON patch is checked against kube-apiserver's by
// test/model/memory-apiserver-fidelity.test.ts): a pool retired after the read, with and without other annotations;
// and a pool object the patch does not fit (no spec.allocations), which falls back to the conditional merge patch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from '../../../../src/cni/errors.ts';
import { firstFree } from '../../../../src/allocator/first-free.ts';
import type { ApiRequest, ApiResponse } from '../../../../src/store/kubernetes/api.ts';
import { commitPool, type CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { RETIRED_ANNOTATION, claimPatch, decodePoolObject } from '../../../../src/store/kubernetes/pool-object.ts';
import { createObject, getObject, mergePatch } from '../../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../../../src/store/store.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const record: AllocationRecord = { containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' };

function setup(): { api: MemoryApiClient; ctx: CommitContext; writes: Array<{ contentType?: string; status: number }> } {
  const api = new MemoryApiClient(new MemoryApiServer(), { namespace: 'kube-system' });
  const writes: Array<{ contentType?: string; status: number }> = [];
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    const res = await send(req);
    if (req.method === 'PATCH' && req.path.includes('/ippools/')) writes.push({ ...(req.contentType === undefined ? {} : { contentType: req.contentType }), status: res.status });
    return res;
  };
  return { api, ctx: { api, node: 'n1', reservations: false, budgetMs: 5_000, cleanupTimeoutMs: 1_000, log: quiet }, writes };
}

const plan = (pool: PoolRef): Plan<bigint> => (current, refused) => {
  const address = firstFree(pool.range, current, refused);
  if (address === undefined) throw new Error('exhausted');
  return { change: { claim: { address, record } }, value: address };
};

async function create(api: MemoryApiClient, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Promise<void> {
  const metadata = { name, ...(annotations === undefined ? {} : { annotations }) };
  assert.equal((await createObject(api, 'ippools', { apiVersion: 'whereabouts.cni.cncf.io/v1alpha1', kind: 'IPPool', metadata, spec } as unknown as { metadata: { name: string } })).kind, 'created');
}

for (const annotated of [false, true]) {
  test(`a node-slice pool retired after the read refuses the claim (${annotated ? 'other annotations' : 'no annotations'} when read)`, async () => {
    const { api, ctx, writes } = setup();
    const pool: PoolRef = { name: 'net-10.62.0.0-28', network: 'net', networkNamed: true, range: rangeOf('10.62.0.0/28'), assignedIn: { uid: 'u', generation: 3 } };
    await create(api, pool.name, { range: '10.62.0.0/28', allocations: {} }, annotated ? { team: 'a' } : undefined);
    const initial = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
    assert.equal(initial.shape?.annotated, annotated);
    // The controller drains the slice between this writer's read and its write.
    const retire = await mergePatch(api, 'ippools', pool.name, { metadata: { annotations: { [RETIRED_ANNOTATION]: 'u/3' } } });
    assert.equal(retire.kind, 'patched');
    writes.length = 0;
    await assert.rejects(commitPool(ctx, pool, plan(pool), { initial }), (err: unknown) => err instanceof CniError && err.code === 11 && /retired/.test(err.message));
    assert.deepEqual(writes, [{ contentType: 'application/json-patch+json', status: 422 }], 'one key-level attempt, refused by its test');
    const after = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
    assert.equal(after.allocations.size, 0, 'nothing was claimed in the retired pool');
  });
}

test('a pool object without spec.allocations fails the key-level tests; the claim is then written conditionally', async () => {
  const { api, ctx, writes } = setup();
  const pool: PoolRef = { name: '10.63.0.0-28', network: 'net', networkNamed: false, range: rangeOf('10.63.0.0/28') };
  await create(api, pool.name, { range: '10.63.0.0/28' });
  const initial = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
  const address = await commitPool(ctx, pool, plan(pool), { initial });
  assert.equal(address, ip('10.63.0.1'));
  assert.deepEqual(writes, [
    { contentType: 'application/json-patch+json', status: 422 },
    { contentType: 'application/merge-patch+json', status: 200 },
  ]);
  const after = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
  assert.deepEqual([...after.allocations.keys()], [ip('10.63.0.1')]);
});

test('claimPatch tests the stored range, the retirement mark (or no annotations at all) and the free offset, then adds the record', () => {
  const range = rangeOf('10.64.0.0/24').cidr;
  const plain = claimPatch(range, { range: '10.64.0.0/24', annotated: false }, ip('10.64.0.7'), { ...record, node: 'n1' });
  assert.deepEqual(plain.slice(0, 3), [
    { op: 'test', path: '/spec/range', value: '10.64.0.0/24' },
    { op: 'test', path: '/metadata/annotations', value: null },
    { op: 'test', path: '/spec/allocations/7', value: null },
  ]);
  const add = plain[3];
  assert.equal(add?.op, 'add');
  assert.equal(add?.path, '/spec/allocations/7');
  const { createdAt, ...entry } = add?.value as Record<string, string>;
  assert.deepEqual(entry, { id: 'c1', podref: 'ns/p1', ifname: 'net1', node: 'n1' });
  assert.match(String(createdAt), /^\d{4}-\d\d-\d\dT/);
  const annotated = claimPatch(range, { range: '10.64.0.5/24', annotated: true }, ip('10.64.0.7'), record);
  assert.deepEqual(annotated[0], { op: 'test', path: '/spec/range', value: '10.64.0.5/24' }, 'the range as stored, not re-formatted');
  assert.deepEqual(annotated[1], { op: 'test', path: '/metadata/annotations/hereabouts.cni.cncf.io~1retired', value: null });
});
