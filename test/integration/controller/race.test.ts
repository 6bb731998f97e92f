// Removals never race a fresh allocation: the cleanup pass (in process, against the real API server) with a node's
// ADD landing between its read of the pool and its write, and with a pod its cache has not seen yet.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { ApiClient, type ApiRequest } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { cleanupPass, type CleanupInput } from '../../../src/controller/orphans/cleanup-pass.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { poolView, type PoolView } from '../../../src/controller/pools/view.ts';
import type { PodView } from '../../../src/controller/orphans/pod-view.ts';
import { allocation, createPod, createPool, deleteAllPods, offsets } from './harness.ts';

/** An ApiClient that runs `before` ahead of the first request matching `when`. */
class Interposed extends ApiClient {
  /** Writes of an IPPool (conditional merge patches or updates). */
  poolWrites = 0;
  /** "METHOD name" of every request on one IPPool, in order. */
  readonly poolRequests: string[] = [];
  hook: { when: (req: ApiRequest) => boolean; before: () => Promise<void> } | undefined;
  override async send(req: ApiRequest, options?: { timeoutMs?: number }) {
    if ((req.method === 'PUT' || req.method === 'PATCH') && req.path.includes('/ippools/')) this.poolWrites++;
    const pool = /\/ippools\/([^/?]+)/.exec(req.path)?.[1];
    if (pool !== undefined) this.poolRequests.push(`${req.method} ${pool}`);
    const hook = this.hook;
    if (hook !== undefined && hook.when(req)) {
      this.hook = undefined;
      await hook.before();
    }
    return super.send(req, options);
  }
}

describe('controller removals never race a fresh allocation', () => {
  let ns: Namespace;
  let client: Interposed;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'race');
    client = new Interposed(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
  });
  after(async () => {
    client.close();
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  const pools = async (): Promise<Map<string, PoolView>> => {
    const out = new Map<string, PoolView>();
    for (const item of await ns.list('ippools'))
      out.set(`${ns.name}/${(item['metadata'] as { name: string }).name}`, poolView(item)!);
    return out;
  };
  const input = async (pods: Map<string, PodView>): Promise<CleanupInput> => ({
    pods,
    nodes: new Map(),
    pools: await pools(),
    reservations: new Map(),
    networkNames: new Set(),
    policy: {
      cleanupTerminating: false,
      cleanupDisrupted: true,
      verifyNetworkStatus: true,
      pendingGraceMs: 300_000,
      terminalGraceMs: 60_000,
    },
    reservationGraceMs: 0,
    leading: () => true,
    log: jsonLog({ level: 'error' }),
  });

  test('an allocation made between the read and the write stays; the orphan is still released after the 409', async () => {
    await createPool(ns, '10.81.0.0-24', '10.81.0.0/24', { '1': allocation(ns, 'ghost') });
    const snapshot = await input(new Map());
    client.poolWrites = 0;
    client.hook = {
      when: (req) => req.method !== 'GET' && req.path.endsWith('/ippools/10.81.0.0-24'),
      // A node's ADD commits for a pod no cache has seen (and that the live read will not find either).
      before: () =>
        api(
          ns.cp,
          'PATCH',
          ns.path('ippools', '10.81.0.0-24'),
          { spec: { allocations: { '2': allocation(ns, 'brand-new') } } },
          'application/merge-patch+json',
        ).then(() => undefined),
    };
    client.poolRequests.length = 0;
    const result = await cleanupPass(client, snapshot);
    assert.equal(client.poolWrites, 2, 'the first write met 409, the second one went through');
    // Planned on the cached pool and written without a read; the refused write reads and judges again.
    assert.deepEqual(client.poolRequests, ['PATCH 10.81.0.0-24', 'GET 10.81.0.0-24', 'PATCH 10.81.0.0-24']);
    assert.deepEqual(
      result.released.map((r) => r.ip),
      ['10.81.0.1'],
    );
    assert.deepEqual(await offsets(ns, '10.81.0.0-24'), ['2']);
  });

  test('a pod missing from the cache but alive in the API server keeps its allocation', async () => {
    const uid = await createPod(ns, 'just-created', { phase: 'Running' });
    await createPool(ns, '10.81.1.0-24', '10.81.1.0/24', { '1': allocation(ns, 'just-created', uid) });
    const result = await cleanupPass(client, await input(new Map())); // an empty pod cache: every pod looks gone
    assert.deepEqual(
      result.released.filter((r) => r.pool === '10.81.1.0-24'),
      [],
    );
    assert.deepEqual(await offsets(ns, '10.81.1.0-24'), ['1']);
  });

  test('a replica that lost the lease writes nothing', async () => {
    await createPool(ns, '10.81.2.0-24', '10.81.2.0/24', { '1': allocation(ns, 'ghost') });
    const result = await cleanupPass(client, { ...(await input(new Map())), leading: () => false }); // and no pass before
    assert.deepEqual(result.released, []);
    assert.deepEqual(await offsets(ns, '10.81.2.0-24'), ['1']);
  });
});
