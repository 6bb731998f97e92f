// A DEL the plugin runs itself while no node agent serves (src/agent/settle-del.ts): the hand-outs the dead agent's
// journal holds for that container are released through the journal before the DEL runs, and nothing of the pod is
// left for a restarted agent's replay to bring back.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeJournalPointer } from '../../../src/agent/journal-pointer.ts';
import { delHost } from '../../../src/agent/settle-del.ts';
import { WHEREABOUTS_LEADER_TIMING } from '../../../src/config/leader-timing.ts';
import { planRelease } from '../../../src/ipam/release.ts';
import type { ApiRequest, ApiResponse } from '../../../src/kube/api.ts';
import { WriteMemory } from '../../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../../src/store/kubernetes/kubernetes-store.ts';
import { getObject, WARM_ALLOWED } from '../../../src/store/kubernetes/objects.ts';
import { MemoryApiClient, MemoryApiServer } from '../../support/memory-apiserver.ts';
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
  warmedAgent,
  type Obj,
} from '../store/kubernetes/warm/agent-fixture.ts';

test("a DEL while the agent is dead settles the agent's unwritten hand-out of that container: no record, no reservation, nothing for a replay", async (t) => {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const journal = tempDir(t, 'journal');
  const dead = await warmedAgent(t, server, { journal, cache: tempDir(t, 'cache') }, { closed: false });
  // The agent hands out an address, makes it durable, and is killed before its rename or its answer: its writes
  // never reach the API server. (Refused, not left hanging: a write hanging in this process would hold the pool's
  // lock for ever, where a killed agent's lock goes with its process.)
  const unavailable: ApiResponse = {
    status: 503,
    body: { kind: 'Status', status: 'Failure', reason: 'ServiceUnavailable', code: 503 },
  };
  dead.api.send = (req: ApiRequest): Promise<ApiResponse> =>
    req.method === 'GET' ? MemoryApiClient.prototype.send.call(dead.api, req) : Promise.resolve(unavailable);
  const handed = addressOf(await add(dead.store, 'web'));
  assert.equal((await records(admin)).get(handed)?.podRef, '', 'the pool still shows the warm record');

  const socket = join(tempDir(t, 'run'), 'agent.sock');
  mkdirSync(join(socket, '..'), { recursive: true });
  assert.equal((await delHost(socket, { CNI_CONTAINERID: 'c-web', CNI_IFNAME: 'net1' })).kind, 'plain', 'no pointer');
  writeJournalPointer(socket, journal);
  assert.equal((await delHost(socket, { CNI_CONTAINERID: 'c-other', CNI_IFNAME: 'net1' })).kind, 'plain');
  const del = await delHost(socket, { CNI_CONTAINERID: 'c-web', CNI_IFNAME: 'net1' });
  assert.ok(del.kind === 'settling', del.kind);
  const store = new KubernetesStore({
    api: new MemoryApiClient(server, { namespace: NS }),
    node: 'node-a',
    cacheDir: tempDir(t, 'plugin-cache'),
    reservations: true,
    log: quiet,
    memory: new WriteMemory(),
    ...(del.host.warm === undefined ? {} : { warm: del.host.warm }),
    whereaboutsLease: WHEREABOUTS_LEADER_TIMING,
  });
  // The hand-out is released through the journal before the DEL runs on the pool (warm-sets.ts): the rename is never
  // written, so the pool has no record of the pod for the DEL itself to release.
  assert.deepEqual(await store.update(pool, planRelease(pod('web'))), []);
  await del.close();

  const after = await records(admin);
  assert.ok(![...after.values()].some((r) => r.podRef === 'default/web'), 'no record of the pod');
  const ip = `10.77.0.${Number(handed & 0xffn)}`;
  const reservation = (await getObject(admin, 'overlappingrangeipreservations', ip)) as Obj | undefined;
  assert.notEqual((reservation?.['spec'] as Obj | undefined)?.['podref'], 'default/web', 'no reservation of the pod');
  // The agent restarted on the same journal has nothing of the pod to write.
  const next = agent(t, server, { journal, cache: tempDir(t, 'cache') });
  assert.equal(next.warm.stats().pending, 0, 'nothing pending after the DEL');
});
