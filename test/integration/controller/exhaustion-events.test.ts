// A range that runs out is announced where people look: a Warning Event on the IPPool and on the
// NetworkAttachmentDefinition of its network, once per transition to Exhausted (not on every pass), and again when
// the pool fills up once more after an address was freed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  allocation,
  createNad,
  createPod,
  createPool,
  deleteAllPods,
  eventually,
  events,
  GROUP,
  startController,
  type EventSeen,
  type Running,
} from './harness.ts';

describe('Warning Events on exhaustion', () => {
  let ns: Namespace;
  let controller: Running;
  let uid: string;
  const pool = (): string => `${ns.name}-full-10.91.0.0-30`;
  const exhaustedEvents = async (kind: string): Promise<EventSeen[]> =>
    (await events(ns)).filter((e) => e.reason === 'PoolExhausted' && e.involvedObject.kind === kind);
  const fullPasses = (): number =>
    controller.lines().filter((l) => l['pass'] === 'full' && / pass done/.test(l.msg)).length;
  const waitPasses = async (n: number): Promise<void> => {
    const from = fullPasses();
    assert.ok(await eventually(() => fullPasses() >= from + n, 30_000), controller.log());
  };
  const exhausted = async (): Promise<string | undefined> => {
    const conditions = (
      (await ns.get('ippools', pool()))?.['status'] as
        { conditions?: Array<{ type: string; status: string }> } | undefined
    )?.conditions;
    return conditions?.find((c) => c.type === 'Exhausted')?.status;
  };

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'exh');
    await createNad(ns, 'fullnet', { type: 'hereabouts', range: '10.91.0.0/30', network_name: `${ns.name}-full` });
    await createNad(ns, 'othernet', { type: 'hereabouts', range: '10.92.0.0/24' });
    uid = await createPod(ns, 'alive', { phase: 'Running' });
    await createPool(ns, pool(), '10.91.0.0/30', {
      '1': allocation(ns, 'alive', uid),
      '2': allocation(ns, 'alive', uid),
    });
    controller = startController(ns, '--retry-period', '300ms', '--reconcile-interval', '1s');
  });
  after(async () => {
    await controller.stop();
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test("the IPPool and its network's NAD get one Warning PoolExhausted event, not one per pass", async () => {
    assert.ok(
      await eventually(async () => (await exhaustedEvents('NetworkAttachmentDefinition')).length > 0, 30_000),
      controller.log(),
    );
    await waitPasses(3);
    const onPool = await exhaustedEvents('IPPool');
    const onNad = await exhaustedEvents('NetworkAttachmentDefinition');
    assert.equal(onPool.length, 1, JSON.stringify(onPool));
    assert.equal(onNad.length, 1, JSON.stringify(onNad));
    assert.equal(onPool[0]!.type, 'Warning');
    assert.equal(onPool[0]!.involvedObject.name, pool());
    assert.equal(onPool[0]!.count ?? 1, 1);
    assert.equal(onNad[0]!.involvedObject.name, 'fullnet', 'only the NAD whose network draws from the pool');
    assert.equal(onNad[0]!.count ?? 1, 1);
    assert.match(onPool[0]!.message, /every one of the 2 addresses of IPPool \S+ \(10\.91\.0\.0\/30\) is allocated/);
  });

  test('freed and full again: a second transition, announced once more', async () => {
    const path = `/apis/${GROUP}/namespaces/${ns.name}/ippools/${pool()}`;
    await api(ns.cp, 'PATCH', path, { spec: { allocations: { '2': null } } }, 'application/merge-patch+json');
    assert.ok(await eventually(async () => (await exhausted()) === 'False', 30_000), controller.log());
    await api(
      ns.cp,
      'PATCH',
      path,
      { spec: { allocations: { '2': allocation(ns, 'alive', uid) } } },
      'application/merge-patch+json',
    );
    assert.ok(await eventually(async () => (await exhausted()) === 'True', 30_000), controller.log());
    assert.ok(
      await eventually(async () => ((await exhaustedEvents('IPPool'))[0]?.count ?? 1) === 2, 30_000),
      JSON.stringify(await exhaustedEvents('IPPool')),
    );
    await waitPasses(2);
    const [onPool] = await exhaustedEvents('IPPool');
    const [onNad] = await exhaustedEvents('NetworkAttachmentDefinition');
    assert.equal(onPool?.count, 2);
    assert.equal(onNad?.count, 2);
  });
});
