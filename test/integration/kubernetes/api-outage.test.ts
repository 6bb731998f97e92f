// The API server going away: an ADD fails with code 11 and leaves nothing behind, allocation resumes when the
// server is back, and a write whose answer was lost (the server applied it, the client never heard) never leads to
// a duplicate. Uses a control plane of its own, since it stops and freezes kube-apiserver.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assign } from '../../../src/ipam/assign.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { ApiUnreachableError, type ApiRequest } from '../../../src/kube/api.ts';
import { poolPaths } from '../../../src/store/local/paths.ts';
import { freezeApiServer, stopApiServer } from '../../support/apiserver-faults.ts';
import {
  createNamespace,
  kubeconfigFor,
  privateControlPlane,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { startFaultProxy } from '../../support/fault-proxy.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView, reservationNames } from './harness.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

let cp: ControlPlane;
let ns: Namespace;

before(async () => {
  cp = await privateControlPlane();
  ns = await createNamespace(cp, 'outage');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
  if ((cp as ControlPlane | undefined) !== undefined) stopControlPlane(cp);
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });
const isTryAgain = (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 11;

async function addOnce(
  config: ReturnType<typeof kubeNetwork>,
  name: string,
  node = 'node-a',
  requestTimeoutMs = 3000,
  beforeSend?: (req: ApiRequest) => void,
): Promise<string> {
  const store = await openNode(ns, config, node, { tuning: { requestTimeoutMs } });
  if (beforeSend !== undefined) {
    const send = store.api.send.bind(store.api);
    store.api.send = (req, options) => (beforeSend(req), send(req, options));
  }
  try {
    const [a] = await assign(store, config, pod(name));
    return a === undefined ? 'none' : formatIP(a.address);
  } finally {
    await store.close();
  }
}

test('ADD with the API server stopped fails with code 11, leaves nothing behind, and works again after restart', async () => {
  const config = kubeNetwork(ns, [testRange('10.70.0.0/24')], { name: 'stop' });
  assert.equal(await addOnce(config, 'before'), '10.70.0.1');
  const stopped = await stopApiServer(cp);
  try {
    await assert.rejects(addOnce(config, 'during'), isTryAgain);
  } finally {
    await stopped.restart();
  }
  assert.deepEqual([...((await poolView(ns, '10.70.0.0-24'))?.allocations.keys() ?? [])], ['10.70.0.1']);
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.70.')),
    ['10.70.0.1'],
  );
  assert.equal(await addOnce(config, 'during'), '10.70.0.2');
});

test('API server stopped in the middle of a run: failed ADDs get code 11, and after restart and their DELs the pool holds exactly the successful ones', async () => {
  const config = kubeNetwork(ns, [testRange('10.71.0.0/24')], { name: 'midrun' });
  const outcomes = new Map<string, string>(); // pod -> address or 'failed'
  let done = 0;
  let stopped: Awaited<ReturnType<typeof stopApiServer>> | undefined;
  const worker = async (w: number) => {
    for (let i = 0; i < 10; i++) {
      const name = `m-${w}-${i}`;
      try {
        outcomes.set(name, await addOnce(config, name, `node-${w % 2}`));
      } catch (err) {
        assert.ok(isTryAgain(err), `ADD ${name} failed with something other than code 11: ${String(err)}`);
        outcomes.set(name, 'failed');
      }
      if (++done === 12) stopped = await stopApiServer(cp);
    }
  };
  await Promise.all([0, 1, 2, 3].map(worker));
  assert.ok(stopped, 'the API server was never stopped');
  await stopped.restart();
  const failed = [...outcomes].filter(([, a]) => a === 'failed').map(([name]) => name);
  const succeeded = [...outcomes].filter(([, a]) => a !== 'failed');
  assert.ok(failed.length > 0 && succeeded.length >= 12, `failed ${failed.length}, succeeded ${succeeded.length}`);
  // What the runtime does after a failed ADD: DEL it.
  for (const name of failed) {
    const store = await openNode(ns, config, 'node-0');
    try {
      await release(store, config, pod(name));
    } finally {
      await store.close();
    }
  }
  const view = await poolView(ns, '10.71.0.0-24');
  const held = [...(view?.allocations ?? [])]
    .map(([address, entry]) => `${String(entry['podref']).slice(8)}=${address}`)
    .sort();
  assert.deepEqual(held, succeeded.map(([name, address]) => `${name}=${address}`).sort());
  assert.equal(new Set(succeeded.map(([, a]) => a)).size, succeeded.length);
  // Reservations: every allocation has one; any other is a leak from a write whose fate was unknown, never a
  // reservation of an address someone else holds.
  const reserved = (await reservationNames(ns)).filter((n) => n.startsWith('10.71.'));
  for (const [, address] of succeeded) assert.ok(reserved.includes(address), `${address} lost its reservation`);
  assert.notEqual(await addOnce(config, 'after'), 'none');
});

test('ADD against a frozen API server fails with code 11 (its request times out) and commits nothing', async () => {
  const config = kubeNetwork(ns, [testRange('10.72.0.0/24')], { name: 'frozen' });
  assert.equal(await addOnce(config, 'warm'), '10.72.0.1');
  const thaw = await freezeApiServer(cp);
  try {
    await assert.rejects(addOnce(config, 'frozen'), isTryAgain);
  } finally {
    thaw();
  }
  assert.deepEqual([...((await poolView(ns, '10.72.0.0-24'))?.allocations.keys() ?? [])], ['10.72.0.1']);
});

test('a pool write whose answer is lost (the server applied it) is found by the retried ADD: no duplicate', async () => {
  const proxy = await startFaultProxy(cp.url);
  try {
    const kubeconfig = join(ns.dir, 'proxied.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor({ ...cp, url: proxy.url }, ns.name));
    const config = kubeNetwork(ns, [testRange('10.73.0.0/24')], {
      name: 'lost',
      enableOverlappingRanges: false,
      kubeconfig,
    });
    assert.equal(await addOnce(config, 'l1', 'node-a', 1500), '10.73.0.1'); // also warms node-a's cache
    const cache = poolPaths(join(ns.dir, 'nodes', 'node-a'), { network: 'lost', name: '10.73.0.0-24' }).data;
    assert.ok(existsSync(cache));
    // Its PATCH lands; the answer is lost (the update's read of Whereabouts' Lease before it is answered).
    const losePoolWrite = (req: ApiRequest) => {
      if (req.method === 'PATCH' && req.path.includes('/ippools/')) proxy.mode = 'drop-responses';
    };
    await assert.rejects(addOnce(config, 'l2', 'node-a', 1500, losePoolWrite), isTryAgain);
    proxy.mode = 'pass';
    assert.equal((await poolView(ns, '10.73.0.0-24'))?.allocations.get('10.73.0.2')?.['id'], 'c-l2');
    // The node cache no longer says what this node last wrote: it is gone, the next update starts from a quorum read.
    assert.ok(!existsSync(cache), 'the node cache outlived a write whose answer was lost');
    assert.equal(await addOnce(config, 'l3', 'node-a', 1500), '10.73.0.3');
    assert.equal(await addOnce(config, 'l2', 'node-a', 1500), '10.73.0.2'); // the retry finds what it did
    const view = await poolView(ns, '10.73.0.0-24');
    assert.deepEqual([...(view?.allocations.keys() ?? [])].sort(), ['10.73.0.1', '10.73.0.2', '10.73.0.3']);
  } finally {
    await proxy.close();
  }
});

test('a reservation whose answer is lost stays: other pods skip the address, the retried ADD adopts it', async () => {
  const config = kubeNetwork(ns, [testRange('10.74.0.0/24')], { name: 'lost-orir' });
  assert.equal(await addOnce(config, 'r1', 'node-a', 1500), '10.74.0.1');
  // The server applies the reservation, its answer is lost (the fault proxy cannot pick one request out of a
  // keep-alive connection, so the loss is injected on the client side, after the real server answered).
  const store = await openNode(ns, config, 'node-a', { tuning: { requestTimeoutMs: 1500 } });
  const send = store.api.send.bind(store.api);
  store.api.send = async (req, options) => {
    const res = await send(req, options);
    if (req.method === 'POST' && req.path.endsWith('/overlappingrangeipreservations')) {
      throw new ApiUnreachableError('answer lost (injected)', { ambiguous: true });
    }
    return res;
  };
  try {
    await assert.rejects(assign(store, config, pod('r2')), isTryAgain);
  } finally {
    await store.close();
  }
  assert.deepEqual([...((await poolView(ns, '10.74.0.0-24'))?.allocations.keys() ?? [])], ['10.74.0.1']);
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.74.')),
    ['10.74.0.1', '10.74.0.2'],
  );
  assert.equal(await addOnce(config, 'r3', 'node-b', 1500), '10.74.0.3');
  assert.equal(await addOnce(config, 'r2', 'node-a', 1500), '10.74.0.2');
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.74.')),
    ['10.74.0.1', '10.74.0.2', '10.74.0.3'],
  );
});
