// Never twice with warm sets (DESIGN §11, docs/safety.md): the pool is the only record of who holds an address, and
// the agent hands out only what the pool view it holds names as this node's warm record, written with the call's
// settings. Each test is a way the agent's own memory of its set once disagreed with the pool.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WHEREABOUTS_LEADER_TIMING } from '../../../../../src/config/leader-timing.ts';
import type { AssignOutcome } from '../../../../../src/ipam/assign.ts';
import { planRelease } from '../../../../../src/ipam/release.ts';
import type { ApiRequest, ApiResponse } from '../../../../../src/kube/api.ts';
import { leasePath, microTime } from '../../../../../src/kube/lease.ts';
import { WriteMemory } from '../../../../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../../../../src/store/kubernetes/kubernetes-store.ts';
import { getObject, WARM_ALLOWED } from '../../../../../src/store/kubernetes/objects.ts';
import type { AllocationRecord } from '../../../../../src/store/store.ts';
import { warmHolder } from '../../../../../src/store/warm-record.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../../support/memory-apiserver.ts';
import {
  add,
  addressOf,
  agent,
  gate,
  NS,
  pod,
  pool,
  quiet,
  records,
  tempDir,
  until,
  warmedAgent,
  warmIn,
  type Obj,
  warmWorld,
} from './agent-fixture.ts';

/** A set that grows with a burst and shrinks back to one address 300 ms after it. */
const SHORT_WINDOW = { minimum: 1, maximum: 8, maxShareOfFree: 0.5, windowMs: 300, idleAfterMs: 300 };

const isPoolWrite = (req: ApiRequest): boolean => req.method !== 'GET' && req.path.includes('/ippools/');
const timeout504: ApiResponse = {
  status: 504,
  body: { kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504 },
};

/** Every address the pool records, with whom it records there: each pod's address is held for that pod. */
function assertHeldFor(all: Map<bigint, AllocationRecord>, handed: ReadonlyMap<string, bigint>): void {
  for (const [name, address] of handed)
    assert.equal(all.get(address)?.podRef, `default/${name}`, `${name}'s address ${address} is recorded for it`);
}

test('a give-back whose answer is lost restores nothing from memory: no later ADD gets an address the pool no longer holds', async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const a = await warmedAgent(
    t,
    server,
    { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') },
    {
      bounds: SHORT_WINDOW,
    },
  );
  const handed = new Map<string, bigint>();
  // A burst grows the set; once it is idle, the next grouped write gives the surplus back.
  for (let i = 0; i < 6; i++) handed.set(`burst-${i}`, addressOf(await add(a.store, `burst-${i}`)));
  await until('a larger set', () => a.warm.stats().warm >= 3);
  await a.warm.settle();
  await new Promise((r) => setTimeout(r, 400));

  // The give-back lands, but its answer is a 504.
  const send = a.api.send.bind(a.api);
  let lost = false;
  a.api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (lost || !isPoolWrite(req)) return send(req);
    lost = true;
    await send(req);
    return timeout504;
  };
  const before = warmIn(await records(admin)).length;
  // A call that changes nothing runs the synchronous path; the grouped write after it gives the surplus back.
  assert.deepEqual(await a.store.update(pool, planRelease(pod('nobody'))), []);
  await until('the give-back to fail', () => a.warm.stats().groupWriteFailures === 1);
  assert.ok(warmIn(await records(admin)).length < before, 'it landed');

  // A plugin process of the node (a call the agent did not take) writes the node cache the agent reads.
  const plugin = new KubernetesStore({
    api: new MemoryApiClient(server, { namespace: NS }),
    node: 'node-a',
    cacheDir: a.cacheDir,
    reservations: true,
    log: quiet,
    memory: new WriteMemory(),
    whereaboutsLease: WHEREABOUTS_LEADER_TIMING,
  });
  handed.set('plugin', addressOf(await add(plugin, 'plugin')));
  // ADDs answered while the agent's own writes cannot land: each must be an address the pool holds for the node.
  a.hold();
  for (let i = 0; i < 6; i++) {
    const answer = await Promise.race([add(a.store, `after-${i}`), new Promise((r) => setTimeout(r, 200))]);
    if (answer === undefined) break; // it waits for the API: not answered from the set
    const address = addressOf(answer as AssignOutcome);
    const now = (await records(admin)).get(address);
    assert.ok(
      now !== undefined && warmHolder(now) === 'node-a',
      `after-${i} was handed ${address}, which the pool holds for ${now === undefined ? 'nobody' : now.containerId}`,
    );
    handed.set(`after-${i}`, address);
  }
  a.release();
  await a.warm.settle();
  assertHeldFor(await records(admin), handed);
  assert.equal(new Set(handed.values()).size, handed.size, 'no address twice');
  assert.equal(a.warm.stats().lost, 0, 'no hand-out found its record gone');
});

test('while a grouped write waits for the Whereabouts Lease, no address is handed out, and the ADDs answered before keep their records', async (t) => {
  const { admin, a } = await warmWorld(t);
  for (let i = 0; i < 4; i++) await add(a.store, `warmup-${i}`);
  await until('a larger set', () => a.warm.stats().warm >= 3);
  await a.warm.settle();
  // A Whereabouts plugin holds its Lease (renewed within its duration): hereabouts' writes wait for it.
  const now = microTime(new Date());
  const spec = {
    holderIdentity: 'whereabouts-node-b',
    leaseDurationSeconds: 3,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: 7,
  };
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'whereabouts' }, spec };
  assert.equal((await admin.send({ method: 'POST', path: leasePath(NS), body: lease })).status, 201);

  const handed = new Map<string, bigint>();
  handed.set('web', addressOf(await add(a.store, 'web'))); // from the set; its rename meets the Lease and waits
  await new Promise((r) => setTimeout(r, 300));
  // Calls during the wait: none is answered from the warm set (it would wait for the same Lease to be renamed).
  const handedOut = a.warm.stats().handedOut;
  const during = add(a.store, 'during');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(a.warm.stats().handedOut, handedOut, 'no hand-out while the grouped write waits for the Lease');

  // Whereabouts hands its Lease back: the waiting writes go on.
  const current = (await admin.send({ method: 'GET', path: `${leasePath(NS)}/whereabouts` })).body as Obj;
  const back = microTime(new Date());
  const released = {
    ...current,
    spec: { ...spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: back },
  };
  assert.equal((await admin.send({ method: 'PUT', path: `${leasePath(NS)}/whereabouts`, body: released })).status, 200);
  handed.set('during', addressOf(await during));
  await a.warm.settle();
  await until(
    'the warm records to go back (Whereabouts wrote lately)',
    async () => {
      return warmIn(await records(admin)).length === 0;
    },
    10_000,
  );
  const all = await records(admin);
  assertHeldFor(all, handed);
  for (const [name, address] of handed) {
    const ip = `10.77.0.${Number(address & 0xffn)}`;
    const reservation = (await getObject(admin, 'overlappingrangeipreservations', ip)) as Obj | undefined;
    assert.equal((reservation?.['spec'] as Obj | undefined)?.['podref'], `default/${name}`, `${name}'s reservation`);
  }
});

test("a tenant's NAD with other settings on the same pool never changes how the agent claims the other NAD's warm addresses", async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const dirs = { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') };
  const victim = await warmedAgent(t, server, dirs);
  // The same agent (the same warm sets), called through a NAD with the same pool but without reservations.
  const store = new KubernetesStore({
    api: victim.api,
    node: 'node-a',
    cacheDir: dirs.cache,
    reservations: false,
    log: quiet,
    memory: new WriteMemory(),
    warm: victim.warm,
    whereaboutsLease: WHEREABOUTS_LEADER_TIMING,
  });
  for (let i = 0; i < 6; i++) await add(store, `tenant-${i}`);
  await victim.warm.settle();
  // Every warm address the pool holds for the node still has its reservation: the victim's hand-outs rely on it.
  for (const address of warmIn(await records(admin))) {
    const ip = `10.77.0.${Number(address & 0xffn)}`;
    const reservation = await getObject(admin, 'overlappingrangeipreservations', ip);
    assert.ok(reservation !== undefined, `warm ${ip} is reserved`);
  }
  const victimAdds = new Map<string, bigint>();
  for (let i = 0; i < 6; i++) victimAdds.set(`victim-${i}`, addressOf(await add(victim.store, `victim-${i}`)));
  await victim.warm.settle();
  for (const [name, address] of victimAdds) {
    const ip = `10.77.0.${Number(address & 0xffn)}`;
    const reservation = (await getObject(admin, 'overlappingrangeipreservations', ip)) as Obj | undefined;
    assert.equal((reservation?.['spec'] as Obj | undefined)?.['podref'], `default/${name}`, `${name} is reserved`);
  }
});

test("a stopped agent's give-back that lands late cannot free what the next agent adopted and handed out", async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const journal = tempDir(t, 'journal');
  const first = await warmedAgent(
    t,
    server,
    { journal, cache: tempDir(t, 'cache') },
    { closed: false, exclusive: true },
  );
  // The first agent's writes from now on reach the API server only later, and it dies before any answer comes.
  const send = first.api.send.bind(first.api);
  const late: Array<() => Promise<void>> = [];
  first.api.send = (req: ApiRequest): Promise<ApiResponse> => {
    if (req.method === 'GET') return send(req);
    late.push(async () => {
      await send(req);
    });
    return new Promise<ApiResponse>(() => undefined);
  };
  await first.warm.close(200); // its give-back is sent; the journal's lock goes back after 200 ms
  assert.ok(late.length > 0, 'its give-back was sent');
  const lateWrites = late.length;

  const second = agent(t, server, { journal, cache: tempDir(t, 'cache') }, { exclusive: true });
  assert.deepEqual(await second.store.update(pool, planRelease(pod('nobody'))), []); // its first call on the pool
  await until('the set adopted', () => second.warm.stats().warm > 0);
  second.hold();
  const handed = new Map<string, bigint>();
  for (let i = 0; i < 2; i++) {
    const answer = await Promise.race([add(second.store, `web-${i}`), new Promise((r) => setTimeout(r, 200))]);
    if (answer === undefined) break;
    handed.set(`web-${i}`, addressOf(answer as AssignOutcome));
  }
  assert.ok(handed.size > 0, 'answered from the adopted set');
  assert.equal(late.length, lateWrites, 'the stopped agent wrote nothing more');
  for (const land of late.splice(0)) await land(); // the first agent's give-back reaches the API server now
  second.release();
  await second.warm.settle();
  assertHeldFor(await records(admin), handed);
});

test("in a rolling update the new agent takes the journal's lock once the old one gives it back, and serves warm sets from then on", async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const journal = tempDir(t, 'journal');
  const old = await warmedAgent(t, server, { journal, cache: tempDir(t, 'cache') }, { closed: false, exclusive: true });
  old.hold();
  const handed = addressOf(await add(old.store, 'web')); // its rename waits for the API
  const logs: string[] = [];
  const next = agent(
    t,
    server,
    { journal, cache: tempDir(t, 'cache') },
    {
      exclusive: true,
      tickMs: 50,
      log: (msg) => logs.push(msg),
    },
  );
  assert.ok(
    logs.some((l) => l.includes('warm sets off') && l.includes('tried again')),
    'off while the old agent holds the lock',
  );
  for (let i = 0; i < 2; i++) await add(next.store, `sync-${i}`);
  assert.equal(next.warm.stats().handedOut, 0, 'no hand-out while the old agent holds the lock');
  assert.equal(next.warm.stats().journalOff, 1, 'its metric says so (hereabouts_node_warm_journal_off)');
  old.release();
  await old.warm.close();
  assert.equal((await records(admin)).get(handed)?.podRef, 'default/web', 'the old agent renamed before it went');
  await add(next.store, 'after'); // the first call after the lock is taken: the set fills
  await until('the new agent to hand out from its set', async () => {
    await add(next.store, `more-${String(Date.now())}`);
    return next.warm.stats().handedOut > 0;
  });
  assert.equal(next.warm.stats().journalOff, 0);
});

test('a DEL answered from the set whose reservation delete fails: the reservation goes with its record at the next grouped write', async (t) => {
  const { admin, a } = await warmWorld(t);
  const address = addressOf(await add(a.store, 'web'));
  await a.warm.settle();
  const ip = `10.77.0.${Number(address & 0xffn)}`;
  const send = a.api.send.bind(a.api);
  let refused = 0;
  a.api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (refused < 2 && req.method === 'DELETE' && req.path.includes('/overlappingrangeipreservations/')) {
      refused++;
      return { status: 503, body: { kind: 'Status', status: 'Failure', reason: 'ServiceUnavailable', code: 503 } };
    }
    return send(req);
  };
  assert.deepEqual(await a.store.update(pool, planRelease(pod('web'))), [address]);
  await until('the address released', async () => !(await records(admin)).has(address));
  assert.ok(refused > 0, 'the reservation delete failed');
  assert.ok(a.warm.stats().pending > 0, 'the DEL stays pending while its reservation stays');
  await a.warm.settle();
  await until(
    'the reservation gone with its record',
    async () => (await getObject(admin, 'overlappingrangeipreservations', ip)) === undefined,
    10_000,
  );
  await until('nothing pending', () => a.warm.stats().pending === 0, 10_000);
});

test('a DEL on the synchronous path while its hand-out is not renamed yet releases it: the rename never lands after the DEL answered', async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const cache = tempDir(t, 'cache');
  const a = await warmedAgent(t, server, { journal: tempDir(t, 'journal'), cache });
  await a.warm.settle();
  // The API server refuses every pool write for a while (not applied): the hand-out's rename stays pending.
  const send = a.api.send.bind(a.api);
  let refusing = true;
  a.api.send = async (req: ApiRequest): Promise<ApiResponse> =>
    refusing && isPoolWrite(req)
      ? { status: 500, body: { kind: 'Status', status: 'Failure', reason: 'InternalError', code: 500 } }
      : send(req);
  const address = addressOf(await add(a.store, 'victim'));
  await until('its rename to fail', () => a.warm.stats().groupWriteFailures > 0);
  assert.ok(a.warm.stats().pending > 0, 'the rename is pending');
  // No node cache (an uncertain write dropped it): the DEL cannot be answered from the set and runs the synchronous
  // path, where the pool still shows the warm record, not the pod's: it finds nothing of the pod's there.
  rmSync(join(cache, pool.network), { recursive: true, force: true });
  assert.deepEqual(await a.store.update(pool, planRelease(pod('victim'))), []);
  refusing = false;
  await a.warm.settle();
  await until('nothing pending', () => a.warm.stats().pending === 0, 10_000);
  const now = (await records(admin)).get(address);
  assert.ok(
    now === undefined || warmHolder(now) === 'node-a',
    `after the DEL, ${address} is held for ${now?.podRef ?? ''} (${now?.containerId ?? ''})`,
  );
  assert.equal(
    [...(await records(admin)).values()].filter((r) => r.podRef === 'default/victim').length,
    0,
    'no record of the deleted pod',
  );
});
