// A claim planned on a view that changed before its write (commit.ts): its JSON patch tests the resourceVersion
// read, so the API server refuses it (422) and the writer reads again. Here the change is the controller retiring
// the pool, with and without other annotations on it: the claim is then refused, and nothing lands in the retired
// pool. And a pool object the JSON patch does not fit (no spec.allocations): the claim is then a merge patch. And the
// node agent's reuse of a NodeSlicePool reading, which bounds how long a slice marked draining is still allocated from.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { firstFree } from '../../../../src/allocator/first-free.ts';
import type { ApiRequest, ApiResponse } from '../../../../src/kube/api.ts';
import { commitPool, type CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../../src/store/kubernetes/contention.ts';
import { RETIRED_ANNOTATION, decodePoolObject } from '../../../../src/store/kubernetes/pool-object.ts';
import { getObject, versionOf } from '../../../../src/store/kubernetes/objects.ts';
import { nodeSlicePools, SLICING_REUSE_MS } from '../../../../src/store/kubernetes/node-slices.ts';
import { testNetwork, testRange } from '../../../support/memory-store.ts';
import { createObject, deleteExactly, mergePatch, replaceObject } from '../../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../../../src/store/store.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';
import { HereaboutsError } from '../../../../src/errors.ts';
import { cniCodeOf } from '../../../../src/cni/errors.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const record: AllocationRecord = { containerId: 'c1', ifname: 'net1', podRef: 'ns/p1' };

function setup(): {
  api: MemoryApiClient;
  ctx: CommitContext;
  writes: Array<{ contentType?: string; status: number }>;
} {
  const api = new MemoryApiClient(new MemoryApiServer(), { namespace: 'kube-system' });
  const writes: Array<{ contentType?: string; status: number }> = [];
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    const res = await send(req);
    if (req.method === 'PATCH' && req.path.includes('/ippools/'))
      writes.push({ ...(req.contentType === undefined ? {} : { contentType: req.contentType }), status: res.status });
    return res;
  };
  return {
    api,
    ctx: {
      api,
      node: 'n1',
      reservations: false,
      budgetMs: 5_000,
      cleanupTimeoutMs: 1_000,
      log: quiet,
      memory: new WriteMemory(),
    },
    writes,
  };
}

const plan =
  (pool: PoolRef): Plan<bigint> =>
  (current, refused) => {
    const address = firstFree(pool.range, current, refused);
    if (address === undefined) throw new Error('exhausted');
    return { change: { claim: { address, record } }, value: address };
  };

/** NodeSlicePool `net` slicing `range` by /28, with these slices assigned. */
const nodeSlicePool = (range: string, allocations: unknown[]) => ({
  apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
  kind: 'NodeSlicePool',
  metadata: { name: 'net' },
  spec: { range, sliceSize: '/28' },
  status: { allocations },
});

async function create(
  api: MemoryApiClient,
  name: string,
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
): Promise<void> {
  const metadata = { name, ...(annotations === undefined ? {} : { annotations }) };
  assert.equal(
    (
      await createObject(api, 'ippools', {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'IPPool',
        metadata,
        spec,
      } as unknown as { metadata: { name: string } })
    ).kind,
    'created',
  );
}

for (const annotated of [false, true]) {
  test(`a node-slice pool retired after the read refuses the claim (${annotated ? 'other annotations' : 'no annotations'} when read)`, async () => {
    const { api, ctx, writes } = setup();
    const pool: PoolRef = {
      name: 'net-10.62.0.0-28',
      network: 'net',
      networkNamed: true,
      range: rangeOf('10.62.0.0/28'),
      sliceNode: 'n1',
    };
    await create(api, pool.name, { range: '10.62.0.0/28', allocations: {} }, annotated ? { team: 'a' } : undefined);
    const initial = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
    // The controller drains the slice between this writer's read and its write.
    const retire = await mergePatch(api, 'ippools', pool.name, {
      metadata: { annotations: { [RETIRED_ANNOTATION]: 'u/3' } },
    });
    assert.equal(retire.kind, 'patched');
    writes.length = 0;
    await assert.rejects(
      commitPool(ctx, pool, plan(pool), { initial }),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11 && /retired/.test(err.message),
    );
    assert.deepEqual(
      writes,
      [{ contentType: 'application/json-patch+json', status: 422 }],
      'one attempt, refused on its resourceVersion',
    );
    const after = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
    assert.equal(after.allocations.size, 0, 'nothing was claimed in the retired pool');
  });
}

test('a pool object without spec.allocations refuses the JSON patch of a claim; the claim is then a merge patch', async () => {
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

test('a lone claim is a JSON patch that tests the resourceVersion first and adds only the new record', async () => {
  const { api, ctx } = setup();
  const pool: PoolRef = { name: '10.64.0.0-28', network: 'net', networkNamed: false, range: rangeOf('10.64.0.0/28') };
  await create(api, pool.name, {
    range: '10.64.0.0/28',
    allocations: { '1': { id: 'x', podref: 'ns/x', ifname: 'eth0', ipamclaimref: 'ns/claim' } },
  });
  const bodies: unknown[] = [];
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (req.method === 'PATCH') bodies.push(req.body);
    return send(req);
  };
  const initial = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
  assert.equal(await commitPool(ctx, pool, plan(pool), { initial }), ip('10.64.0.2'));
  const [patch] = bodies as Array<Array<{ op: string; path: string; value: Record<string, string> }>>;
  assert.deepEqual(
    patch?.map((o) => [o.op, o.path]),
    [
      ['test', '/metadata/resourceVersion'],
      ['add', '/spec/allocations/2'],
      ['add', '/metadata/managedFields'],
    ],
  );
  assert.deepEqual(patch[2]?.value, [{}], "clears the API server's field tracking");
  assert.equal(patch[0]?.value, initial.resourceVersion);
  assert.deepEqual(
    { ...patch[1]?.value, createdAt: 'T' },
    { id: 'c1', podref: 'ns/p1', ifname: 'net1', node: 'n1', createdAt: 'T' },
  );
  const raw = (await getObject(api, 'ippools', pool.name)) as {
    spec: { allocations: Record<string, Record<string, string>> };
  };
  assert.equal(raw.spec.allocations['1']?.['ipamclaimref'], 'ns/claim', 'other records are untouched');
});

test('a claim planned on a NodeSlicePool that was deleted and re-created since is refused in the pool the new one retired', async () => {
  const { api, ctx, writes } = setup();
  const cacheDir = mkdtempSync(join(tmpdir(), 'hereabouts-stale-incarnation-'));
  try {
    const nsp = (allocations: unknown[]) => nodeSlicePool('10.65.0.0/24', allocations);
    await createObject(api, 'nodeslicepools', nsp([{ nodeName: 'n1', sliceRange: '10.65.0.0/28' }]));
    const config = {
      ...testNetwork([testRange('10.65.0.0/24')], { networkName: 'net' }),
      ipam: {
        ...testNetwork([testRange('10.65.0.0/24')], { networkName: 'net' }).ipam,
        nodeSliceSize: 28,
        enableOverlappingRanges: false,
      },
    };
    const scope = { server: 'memory', namespace: 'kube-system' };
    const sliceCtx = { api, node: 'n1', cacheDir, scope, log: { ...quiet, error() {} } };
    // The ADD reads its slice from the first NodeSlicePool ... and stalls.
    const [pool] = await nodeSlicePools(sliceCtx, config, 'allocate');
    assert.ok(pool !== undefined);
    // Meanwhile the NodeSlicePool is deleted and re-created; the new one drains n1's slice, the controller retires
    // its empty pool under the new NodeSlicePool's uid and hands the slice to another node.
    const old = versionOf(await getObject(api, 'nodeslicepools', 'net'))!;
    assert.equal(await deleteExactly(api, 'nodeslicepools', 'net', old), 'deleted');
    const created = await createObject(api, 'nodeslicepools', nsp([{ nodeName: 'n2', sliceRange: '10.65.0.0/28' }]));
    assert.equal(created.kind, 'created');
    const fresh = versionOf(await getObject(api, 'nodeslicepools', 'net'))!;
    assert.notEqual(fresh.uid, old.uid);
    await create(
      api,
      pool.name,
      { range: '10.65.0.0/28', allocations: {} },
      { [RETIRED_ANNOTATION]: `${fresh.uid}/1` },
    );
    writes.length = 0;
    await assert.rejects(
      commitPool(ctx, pool, plan(pool), {}),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11 && /retired/.test(err.message),
    );
    const after = decodePoolObject(await getObject(api, 'ippools', pool.name), pool, () => {});
    assert.equal(after.allocations.size, 0, 'the stalled ADD claimed an address in a slice given to another node');
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
});

test('a long-lived host reuses a NodeSlicePool reading that gave it a slice for SLICING_REUSE_MS, for ADDs only', async (t) => {
  const api = new MemoryApiClient(new MemoryApiServer(), { namespace: 'kube-system' });
  const reads: string[] = [];
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (req.method === 'GET' && req.path.includes('/nodeslicepools/')) reads.push(req.path);
    return send(req);
  };
  const cacheDir = mkdtempSync(join(tmpdir(), 'hereabouts-slicing-reuse-'));
  t.after(() => rmSync(cacheDir, { recursive: true, force: true }));
  assert.equal((await createObject(api, 'nodeslicepools', nodeSlicePool('10.66.0.0/24', []))).kind, 'created');
  const base = testNetwork([testRange('10.66.0.0/24')], { networkName: 'net' });
  const config = { ...base, ipam: { ...base.ipam, nodeSliceSize: 28 } };
  const memory = new WriteMemory();
  const sliceCtx = {
    api,
    node: 'n1',
    cacheDir,
    scope: { server: 'memory', namespace: 'kube-system' },
    log: { ...quiet, error() {} },
    memory,
  };
  // No slice yet: nothing is remembered, the next ADD reads again.
  await assert.rejects(nodeSlicePools(sliceCtx, config, 'allocate'), /no slice assigned/);
  const current = (await getObject(api, 'nodeslicepools', 'net')) as Record<string, unknown>;
  const assigned = await replaceObject(api, 'nodeslicepools', 'net', {
    ...current,
    status: { allocations: [{ nodeName: 'n1', sliceRange: '10.66.0.16/28' }] },
  });
  assert.equal(assigned.kind, 'patched');
  reads.length = 0;
  const [first] = await nodeSlicePools(sliceCtx, config, 'allocate');
  const [second] = await nodeSlicePools(sliceCtx, config, 'allocate');
  assert.equal(first?.name, second?.name);
  assert.equal(second?.sliceNode, 'n1');
  assert.equal(reads.length, 1, 'the second ADD reused the reading of the first');
  const released = await nodeSlicePools(sliceCtx, config, 'release');
  assert.equal(reads.length, 2, 'DEL and GC read the NodeSlicePool every time');
  // The DEL names the node's slice pool as the ADD does: the node agent's warm set of that pool serves both (a new
  // sandbox's ADD then gets the address its DEL just released, not a warm one).
  assert.deepEqual(released, [second]);
  // Once the reading is older than SLICING_REUSE_MS, an ADD reads again.
  for (const [key, reading] of memory.slicings)
    memory.slicings.set(key, { ...reading, atMs: reading.atMs - SLICING_REUSE_MS });
  await nodeSlicePools(sliceCtx, config, 'allocate');
  assert.equal(reads.length, 3);
  // A process of its own (a new memory) reads on its first ADD.
  await nodeSlicePools({ ...sliceCtx, memory: new WriteMemory() }, config, 'allocate');
  assert.equal(reads.length, 4);
});
