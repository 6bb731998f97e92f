// Warm sets in the node agent (src/store/kubernetes/warm/warm-sets.ts) on the in-memory API server: an ADD answered
// from the set sends no request; the pool names the pod after a grouped write; a DEL is answered first and released
// after; a hand-out whose rename a stalled agent never made is renamed by the next agent, never handed out again;
// warm sets stay off without the controller's word, and go back when Whereabouts writes the pool.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { planAssign } from '../../../../../src/ipam/assign.ts';
import { planRelease } from '../../../../../src/ipam/release.ts';
import type { ApiRequest, ApiResponse } from '../../../../../src/kube/api.ts';
import { leasePath, microTime } from '../../../../../src/kube/lease.ts';
import { getObject, WARM_ALLOWED } from '../../../../../src/store/kubernetes/objects.ts';
import { decodeAllocations } from '../../../../../src/store/kubernetes/pool-object.ts';
import { createObject } from '../../../../../src/store/kubernetes/resources.ts';
import type { PoolRef } from '../../../../../src/store/store.ts';
import { warmHolder } from '../../../../../src/store/warm-record.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../../support/memory-apiserver.ts';
import { rangeOf } from '../../../allocator/range-fixture.ts';
import {
  add,
  addressOf,
  agent,
  gate,
  NS,
  pod,
  pool,
  records,
  tempDir,
  until,
  warmedAgent,
  warmIn,
  type Obj,
  warmWorld,
} from './agent-fixture.ts';
test('an ADD from the warm set is answered while the API server answers nothing; a grouped write then names the pod, and its reservation follows', async (t) => {
  const { admin, a } = await warmWorld(t);
  const warmBefore = warmIn(await records(admin));
  assert.equal(warmBefore.length, a.warm.stats().warm, 'every warm address the agent counts is a warm record');

  a.hold();
  const address = addressOf(await add(a.store, 'web'));
  a.release();
  assert.ok(warmBefore.includes(address), 'a warm address');
  assert.equal(a.warm.stats().handedOut, 1);

  await until('the rename', async () => (await records(admin)).get(address)?.podRef === 'default/web');
  const renamed = (await records(admin)).get(address);
  assert.equal(renamed?.containerId, 'c-web');
  assert.equal(renamed.node, 'node-a');
  const ip = `10.77.0.${Number(address & 0xffn)}`;
  await until('the reservation to follow', async () => {
    const reservation = (await getObject(admin, 'overlappingrangeipreservations', ip)) as Obj | undefined;
    return (reservation?.['spec'] as Obj | undefined)?.['podref'] === 'default/web';
  });
});

test('a burst of ADDs gets distinct addresses, renamed in fewer pool writes than ADDs', async (t) => {
  const { admin, a } = await warmWorld(t);
  // Grow the set to its maximum with a few ADDs in the window.
  for (let i = 0; i < 8; i++) await add(a.store, `warmup-${i}`);
  await until('a larger set', async () => a.warm.stats().warm >= 6);
  const writesBefore = a.warm.stats().groupWrites;
  const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => add(a.store, `burst-${i}`)));
  const addresses = outcomes.map(addressOf);
  assert.equal(new Set(addresses).size, addresses.length, 'no address twice');
  await until('every rename', async () => {
    const all = await records(admin);
    return addresses.every((x, i) => all.get(x)?.podRef === `default/burst-${i}`);
  });
  const stats = a.warm.stats();
  assert.ok(stats.groupWrites - writesBefore < 6, `grouped: ${stats.groupWrites - writesBefore} writes for 6 ADDs`);
  // Each pod's address is held once in the pool, by that pod.
  const all = await records(admin);
  const byPod = new Map<string, bigint[]>();
  for (const [x, r] of all) byPod.set(r.podRef, [...(byPod.get(r.podRef) ?? []), x]);
  for (let i = 0; i < 6; i++) assert.deepEqual(byPod.get(`default/burst-${i}`), [addresses[i]]);
});

test('a DEL answered by the agent is made durable first, then its address is released in a grouped write', async (t) => {
  const { admin, a } = await warmWorld(t);
  const address = addressOf(await add(a.store, 'web'));
  await until('the rename', async () => (await records(admin)).get(address)?.podRef === 'default/web');
  a.hold();
  const released = await a.store.update(pool, planRelease(pod('web')));
  a.release();
  assert.deepEqual(released, [address], 'answered while the API server answers nothing');
  await until('the address released', async () => !(await records(admin)).has(address));
  const ip = `10.77.0.${Number(address & 0xffn)}`;
  await until(
    'its reservation gone',
    async () => (await getObject(admin, 'overlappingrangeipreservations', ip)) === undefined,
  );
  // A DEL of the same attachment again finds nothing.
  assert.deepEqual(await a.store.update(pool, planRelease(pod('web'))), []);
});

test('an agent stalled between hand-out and rename: the next agent replays its journal, renames, and never hands the address out again', async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const dirs = { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') };
  const first = await warmedAgent(t, server, dirs, { closed: false }); // killed: never closed
  // From now on the first agent's pool writes never come back (a stall, then SIGKILL).
  const send = first.api.send.bind(first.api);
  first.api.send = (req: ApiRequest): Promise<ApiResponse> =>
    req.method === 'GET' ? send(req) : new Promise<ApiResponse>(() => undefined);
  const handed = addressOf(await add(first.store, 'web'));
  assert.ok(warmHolder((await records(admin)).get(handed) ?? { containerId: '', ifname: '', podRef: 'x' }));

  // The next agent on the node: the same journal; a cache directory of its own, since the stalled one still holds
  // the pool's file lock in this process (a killed process's lock is found stale by its pid: fs/lock.ts).
  const second = agent(t, server, { journal: dirs.journal, cache: tempDir(t, 'cache') });
  assert.equal(second.warm.stats().pending, 1, 'the hand-out is pending after replay');
  // Its first call on the pool writes the pending rename before anything else.
  const other = addressOf(await add(second.store, 'db'));
  assert.notEqual(other, handed);
  assert.equal((await records(admin)).get(handed)?.podRef, 'default/web');
  for (let i = 0; i < 10; i++) assert.notEqual(addressOf(await add(second.store, `more-${i}`)), handed);
});

test('without the controller word, or with its "off", no warm record is made; calls run the synchronous path', async (t) => {
  for (const verdict of [
    undefined,
    'Whereabouts runs (kube-system/whereabouts-x): its reconciler would free warm records',
  ]) {
    const server = new MemoryApiServer();
    const admin = new MemoryApiClient(server, { namespace: NS });
    if (verdict !== undefined) await gate(admin, verdict);
    const a = agent(t, server, { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') });
    for (let i = 0; i < 4; i++) await add(a.store, `p-${i}`);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(warmIn(await records(admin)), [], String(verdict));
    assert.equal(a.warm.stats().handedOut, 0);
  }
});

test('a pool a Whereabouts plugin writes gives its warm records back', async (t) => {
  const { admin, a } = await warmWorld(t);
  assert.ok(warmIn(await records(admin)).length > 0);
  // Whereabouts' Lease, just written by a Whereabouts plugin (its leaseTransitions bumped) and handed back.
  const now = microTime(new Date());
  const spec = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 3 };
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'whereabouts' }, spec };
  assert.equal((await admin.send({ method: 'POST', path: leasePath(NS), body: lease })).status, 201);
  await add(a.store, 'web'); // handed out from the set; its grouped write meets the Lease
  await until('the warm records to go back', async () => warmIn(await records(admin)).length === 0);
  const before = a.warm.stats().handedOut;
  await add(a.store, 'db');
  assert.equal(a.warm.stats().handedOut, before, 'the next ADD ran the synchronous path');
});

test("one node's warm addresses in two overlapping ranges are never the same address (each pool's warm record is an attachment of its own)", async (t) => {
  const { admin, a } = await warmWorld(t);
  const outerWarm = warmIn(await records(admin));
  assert.ok(outerWarm.length >= 2);
  // A /29 inside the /24 (the same addresses, another IPPool) whose only free addresses are the outer pool's warm
  // ones: its own warm claim can only try them, and must find them reserved.
  const inner: PoolRef = { name: '10.77.0.0-29', network: 'net', networkNamed: false, range: rangeOf('10.77.0.0/29') };
  const base = 0x0a4d0000n; // 10.77.0.0
  const others: Record<string, unknown> = {};
  for (let offset = 1n; offset <= 6n; offset++)
    if (!outerWarm.includes(base + offset))
      others[String(offset)] = { id: `c-other-${offset}`, podref: `default/o${offset}`, ifname: 'net1' };
  await createObject(admin, 'ippools', {
    metadata: { name: inner.name },
    spec: { range: '10.77.0.0/29', allocations: others },
  } as { metadata: { name: string } });
  // A first call on the inner pool: the agent reads it, then tries to fill its warm set there.
  await a.store.update(inner, planRelease(pod('nobody')));
  await a.warm.settle();
  const object = (await getObject(admin, 'ippools', inner.name)) as Obj;
  const innerRecords = decodeAllocations((object['spec'] as Obj)['allocations'], inner.range.cidr, {
    where: 't',
    warn: () => undefined,
    strict: false,
  });
  const outer = await records(admin);
  // (The seeded records may overlap the outer pool's pods: only what the agent claimed is judged.)
  assert.deepEqual(
    warmIn(innerRecords).filter((x) => outer.has(x)),
    [],
    'no warm address held in both pools',
  );
});

test("a pod's new sandbox right after its DEL does not take a warm address: the synchronous path gives it the lowest free one, its own", async (t) => {
  const { admin, a } = await warmWorld(t);
  const first = (await records(admin)).keys().next().value; // 'first', the lowest address
  assert.equal((await records(admin)).get(first ?? 0n)?.containerId, 'c-first');
  // The sandbox dies: DEL, then ADD of a new container of the same pod.
  await a.store.update(pool, planRelease(pod('first')));
  await a.warm.settle();
  assert.ok(!(await records(admin)).has(first ?? 0n), 'released');
  const again = await a.store.update(
    pool,
    planAssign(pool, { ...pod('first'), containerId: 'c-first-2' }, { createdAt: new Date().toISOString() }),
  );
  assert.equal(addressOf(again), first, 'the address it had');
  assert.ok(warmIn(await records(admin)).length > 0, 'the warm set is still there');
});

test("a node slice that drains gets its warm records back, though the node makes no more ADDs there; a new slice's first ADD does it at once", async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const sliceRef = (cidr: string): PoolRef => ({
    name: `slicenet-node-a-${cidr.replace(/[./]/g, '-')}`,
    network: 'slicenet',
    networkNamed: true,
    range: rangeOf(cidr),
    resultPrefix: 24,
    sliceNode: 'node-a',
  });
  const first = sliceRef('10.78.0.0/28');
  const second = sliceRef('10.78.0.16/28');
  await createObject(admin, 'nodeslicepools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'NodeSlicePool',
    metadata: { name: 'slicenet' },
    spec: { range: '10.78.0.0/24', sliceSize: '/28' },
    status: { allocations: [{ nodeName: 'node-a', sliceRange: '10.78.0.0/28' }], draining: [] },
  } as { metadata: { name: string } });
  const a = agent(t, server, { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') });
  const addTo = (ref: PoolRef, name: string) =>
    a.store.update(ref, planAssign(ref, pod(name), { createdAt: new Date().toISOString() }));
  const warmOf = async (ref: PoolRef): Promise<number> =>
    [...(await records(admin, ref)).values()].filter((r) => warmHolder(r) === 'node-a').length;
  addressOf(await addTo(first, 'web-0'));
  await until('the first slice to hold warm addresses', async () => (await warmOf(first)) > 0);

  // The controller marks the slice draining (it waits for the pool to empty before it lets the slice go).
  const nsp = (await getObject(admin, 'nodeslicepools', 'slicenet')) as Obj;
  const status = { allocations: [], draining: [{ nodeName: 'node-a', sliceRange: '10.78.0.0/28', reason: 'reslice' }] };
  const replaced = await admin.send({
    method: 'PUT',
    path: `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/${NS}/nodeslicepools/slicenet`,
    body: { ...nsp, status },
  });
  assert.equal(replaced.status, 200);
  await until('the draining slice to have no warm record', async () => (await warmOf(first)) === 0, 15_000);
  assert.equal((await records(admin, first)).get(0x0a4e0001n)?.podRef, 'default/web-0', "the pod's address stays");

  // Given a slice again, the node's first ADD there fills its set; one more slice's ADD empties this one at once.
  addressOf(await addTo(second, 'web-1'));
  await until('the second slice to hold warm addresses', async () => (await warmOf(second)) > 0);
  const third = sliceRef('10.78.0.32/28');
  addressOf(await addTo(third, 'web-2'));
  await until('the second slice to give its warm records back', async () => (await warmOf(second)) === 0, 3_000);
});

/** A warmed agent on an API server of its own that allows warm sets, which the test closes itself. */
async function unclosedWarmAgent(t: TestContext) {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const dirs = { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') };
  return { admin, a: await warmedAgent(t, server, dirs, { closed: false }) };
}

test('an agent that stops makes its pending renames and gives its warm addresses back (an upgrade leaves none behind)', async (t) => {
  const { admin, a } = await unclosedWarmAgent(t);
  a.hold(); // the rename of the next hand-out waits until close() runs
  const address = addressOf(await add(a.store, 'web'));
  assert.ok(warmIn(await records(admin)).length > 1, 'warm addresses besides the one handed out');
  a.release();
  await a.warm.close();
  const after = await records(admin);
  assert.deepEqual(warmIn(after), [], 'no warm record left');
  assert.equal(after.get(address)?.podRef, 'default/web', 'the hand-out was renamed before the agent went');
});

test('an agent that stops while the API server does not answer gives up after its give-back time', async (t) => {
  const { admin, a } = await unclosedWarmAgent(t);
  a.hold();
  const started = Date.now();
  await a.warm.close(300);
  assert.ok(Date.now() - started < 2_000, `close took ${Date.now() - started} ms`);
  // (Read while the agent's requests still wait: once released, its give-back would land.)
  assert.ok(warmIn(await records(admin)).length > 0, 'the warm records stay for the next agent to adopt');
  a.release();
});

test("a pod's new sandbox gets the address its DEL released even when a lower one was freed meanwhile", async (t) => {
  const { admin, a } = await warmWorld(t);
  const low = addressOf(await add(a.store, 'low'));
  const mine = addressOf(await add(a.store, 'web'));
  assert.ok(low < mine);
  await a.warm.settle();
  // The sandbox of web dies (DEL), and meanwhile a lower address is freed (another pod goes).
  await a.store.update(pool, planRelease(pod('web')));
  await a.store.update(pool, planRelease(pod('low')));
  await a.warm.settle();
  const all = await records(admin);
  assert.ok(!all.has(low) && !all.has(mine), 'both released');
  const again = await a.store.update(
    pool,
    planAssign(pool, { ...pod('web'), containerId: 'c-web-2' }, { createdAt: new Date().toISOString() }),
  );
  assert.equal(addressOf(again), mine, 'the address it had, not the lowest free one');
});

test("a pod's new sandbox gets the address its DEL released though the set claimed it back meanwhile", async (t) => {
  const { admin, a } = await warmWorld(t);
  const mine = addressOf(await add(a.store, 'web'));
  await a.warm.settle();
  await a.store.update(pool, planRelease(pod('web')));
  await a.warm.settle();
  assert.ok(!(await records(admin)).has(mine), 'released');
  // Another pod takes a warm address: the set refills from the lowest free one, the address web had.
  addressOf(await add(a.store, 'other'));
  await until("web's address warm again", async () => warmIn(await records(admin)).includes(mine));
  const again = await a.store.update(
    pool,
    planAssign(pool, { ...pod('web'), containerId: 'c-web-2' }, { createdAt: new Date().toISOString() }),
  );
  assert.equal(addressOf(again), mine, 'the address it had, handed out from the set');
  await a.warm.settle();
  assert.equal((await records(admin)).get(mine)?.containerId, 'c-web-2');
});

test("a hand-out's rename that landed unanswered, then taken over by a re-ADD of its pod on the synchronous path: the reservation follows to the new container", async (t) => {
  const { admin, a } = await warmWorld(t);
  await a.warm.settle();
  // The rename's pool write is applied, but its answer is a 504; the next request (the grouped write the re-ADD waits
  // for) gets a 503: the re-ADD runs the synchronous path on a pool that names the pod, its reservation the agent.
  const send = a.api.send.bind(a.api);
  let phase: 'rename' | 'fail-next' | 'pass' = 'rename';
  a.api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (phase === 'rename' && req.method === 'PATCH' && JSON.stringify(req.body ?? '').includes('"c-web"')) {
      await send(req);
      phase = 'fail-next';
      return { status: 504, body: { kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504 } };
    }
    if (phase === 'fail-next') {
      phase = 'pass';
      return { status: 503, body: { kind: 'Status', status: 'Failure', reason: 'ServiceUnavailable', code: 503 } };
    }
    return send(req);
  };
  const address = addressOf(await add(a.store, 'web'));
  await until('the rename to land unanswered', () => phase !== 'rename');
  const ip = `10.77.0.${Number(address & 0xffn)}`;
  const again = await a.store.update(
    pool,
    planAssign(pool, { ...pod('web'), containerId: 'c-web-2' }, { createdAt: new Date().toISOString() }),
  );
  assert.equal(addressOf(again), address, 'the re-ADD keeps the address');
  assert.equal(phase, 'pass');
  await a.warm.settle();
  assert.equal((await records(admin)).get(address)?.containerId, 'c-web-2');
  const spec = ((await getObject(admin, 'overlappingrangeipreservations', ip)) as Obj | undefined)?.['spec'] as
    Obj | undefined;
  assert.deepEqual([spec?.['podref'], spec?.['containerid']], ['default/web', 'c-web-2'], 'the reservation follows');
  assert.equal(a.warm.stats().lost, 0, 'the hand-out was not lost: its record was taken over by its own pod');
  assert.equal(a.warm.stats().pending, 0);
});
