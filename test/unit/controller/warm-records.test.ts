// The controller's rule for warm records (DESIGN §11): held while their node exists, whatever the pods; released
// once the node is gone, as the API server says it now (the node cache alone never decides).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cleanupPass } from '../../../src/controller/orphans/cleanup-pass.ts';
import { DEFAULT_POLICY } from '../../../src/controller/orphans/orphans.ts';
import { poolView, type PoolView } from '../../../src/controller/pools/view.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { getObject } from '../../../src/store/kubernetes/objects.ts';
import { createObject } from '../../../src/store/kubernetes/resources.ts';
import { MemoryApiClient, MemoryApiServer } from '../../support/memory-apiserver.ts';

const NS = 'kube-system';
const warm = (node: string) => ({ id: `hereabouts-warm:${node}/10.9.0.0-24`, podref: '', ifname: 'warm', node });

test('a warm record is released only once its node is gone, read live; a node missing from the cache alone is not enough', async () => {
  const server = new MemoryApiServer();
  const api = new MemoryApiClient(server, { namespace: NS });
  for (const name of ['node-a', 'node-late'])
    assert.equal((await api.send({ method: 'POST', path: '/api/v1/nodes', body: { metadata: { name } } })).status, 201);
  const allocations = { '1': warm('node-a'), '2': warm('node-gone'), '3': warm('node-late') };
  const pool = { metadata: { name: '10.9.0.0-24' }, spec: { range: '10.9.0.0/24', allocations } };
  await createObject(api, 'ippools', pool);
  const object = await getObject(api, 'ippools', '10.9.0.0-24');
  const view = poolView(object);
  assert.ok(view !== undefined);
  const result = await cleanupPass(api, {
    pods: new Map(),
    // node-late exists, but the cache has not seen it yet.
    nodes: new Map([['node-a', { uid: 'a' }]]),
    pools: new Map<string, PoolView>([[`${NS}/${view.name}`, view]]),
    reservations: new Map(),
    networkNames: new Set(),
    policy: DEFAULT_POLICY,
    reservationGraceMs: 60_000,
    leading: () => true,
    log: jsonLog({ level: 'error', mode: 'controller', write: () => undefined }),
  });
  assert.deepEqual(
    result.released.map((r) => [r.ip, r.reason]),
    [['10.9.0.2', 'node-gone']],
  );
  const after = (await getObject(api, 'ippools', '10.9.0.0-24')) as { spec: { allocations: Record<string, unknown> } };
  assert.deepEqual(Object.keys(after.spec.allocations).sort(), ['1', '3']);
});
