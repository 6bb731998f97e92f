// hereabouts' part in Whereabouts' Lease (whereabouts-lease.ts), on an in-memory API server that keeps Leases as
// kube-apiserver does (resourceVersion preconditions): detected, not assumed; waited for while a Whereabouts plugin
// holds it; handed back at once; and who wrote it last is told apart across both binaries' writes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { monotonicMs, sleep } from '../../../../src/clock.ts';
import { WHEREABOUTS_LEADER_TIMING } from '../../../../src/config/leader-timing.ts';
import { getLease, leaseBody, leasePath, microTime, updateLease, type Lease } from '../../../../src/kube/lease.ts';
import { LeaseNeeded, WhereaboutsLease } from '../../../../src/store/kubernetes/whereabouts-lease.ts';
import {
  MIXED_WINDOW_MS,
  SEEN_ANNOTATION,
  TRANSITIONS_ANNOTATION,
  whereaboutsLeaseName,
  whereaboutsSeenAt,
} from '../../../../src/store/kubernetes/whereabouts-seen.ts';
import type { PoolRef } from '../../../../src/store/store.ts';
import { ContentionMemory } from '../../../../src/store/kubernetes/contention.ts';
import type { ApiRequest, ApiResponse } from '../../../../src/kube/api.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const shared: PoolRef = { name: '10.66.0.0-24', network: 'net', networkNamed: false, range: rangeOf('10.66.0.0/24') };
const slice: PoolRef = { ...shared, name: 'node-a-10.66.0.0-28', resultPrefix: 24 };
const NS = 'kube-system';

function setup(): MemoryApiClient {
  return new MemoryApiClient(new MemoryApiServer(), { namespace: NS });
}

function gate(api: MemoryApiClient, pool = shared, waitMs?: number): WhereaboutsLease {
  return new WhereaboutsLease(api, pool, {
    timing: WHEREABOUTS_LEADER_TIMING,
    node: 'node-a',
    cleanupTimeoutMs: 1_000,
    log: quiet,
    ...(waitMs === undefined ? {} : { waitMs }),
  });
}

/** The Lease as Whereabouts' leader election writes it (client-go's LeaseLock), `agoMs` ago by the writer's clock. */
async function writtenByWhereabouts(
  api: MemoryApiClient,
  options: { holder: string; agoMs?: number; durationSeconds?: number; name?: string },
): Promise<void> {
  const at = microTime(new Date(Date.now() - (options.agoMs ?? 0)));
  const name = options.name ?? 'whereabouts';
  const spec = {
    holderIdentity: options.holder,
    leaseDurationSeconds: options.durationSeconds ?? 1,
    acquireTime: at,
    renewTime: at,
    leaseTransitions: 3,
  };
  const existing = await getLease(api, NS, name);
  if (existing === undefined) {
    const body = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: NS }, spec };
    const res = await api.send({ method: 'POST', path: leasePath(NS), body });
    assert.equal(res.status, 201);
    return;
  }
  // Whereabouts keeps the metadata it read, and bumps leaseTransitions when it takes the Lease from someone else.
  const transitions = (existing.spec.leaseTransitions ?? 0) + (options.holder === '' ? 0 : 1);
  assert.notEqual(
    await updateLease(api, existing, leaseBody(existing, { ...spec, leaseTransitions: transitions })),
    'conflict',
  );
}

async function lease(api: MemoryApiClient, name = 'whereabouts'): Promise<Lease> {
  const current = await getLease(api, NS, name);
  assert.ok(current !== undefined, `Lease ${name} exists`);
  return current;
}

/** Waits (bounded) until `check` holds, re-checking as the event loop turns: the condition, not a duration. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = monotonicMs() + 10_000;
  while (!(await check())) {
    if (monotonicMs() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(5);
  }
}

test("the Lease of a shared pool is Whereabouts' `whereabouts`; of a node-slice pool, the pool's own name", () => {
  assert.equal(whereaboutsLeaseName(shared), 'whereabouts');
  assert.equal(whereaboutsLeaseName(slice), 'node-a-10.66.0.0-28');
});

test('no Lease: the update goes on without one and writes nothing', async () => {
  const api = setup();
  const update = gate(api);
  await update.prepare();
  assert.equal(update.held, false);
  assert.equal(await update.mayWrite(), true);
  await update.beforeWrite();
  await update.release();
  assert.equal(await getLease(api, NS, 'whereabouts'), undefined);
  assert.equal(api.server.counts['PUT'] ?? 0, 0);
});

test("a Lease the node may not read (403: deploy/'s RBAC names only `whereabouts`) is not asked for again by the same host for a while", async () => {
  const api = setup();
  const send = api.send.bind(api);
  let leaseReads = 0;
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (!req.path.includes('/leases/')) return send(req);
    leaseReads++;
    return { status: 403, body: { kind: 'Status', reason: 'Forbidden' } };
  };
  const forbidden = new ContentionMemory(200); // the node agent's memory, kept across the updates it serves
  const update = () =>
    new WhereaboutsLease(api, slice, {
      timing: WHEREABOUTS_LEADER_TIMING,
      node: 'node-a',
      cleanupTimeoutMs: 1_000,
      log: quiet,
      forbidden,
    });
  for (let i = 0; i < 3; i++) {
    const u = update();
    await u.prepare();
    assert.equal(u.held, false);
    assert.equal(await u.mayWrite(), true, 'goes on without the Lease, as when it cannot read it');
  }
  assert.equal(leaseReads, 1, 'one read for three updates');
  await sleep(250);
  await update().prepare();
  assert.equal(leaseReads, 2, 'asked again once the memory has passed (a grant may have come)');
  // Without a host's memory (a plugin process of its own), every update asks.
  await gate(api, slice).prepare();
  await gate(api, slice).prepare();
  assert.equal(leaseReads, 4);
});

test('a Lease Whereabouts last wrote longer ago than the window: no Whereabouts writer around, nothing written', async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: '', agoMs: MIXED_WINDOW_MS + 60_000 });
  const update = gate(api);
  await update.prepare();
  assert.equal(update.held, false);
  assert.equal(await update.mayWrite(), true);
  assert.equal(api.server.counts['PUT'] ?? 0, 0);
});

test('a Lease Whereabouts handed back a moment ago is taken, marked as ours, and handed back at once', async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: '', agoMs: 2_000 });
  const seen = whereaboutsSeenAt(await lease(api));
  const update = gate(api);
  await update.prepare();
  assert.equal(update.held, true);
  const held = await lease(api);
  assert.match(held.spec.holderIdentity ?? '', /^hereabouts\/node-a\//);
  assert.equal(held.spec.leaseTransitions, 4);
  assert.equal(held.annotations[TRANSITIONS_ANNOTATION], '4');
  assert.equal(Date.parse(held.annotations[SEEN_ANNOTATION] ?? ''), seen, 'the time of the Whereabouts write is kept');
  assert.equal(whereaboutsSeenAt(held), seen, 'our own write does not count as a Whereabouts write');

  await update.release();
  const released = await lease(api);
  assert.equal(released.spec.holderIdentity, '', "handed back: client-go's candidates take it at their next try");
  assert.equal(released.spec.leaseDurationSeconds, 1);
  assert.equal(whereaboutsSeenAt(released), seen);
});

test('an update waits while a Whereabouts plugin holds the Lease, and takes it once handed back', async () => {
  const api = setup();
  // A holder that renews: its record does not expire while the test runs.
  await writtenByWhereabouts(api, { holder: 'default/wb-pod', durationSeconds: 60 });
  const update = gate(api);
  const gets = () => api.server.counts['GET'] ?? 0;
  const before = gets();
  const prepared = update.prepare();
  await until(async () => gets() >= before + 3, 'the update read the Lease again while waiting');
  assert.equal(update.held, false);
  assert.equal((await lease(api)).spec.holderIdentity, 'default/wb-pod');

  await writtenByWhereabouts(api, { holder: '' }); // Whereabouts' ReleaseOnCancel
  await prepared;
  assert.equal(update.held, true);
  assert.match((await lease(api)).spec.holderIdentity ?? '', /^hereabouts\//);
  await update.release();
});

test("a Whereabouts holder that stopped renewing is taken over once its record stood still for its duration on the waiter's clock", async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: 'default/crashed', durationSeconds: 1 });
  const update = gate(api);
  const began = monotonicMs();
  await update.prepare();
  assert.equal(update.held, true);
  assert.ok(monotonicMs() - began >= 1_000, 'not before a full lease duration');
  await update.release();
});

test('an update that waited for its pool lock reads the Lease again: a Whereabouts plugin may have taken it meanwhile', async () => {
  const api = setup();
  const update = gate(api);
  await update.prepare();
  assert.equal(await update.mayWrite(), true, 'no Lease: no Whereabouts writer');
  await writtenByWhereabouts(api, { holder: 'default/wb-pod', durationSeconds: 60 });
  assert.equal(await update.mayWrite(), true, 'the verdict stands while nothing was waited for');
  update.waitedForLock();
  await assert.rejects(update.beforeWrite(), LeaseNeeded);
});

test('inside the pool lock, a write needs the Lease: LeaseNeeded, nothing waited for there', async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: 'default/wb-pod', durationSeconds: 60 });
  const update = gate(api);
  await assert.rejects(update.beforeWrite(), LeaseNeeded);
  assert.equal(await update.mayWrite(), false);
  assert.equal((await lease(api)).spec.holderIdentity, 'default/wb-pod');
});

test('a Lease taken over by another holder while held is lost: the next write needs it again', async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: '' });
  const update = gate(api);
  await update.prepare();
  assert.equal(update.held, true);
  // A Whereabouts plugin that judged our record expired takes it.
  await writtenByWhereabouts(api, { holder: 'default/wb-late', durationSeconds: 60 });
  await until(async () => !update.held, 'the renewal found the Lease taken');
  await assert.rejects(update.beforeWrite(), LeaseNeeded);
  await update.release();
  assert.equal((await lease(api)).spec.holderIdentity, 'default/wb-late', 'a lost Lease is not handed back');
});

test(
  'a held Lease whose renewals come back later than its margin is given up, not written under: the update waits as any candidate and fails in its time, not for ever',
  {
    timeout: 30_000,
  },
  async () => {
    const api = setup();
    await writtenByWhereabouts(api, { holder: '' });
    const update = gate(api, shared, 5_000);
    await update.prepare();
    assert.equal(update.held, true);
    // A loaded API server: every Lease write answers after longer than the margin the holder keeps (1.5 s).
    const send = api.send.bind(api);
    api.send = async (req: ApiRequest): Promise<ApiResponse> => {
      if (req.method === 'PUT' && req.path.includes('/leases/')) await sleep(1_700);
      return send(req);
    };
    await sleep(1_600); // the renewals under way now come back late
    const started = monotonicMs();
    // updatePool's loop: a write under the Lease, or the Lease waited for outside the pool lock.
    const write = async (): Promise<void> => {
      for (;;) {
        try {
          await update.beforeWrite();
          assert.fail('wrote under a Lease it could not keep fresh');
        } catch (err) {
          if (!(err instanceof LeaseNeeded)) throw err;
        }
        await update.acquire();
      }
    };
    await assert.rejects(write(), /gave up waiting for it after 5000 ms/);
    const took = monotonicMs() - started;
    assert.ok(took < 12_000, `gave up after ${Math.round(took)} ms`);
    await update.release();
    api.send = send;
    assert.equal((await lease(api)).spec.holderIdentity, '', 'not left holding it');
  },
);

test("who wrote last is told apart: a Whereabouts write after ours counts as Whereabouts' at its renewTime", async () => {
  const api = setup();
  await writtenByWhereabouts(api, { holder: '', agoMs: 5_000 });
  const update = gate(api);
  await update.prepare();
  await update.release();
  const ours = await lease(api);
  const first = whereaboutsSeenAt(ours);
  await writtenByWhereabouts(api, { holder: 'default/wb-next' });
  const theirs = await lease(api);
  assert.equal(theirs.annotations[TRANSITIONS_ANNOTATION], ours.annotations[TRANSITIONS_ANNOTATION], 'kept as read');
  const now = whereaboutsSeenAt(theirs);
  assert.ok(first !== undefined && now !== undefined && now > first, 'the newer Whereabouts write is seen');
  assert.equal(now, Date.parse(theirs.spec.renewTime ?? ''));
});
