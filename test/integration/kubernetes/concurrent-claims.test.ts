// Claims racing other writers of one shared pool, on a real kube-apiserver. Every pool write is conditional on the
// resourceVersion it was planned on (a lone claim is a JSON patch that tests it first), so the API server refuses a
// stale one at once (it does not re-apply the patch to the newer object itself, which a write conditional only on
// its own offset made it do without bound under load); the writer reads again, from the API server's watch cache
// when it holds a newer version, and plans again; and an offset someone else committed after the read (Whereabouts
// writes the pool before it reserves, or not at all) is never overwritten.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { firstFree } from '../../../src/allocator/first-free.ts';
import { ApiClient, type ApiRequest, type ApiResponse } from '../../../src/kube/api.ts';
import { commitPool, type CommitContext } from '../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../src/store/kubernetes/contention.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { getObject } from '../../../src/store/kubernetes/objects.ts';
import { createObject, replaceObject } from '../../../src/store/kubernetes/resources.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../../src/store/store.ts';
import { networkOf } from '../../../src/ip/cidr.ts';
import { cacheHolds, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { memoryLogger, reservationNames } from './harness.ts';

let ns: Namespace;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'key-level');
  api = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 20_000 });
  other = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 20_000 });
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

function poolRef(name: string, cidr: string): PoolRef {
  return { name, network: 'keylevel', networkNamed: false, range: testRange(cidr) };
}

/** The offset of an address in its pool's range. */
const offsetOf = (pool: PoolRef, address: bigint): bigint => address - networkOf(pool.range.cidr);

function firstFreePlan(pool: PoolRef, record: AllocationRecord): Plan<bigint> {
  return (current, refused) => {
    const address = firstFree(pool.range, current, refused);
    if (address === undefined) throw new Error('exhausted');
    return { change: { claim: { address, record } }, value: address };
  };
}

interface Seen {
  readonly method: string;
  readonly resource: string;
  readonly contentType?: string;
  readonly status: number;
  /** The query of a GET (`?resourceVersion=...` for a read served from the watch cache). */
  readonly query?: string;
}

/**
 * Records this writer's requests; `interleave` runs (awaited) once: just before its first IPPool PATCH, or (`at:
 * 'reserved'`) right after the answer to its first reservation.
 */
function recorded(
  client: ApiClient,
  interleave: () => Promise<void>,
  at: 'first-pool-patch' | 'reserved' = 'first-pool-patch',
): { seen: Seen[] } {
  const seen: Seen[] = [];
  const send = client.send.bind(client);
  let interleaved = false;
  client.send = async (req: ApiRequest, options?: { timeoutMs?: number }): Promise<ApiResponse> => {
    const resource = /\/(ippools|overlappingrangeipreservations)(\/|\?|$)/.exec(req.path)?.[1] ?? req.path;
    const query =
      req.method === 'GET' && req.path.includes('?') ? { query: req.path.slice(req.path.indexOf('?')) } : {};
    if (at === 'first-pool-patch' && req.method === 'PATCH' && resource === 'ippools' && !interleaved) {
      interleaved = true;
      await interleave();
    }
    const res = await send(req, options);
    seen.push({
      method: req.method,
      resource,
      ...(req.contentType === undefined ? {} : { contentType: req.contentType }),
      status: res.status,
      ...query,
    });
    if (at === 'reserved' && req.method === 'POST' && resource === 'overlappingrangeipreservations' && !interleaved) {
      interleaved = true;
      await interleave();
    }
    return res;
  };
  return { seen };
}

/** One host's memory for every writer of this file (as one long-lived process's). */
const memory = new WriteMemory();

function context(client: ApiClient, log = memoryLogger()): CommitContext {
  return { api: client, node: 'node-a', reservations: true, budgetMs: 20_000, cleanupTimeoutMs: 5_000, log, memory };
}

/** What a Whereabouts writer does: PUT the whole pool conditional on the resourceVersion it read, no reservation. */
async function whereaboutsCommit(name: string, offset: string, entry: Obj): Promise<void> {
  const current = obj(await getObject(other, 'ippools', name));
  const spec = obj(current['spec']);
  const result = await replaceObject(other, 'ippools', name, {
    ...current,
    spec: { ...spec, allocations: { ...obj(spec['allocations']), [offset]: entry } },
  });
  assert.equal(result.kind, 'patched');
}

/** Waits until the API server's watch cache holds the pool as it is now (the watch's delay behind etcd). */
async function watchCacheHolds(name: string): Promise<void> {
  await cacheHolds(
    ns.cp,
    ns.path('ippools', name),
    String(obj(obj(await getObject(other, 'ippools', name))['metadata'])['resourceVersion']),
  );
}

async function allocationsOf(name: string): Promise<Obj> {
  return obj(obj(obj(await getObject(other, 'ippools', name))['spec'])['allocations']);
}

const rangeOf = (pool: PoolRef): string => pool.name.replace(/-(\d+)$/, '/$1');

async function createPool(name: string, range: string, allocations: Obj): Promise<void> {
  const created = await createObject(other, 'ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name },
    spec: { range, allocations },
  } as unknown as { metadata: { name: string } });
  assert.equal(created.kind, 'created');
}

test('a claim planned before another writer wrote the pool is refused at once (422) and lands after one re-read from the watch cache', async () => {
  const pool = poolRef('10.91.0.0-24', '10.91.0.0/24');
  await createPool(pool.name, '10.91.0.0/24', { '1': { id: 'w1', podref: 'ns/w1', ifname: 'eth0' } });
  // The watch cache holds the other writer's version before the stale write goes out: a cache that lags the PUT by
  // more than the refused write's round trip has nothing newer to serve, and the re-read is then a quorum read.
  const { seen } = recorded(api, async () => {
    await whereaboutsCommit(pool.name, '10', { id: 'w10', podref: 'ns/w10', ifname: 'eth0' });
    await watchCacheHolds(pool.name);
  });
  const address = await commitPool(
    context(api),
    pool,
    firstFreePlan(pool, { containerId: 'a2', ifname: 'eth0', podRef: 'ns/a2' }),
  );
  assert.equal(offsetOf(pool, address), 2n);
  const poolWrites = seen.filter((s) => s.resource === 'ippools' && s.method !== 'GET');
  assert.deepEqual(
    poolWrites,
    [
      { method: 'PATCH', resource: 'ippools', contentType: 'application/json-patch+json', status: 422 },
      { method: 'PATCH', resource: 'ippools', contentType: 'application/json-patch+json', status: 200 },
    ],
    'the stale write is refused, the one planned on the re-read lands',
  );
  const reads = seen.filter((s) => s.resource === 'ippools' && s.method === 'GET');
  assert.equal(reads.length, 2, JSON.stringify(reads));
  assert.equal(reads[0]?.query, undefined, 'the first read is a quorum read');
  assert.match(
    reads[1]?.query ?? '',
    /^\?resourceVersion=\d+$/,
    'the re-read asks the watch cache for a version newer than the one refused',
  );
  const allocations = await allocationsOf(pool.name);
  assert.deepEqual(Object.keys(allocations).sort(), ['1', '10', '2']);
  assert.equal(obj(allocations['10'])['id'], 'w10', "the other writer's entry survives");
  assert.equal(obj(allocations['2'])['id'], 'a2');
  assert.equal(obj(allocations['2'])['node'], 'node-a');
  assert.match(String(obj(allocations['2'])['createdAt']), /^\d{4}-\d\d-\d\dT/);
});

test('an offset committed by a Whereabouts writer after the read is not overwritten: the claim re-reads and moves on', async () => {
  const pool = poolRef('10.92.0.0-24', '10.92.0.0/24');
  await createPool(pool.name, '10.92.0.0/24', { '1': { id: 'w1', podref: 'ns/w1', ifname: 'eth0' } });
  // The Whereabouts writer commits .2 (the offset this writer planned and reserved) without a reservation yet.
  const { seen } = recorded(api, () =>
    whereaboutsCommit(pool.name, '2', { id: 'w2', podref: 'ns/w2', ifname: 'eth0' }),
  );
  const log = memoryLogger();
  const address = await commitPool(
    context(api, log),
    pool,
    firstFreePlan(pool, { containerId: 'a3', ifname: 'eth0', podRef: 'ns/a3' }),
  );
  assert.equal(offsetOf(pool, address), 3n);
  const patches = seen.filter((s) => s.resource === 'ippools' && s.method === 'PATCH').map((s) => s.status);
  assert.deepEqual(patches, [422, 200], 'the first claim is refused on its resourceVersion, the second lands');
  const allocations = await allocationsOf(pool.name);
  assert.equal(obj(allocations['2'])['id'], 'w2', 'the Whereabouts entry is intact');
  assert.equal(obj(allocations['3'])['id'], 'a3');
  // The reservation made for .2 is handed to the pod that holds it, not deleted: .2 stays reserved.
  const reservation = obj(await getObject(other, 'overlappingrangeipreservations', '10.92.0.2'));
  assert.equal(obj(reservation['spec'])['podref'], 'ns/w2');
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.92.')),
    ['10.92.0.2', '10.92.0.3'],
  );
  assert.ok(
    log.lines.some((l) => /IPPool 10\.92\.0\.0-24: changed since resourceVersion \d+; reading it again/.test(l)),
    log.lines.join('\n'),
  );
});

test('a writer that knows the pool from its node cache reads it from the watch cache, never older than the cached version', async () => {
  const pool = poolRef('10.94.0.0-24', '10.94.0.0/24');
  await createPool(pool.name, '10.94.0.0/24', { '1': { id: 'w1', podref: 'ns/w1', ifname: 'eth0' } });
  const cachedVersion = String(obj(obj(await getObject(other, 'ippools', pool.name))['metadata'])['resourceVersion']);
  await whereaboutsCommit(pool.name, '2', { id: 'w2', podref: 'ns/w2', ifname: 'eth0' }); // unseen by the node cache
  await watchCacheHolds(pool.name); // the watch's delay is not what this test is about
  const { seen } = recorded(api, async () => {});
  const initial = {
    allocations: new Map([[networkOf(pool.range.cidr) + 1n, { containerId: 'w1', ifname: 'eth0', podRef: 'ns/w1' }]]),
    resourceVersion: cachedVersion,
    fresh: false,
  };
  const address = await commitPool(
    context(api),
    pool,
    firstFreePlan(pool, { containerId: 'a3', ifname: 'eth0', podRef: 'ns/a3' }),
    { initial },
  );
  assert.equal(offsetOf(pool, address), 3n, "planned on the API's view, not on the cache that lacks .2");
  const reads = seen.filter((s) => s.resource === 'ippools' && s.method === 'GET');
  assert.deepEqual(
    reads.map((r) => r.query),
    [`?resourceVersion=${cachedVersion}`],
  );
  assert.deepEqual(
    seen.filter((s) => s.resource === 'ippools' && s.method === 'PATCH').map((s) => s.status),
    [200],
  );
});

test('on a pool whose writes were just refused, a claim reads it again between its reservation and its write: a write landed in between costs no refusal', async () => {
  const pool = poolRef('10.96.0.0-24', '10.96.0.0/24');
  await createPool(pool.name, '10.96.0.0/24', { '1': { id: 'w1', podref: 'ns/w1', ifname: 'eth0' } });
  /** A Whereabouts write, and the watch cache holding it (the watch's delay is not what this test is about). */
  const landed = async (offset: string): Promise<void> => {
    await whereaboutsCommit(pool.name, offset, { id: `w${offset}`, podref: `ns/w${offset}`, ifname: 'eth0' });
    await watchCacheHolds(pool.name);
  };
  const poolRequests = (seen: Seen[]) =>
    seen.filter((s) => s.resource === 'ippools').map((s) => `${s.method}${s.query ?? ''} ${s.status}`);

  // A first claim on the quiet pool: nothing read again, so a write landed after the read refuses it once.
  const first = recorded(api, () => landed('10'), 'reserved').seen;
  assert.equal(
    offsetOf(
      pool,
      await commitPool(context(api), pool, firstFreePlan(pool, { containerId: 'a2', ifname: 'eth0', podRef: 'ns/a2' })),
    ),
    2n,
  );
  assert.deepEqual(
    poolRequests(first).filter((r) => r.startsWith('PATCH')),
    ['PATCH 422', 'PATCH 200'],
  );

  // The pool is busy now: the next claim reads it again after its reservation, and its one write lands.
  const second = recorded(api, () => landed('11'), 'reserved').seen;
  assert.equal(
    offsetOf(
      pool,
      await commitPool(context(api), pool, firstFreePlan(pool, { containerId: 'a3', ifname: 'eth0', podRef: 'ns/a3' })),
    ),
    3n,
  );
  const requests = poolRequests(second);
  assert.equal(requests.length, 3, requests.join(', '));
  assert.match(requests[0] ?? '', /^GET 200$/, "the plan's read");
  assert.match(
    requests[1] ?? '',
    /^GET\?resourceVersion=\d+ 200$/,
    'read again from the watch cache after the reservation',
  );
  assert.equal(requests[2], 'PATCH 200', 'planned on the newer version: no refusal');

  // The read again also catches a Whereabouts writer committing the very address reserved: the claim moves on
  // without a refused write, and the reservation is handed to the pod that holds the address.
  const third = recorded(api, () => landed('4'), 'reserved').seen;
  assert.equal(
    offsetOf(
      pool,
      await commitPool(context(api), pool, firstFreePlan(pool, { containerId: 'a5', ifname: 'eth0', podRef: 'ns/a5' })),
    ),
    5n,
  );
  assert.deepEqual(
    poolRequests(third).filter((r) => r.startsWith('PATCH')),
    ['PATCH 200'],
  );
  const allocations = await allocationsOf(pool.name);
  assert.deepEqual(
    Object.keys(allocations).sort((a, b) => Number(a) - Number(b)),
    ['1', '2', '3', '4', '5', '10', '11'],
  );
  for (const [offset, id] of [
    ['10', 'w10'],
    ['11', 'w11'],
    ['4', 'w4'],
    ['2', 'a2'],
    ['3', 'a3'],
    ['5', 'a5'],
  ]) {
    assert.equal(obj(allocations[offset ?? ''])['id'], id, `offset ${offset}`);
  }
  assert.equal(
    obj(obj(await getObject(other, 'overlappingrangeipreservations', '10.96.0.4'))['spec'])['podref'],
    'ns/w4',
  );
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.96.')),
    ['10.96.0.2', '10.96.0.3', '10.96.0.4', '10.96.0.5'],
  );
});

test('16 writers claiming in one shared pool at once: distinct addresses, every pool write answered at once (200 or 422)', async () => {
  const pool = poolRef('10.93.0.0-24', '10.93.0.0/24');
  await createPool(pool.name, '10.93.0.0/24', {});
  const clients = await Promise.all(
    Array.from({ length: 16 }, async () => new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 20_000 })),
  );
  const seen: Seen[][] = clients.map((c) => recorded(c, async () => {}).seen);
  // Spread plans (as a contended writer's are) so that the writers mostly pick different offsets.
  const addresses = await Promise.all(
    clients.map((c, i) => {
      const plan: Plan<bigint> = (current, refused) => {
        const address = firstFree(
          pool.range,
          new Map([
            ...current,
            ...Array.from(
              { length: i * 8 },
              (_, k) =>
                [networkOf(pool.range.cidr) + BigInt(k + 1), { containerId: '', ifname: '', podRef: '' }] as const,
            ),
          ]),
          refused,
        );
        if (address === undefined) throw new Error('exhausted');
        return {
          change: { claim: { address, record: { containerId: `c${i}`, ifname: 'eth0', podRef: `ns/p${i}` } } },
          value: address,
        };
      };
      return commitPool(context(c), pool, plan);
    }),
  );
  assert.equal(new Set(addresses).size, 16);
  const allocations = await allocationsOf(pool.name);
  assert.equal(Object.keys(allocations).length, 16);
  const poolStatuses = seen
    .flat()
    .filter((s) => s.resource === 'ippools' && s.method === 'PATCH')
    .map((s) => s.status);
  assert.deepEqual(
    poolStatuses.filter((s) => s !== 422 && s !== 200),
    [],
    'no pool write timed out or failed otherwise',
  );
  assert.equal(poolStatuses.filter((s) => s === 200).length, 16, 'one landed write per writer');
});

test("every pool write clears the API server's field tracking (managedFields) and keeps the fields it does not model", async () => {
  const claimed = poolRef('10.95.0.0-24', '10.95.0.0/24');
  const released = poolRef('10.95.1.0-24', '10.95.1.0/24');
  const metadataOf = async (name: string): Promise<Obj> =>
    obj(obj(await getObject(other, 'ippools', name))['metadata']);
  for (const pool of [claimed, released]) {
    await createPool(pool.name, rangeOf(pool), {
      '1': { id: 'w1', podref: 'ns/w1', ifname: 'eth0', ipamclaimref: 'claim-1' },
      '9': { id: 'w9', podref: 'ns/w9', ifname: 'eth0' },
    });
    assert.ok(
      Array.isArray((await metadataOf(pool.name))['managedFields']),
      "the API server tracks the creator's fields",
    );
  }
  const { seen } = recorded(api, async () => {});
  await commitPool(
    context(api),
    claimed,
    firstFreePlan(claimed, { containerId: 'a2', ifname: 'eth0', podRef: 'ns/a2' }),
  );
  const release: Plan<null> = () => ({ change: { release: [networkOf(released.range.cidr) + 9n] }, value: null });
  await commitPool(context(api), released, release);
  assert.deepEqual(
    seen.filter((s) => s.method === 'PATCH').map((s) => s.contentType),
    ['application/json-patch+json', 'application/merge-patch+json'],
  );
  assert.equal((await metadataOf(claimed.name))['managedFields'], undefined, 'a lone claim (JSON patch) cleared them');
  assert.equal((await metadataOf(released.name))['managedFields'], undefined, 'a release (merge patch) cleared them');
  assert.deepEqual(Object.keys(await allocationsOf(claimed.name)).sort(), ['1', '2', '9']);
  assert.deepEqual(Object.keys(await allocationsOf(released.name)), ['1']);
  for (const pool of [claimed, released])
    assert.equal(
      obj((await allocationsOf(pool.name))['1'])['ipamclaimref'],
      'claim-1',
      'a field hereabouts does not model survives',
    );
  // A Whereabouts writer's update (PUT) of an untracked pool does not start tracking again: one clearing lasts.
  await whereaboutsCommit(claimed.name, '3', { id: 'w3', podref: 'ns/w3', ifname: 'eth0' });
  assert.equal((await metadataOf(claimed.name))['managedFields'], undefined);
});
