// A Whereabouts ADD that lost its Lease in the middle of its update goes on all the same (v0.9.4's IPManagement runs
// IPManagementKubernetesUpdate on the caller's context, not the leader's): a process stalled past the Lease's 1 s, on
// a loaded node, is deposed while it holds a pick. hereabouts, now the Lease's holder, must not reserve that pick, or
// the deposed ADD's reservation create meets AlreadyExists after its pool write landed and the ADD fails (code 999):
// the failure seen once in three fresh-clone runs of mixed-whereabouts.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WHEREABOUTS_LEADER_TIMING } from '../../../../src/config/leader-timing.ts';
import { formatIP } from '../../../../src/ip/address.ts';
import { planAssign } from '../../../../src/ipam/assign.ts';
import type { ApiRequest, ApiResponse } from '../../../../src/kube/api.ts';
import { leasePath, microTime } from '../../../../src/kube/lease.ts';
import { commitPool, type CommitContext } from '../../../../src/store/kubernetes/commit.ts';
import { WriteMemory } from '../../../../src/store/kubernetes/contention.ts';
import { getObject, objectPath } from '../../../../src/store/kubernetes/objects.ts';
import { createObject } from '../../../../src/store/kubernetes/resources.ts';
import { WhereaboutsLease } from '../../../../src/store/kubernetes/whereabouts-lease.ts';
import type { PoolRef } from '../../../../src/store/store.ts';
import { entriesOf, updatePool } from '../../../model/whereabouts.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';
import { ip, rangeOf } from '../../allocator/range-fixture.ts';

const quiet = { debug() {}, info() {}, warning() {} };
const NS = 'kube-system';
const CIDR = '10.66.0.0/24';
const pool: PoolRef = { name: '10.66.0.0-24', network: 'net', networkNamed: false, range: rangeOf(CIDR) };

type Obj = Record<string, unknown>;

test('a Whereabouts ADD deposed mid-update (its pick read, its reservation looked up) still succeeds beside a hereabouts ADD holding the Lease', async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: NS });
  const whereabouts = new MemoryApiClient(server, { namespace: NS });
  const existing = { '1': { id: 'c-old', podref: 'default/old', ifname: 'net1' } };
  const created = { metadata: { name: pool.name }, spec: { range: CIDR, allocations: existing } };
  await createObject(api, 'ippools', created);
  // The Lease as the deposed Whereabouts ADD's successor left it: written by Whereabouts a moment ago, handed back.
  const now = microTime(new Date());
  const spec = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 7 };
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'whereabouts' }, spec };
  assert.equal((await whereabouts.send({ method: 'POST', path: leasePath(NS), body: lease })).status, 201);

  // The deposed ADD has read the pool and picked the lowest free address, .2; its reservation was not there (404).
  const read = (await whereabouts.send({ method: 'GET', path: objectPath(NS, 'ippools', pool.name) })).body as Obj;
  const next = entriesOf(read);
  next.set('2', { id: 'c-wb', podref: 'default/wb', ifname: 'net1' });
  const reservation = objectPath(NS, 'overlappingrangeipreservations', '10.66.0.2');
  assert.equal((await whereabouts.send({ method: 'GET', path: reservation })).status, 404);

  // It resumes right after hereabouts' first reservation is answered: its pool write, then its reservation.
  let resumed: { written: number; reserved: number } | undefined;
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    const res = await send(req);
    if (resumed === undefined && req.method === 'POST' && req.path.includes('/overlappingrangeipreservations')) {
      const written = (await updatePool(whereabouts, read, next)).status;
      const body = { metadata: { name: '10.66.0.2' }, spec: { podref: 'default/wb', ifname: 'net1' } };
      const reserved = (
        await whereabouts.send({ method: 'POST', path: objectPath(NS, 'overlappingrangeipreservations'), body })
      ).status;
      resumed = { written, reserved };
    }
    return res;
  };

  const ctx: CommitContext = {
    api,
    node: 'node-b',
    reservations: true,
    budgetMs: 10_000,
    cleanupTimeoutMs: 1_000,
    log: quiet,
    memory: new WriteMemory(),
  };
  const gate = new WhereaboutsLease(api, pool, {
    timing: WHEREABOUTS_LEADER_TIMING,
    node: 'node-b',
    cleanupTimeoutMs: 1_000,
    log: quiet,
  });
  await gate.prepare();
  assert.equal(gate.held, true, 'a Whereabouts plugin wrote the Lease lately: hereabouts writes as its holder');
  const attachment = { containerId: 'c-he', ifname: 'net1', podRef: 'default/he' };
  const outcome = await commitPool(ctx, pool, planAssign(pool, attachment, { createdAt: new Date().toISOString() }), {
    lease: gate,
  });
  if (outcome.kind !== 'assigned') throw new Error(`not assigned: ${outcome.kind}`);
  const granted = outcome.address;

  assert.deepEqual(resumed, { written: 200, reserved: 201 }, "the deposed Whereabouts ADD's writes both landed");
  assert.notEqual(formatIP({ family: 4, value: granted }), '10.66.0.2');
  const after = entriesOf((await getObject(api, 'ippools', pool.name)) as Obj);
  assert.equal(after.get('2')?.podref, 'default/wb');
  assert.equal(after.get(String(granted - ip('10.66.0.0')))?.podref, 'default/he');
  const ours = (await getObject(api, 'overlappingrangeipreservations', formatIP({ family: 4, value: granted }))) as {
    spec: { podref: string };
  };
  assert.equal(ours.spec.podref, 'default/he');
});
