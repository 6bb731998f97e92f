// `hereabouts release` of a node agent's warm address (DESIGN §11), in process on the in-memory API server: the
// agent hands warm addresses to pods from its own state, without reading the pool, so release refuses a warm record
// (and a warm reservation no pool holds) while its node exists or cannot be read, --force included; the warm record
// of a node that is gone (a 404) is an orphan and goes like one. The real API server's run of the same is
// test/integration/ops/release-warm.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRelease, release, warmReason } from '../../../src/cli/release.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../../src/kube/api.ts';
import { getObject } from '../../../src/store/kubernetes/objects.ts';
import { createObject } from '../../../src/store/kubernetes/resources.ts';
import { MemoryApiClient, MemoryApiServer } from '../../support/memory-apiserver.ts';

const NS = 'kube-system';
const POOL = 'warm-10.91.0.0-24';
const warm = (node: string) => ({ id: `hereabouts-warm:${node}/${POOL}/0123abcd`, podref: '', ifname: 'warm' });

/** The node GETs answer `nodes` instead of the server: a status (403, 500) or an unreachable API server. */
class NodeFaults extends MemoryApiClient {
  nodes: 'pass' | number | 'unreachable' = 'pass';
  override async send(req: ApiRequest): Promise<ApiResponse> {
    if (this.nodes === 'pass' || !req.path.startsWith('/api/v1/nodes/')) return super.send(req);
    if (this.nodes === 'unreachable')
      throw new ApiUnreachableError('connect ECONNREFUSED 10.0.0.1:6443', { ambiguous: false });
    const reason = this.nodes === 403 ? 'Forbidden' : 'InternalError';
    return { status: this.nodes, body: { kind: 'Status', reason, message: 'no node for you' } };
  }
}

async function cluster(): Promise<NodeFaults> {
  const api = new NodeFaults(new MemoryApiServer(), { namespace: NS });
  const posted = await api.send({ method: 'POST', path: '/api/v1/nodes', body: { metadata: { name: 'node-live' } } });
  assert.equal(posted.status, 201);
  const pool = {
    metadata: { name: POOL },
    spec: { range: '10.91.0.0/24', allocations: { '1': warm('node-live'), '2': warm('node-gone') } },
  };
  await createObject(api, 'ippools', pool);
  for (const [address, node] of [
    ['10.91.0.1', 'node-live'],
    ['10.91.0.2', 'node-gone'],
    ['10.91.0.8', 'node-live'], // no pool holds it: an agent's claim between its reserve and its pool write
    ['10.91.0.9', 'node-gone'],
  ] as const) {
    const { id, podref, ifname } = warm(node);
    const reservation = { metadata: { name: `warm-${address}` }, spec: { podref, ifname, containerid: id } };
    await createObject(api, 'overlappingrangeipreservations', reservation);
  }
  return api;
}

const allocations = async (api: MemoryApiClient) =>
  ((await getObject(api, 'ippools', POOL)) as { spec: { allocations: Record<string, unknown> } }).spec.allocations;
const reservationOf = (api: MemoryApiClient, address: string) =>
  getObject(api, 'overlappingrangeipreservations', `warm-${address}`);

test("release(): a live node's warm record is refused, --force too; nothing is written", async () => {
  const api = await cluster();
  for (const force of [false, true]) {
    const report = await release(api, parseIP('10.91.0.1'), 'warm', force);
    assert.deepEqual(report.released, []);
    assert.deepEqual(report.reservation, { name: 'warm-10.91.0.1', outcome: 'kept' });
    assert.equal(
      report.refused,
      `${warmReason('10.91.0.1', POOL, 'node-live', { state: 'present' })}: --force does not release it`,
    );
    assert.match(
      report.refused ?? '',
      /^10\.91\.0\.1 in IPPool warm-10\.91\.0\.0-24 is a warm address of node node-live, which exists: /,
    );
  }
  assert.deepEqual((await allocations(api))['1'], warm('node-live'));
  assert.notEqual(await reservationOf(api, '10.91.0.1'), undefined);
});

test("release(): a gone node's warm record is released without --force, and its reservation deleted", async () => {
  const api = await cluster();
  const report = await release(api, parseIP('10.91.0.2'), 'warm', false);
  assert.equal(report.refused, undefined);
  assert.deepEqual(report.released, [{ pool: POOL, podRef: '', containerId: warm('node-gone').id, ifname: 'warm' }]);
  assert.deepEqual(report.reservation, { name: 'warm-10.91.0.2', outcome: 'deleted' });
  assert.deepEqual(Object.keys(await allocations(api)), ['1']);
  assert.equal(await reservationOf(api, '10.91.0.2'), undefined);
});

test('release(): a node that cannot be read (403, 500, unreachable) may exist: refused, --force too', async () => {
  const api = await cluster();
  for (const [fault, why] of [
    [403, '403 Forbidden: no node for you'],
    [500, '500 InternalError: no node for you'],
    ['unreachable', 'connect ECONNREFUSED 10.0.0.1:6443'],
  ] as const) {
    api.nodes = fault;
    // The gone node's record too: only a 404 says a node is gone.
    for (const [address, node] of [
      ['10.91.0.1', 'node-live'],
      ['10.91.0.2', 'node-gone'],
    ] as const) {
      const report = await release(api, parseIP(address), 'warm', true);
      assert.equal(
        report.refused,
        `${warmReason(address, POOL, node, { state: 'unknown', why })}: --force does not release it`,
      );
      assert.ok(
        report.refused.includes(`node ${node}, which could not be read (${why}), so it may exist: `),
        report.refused,
      );
    }
  }
  assert.deepEqual(Object.keys(await allocations(api)).sort(), ['1', '2']);
});

test('release(): a warm reservation no pool holds is kept while its node exists or cannot be read; a gone one goes', async () => {
  const api = await cluster();
  for (const fault of ['pass', 403] as const) {
    api.nodes = fault;
    const report = await release(api, parseIP('10.91.0.8'), 'warm', true);
    assert.deepEqual(report.reservation, { name: 'warm-10.91.0.8', outcome: 'kept' });
    assert.match(
      report.refused ?? '',
      /^reservation warm-10\.91\.0\.8 is a warm reservation of node node-live, which (exists|could not be read \(403 .*\), so it may exist): its agent reserves an address before its pool write claims it, .*--reservation-grace: --force does not delete it$/,
    );
  }
  assert.notEqual(await reservationOf(api, '10.91.0.8'), undefined);
  api.nodes = 'pass';
  const gone = await release(api, parseIP('10.91.0.9'), 'warm', false);
  assert.equal(gone.refused, undefined);
  assert.deepEqual(gone.reservation, { name: 'warm-10.91.0.9', outcome: 'deleted' });
});

test('warmReason(): what the operator can do; none once the node is gone', () => {
  const why = warmReason('10.91.0.1', POOL, 'node-a', { state: 'present' }) ?? '';
  assert.match(why, /may hand it to a pod at any moment, from its own state and without reading the pool/);
  assert.match(why, /could give the address out twice/);
  assert.match(
    why,
    /gives its warm addresses back itself \(beyond its minimum when idle, and all of them when it stops/,
  );
  assert.match(why, /stop or restart the node's agent to free them/);
  assert.match(why, /the controller releases them once the node is gone$/);
  assert.equal(warmReason('10.91.0.1', POOL, 'node-a', { state: 'gone' }), undefined);
  const text = formatRelease({
    address: '10.91.0.1',
    network: 'warm',
    released: [],
    skipped: [],
    reservation: { name: 'warm-10.91.0.1', outcome: 'kept' },
    refused: `${why}: --force does not release it`,
  });
  assert.equal(text, `refused to release 10.91.0.1 of network warm: ${why}: --force does not release it\n`);
});
