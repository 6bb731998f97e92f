// Event-driven cleanup: the controller watches pods, so a deleted pod's allocation and reservation go within
// seconds, long before the next periodic pass; a pod turning terminating is acted on when the flag asks for it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  allocation,
  createPod,
  createPool,
  createReservation,
  deleteAllPods,
  deletePod,
  offsets,
  reservationNames,
  startController,
  type Running,
} from './harness.ts';

describe('controller pod watch', () => {
  let ns: Namespace;
  let controller: Running;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'wat');
    controller = startController(
      ns,
      '--reconcile-interval',
      '10m',
      '--retry-period',
      '300ms',
      '--reservation-grace',
      '0s',
      '--cleanup-terminating',
    );
    await controller.waitForLine((l) => / pass done/.test(l.msg), 15_000);
  });
  after(async () => {
    assert.equal(await controller.stop(), 0);
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('deleting a pod releases its allocation and reservation in the pass the pod watch asks for, not at the next 10-minute pass', async () => {
    const uid = await createPod(ns, 'short-lived', { phase: 'Running' });
    await createPool(ns, '10.84.0.0-24', '10.84.0.0/24', { '1': allocation(ns, 'short-lived', uid) });
    await createReservation(ns, '10.84.0.1', `${ns.name}/short-lived`);
    await deletePod(ns, 'short-lived');
    // The periodic pass is 10 minutes away: only the cleanup pass the deletion triggers can do this.
    const done = await controller.waitForLine(
      (l) => l['pass'] === 'cleanup' && / pass done/.test(l.msg) && l['released'] === 1,
      30_000,
    );
    assert.equal(done['reservationsDeleted'], 1, controller.log());
    assert.deepEqual(await offsets(ns, '10.84.0.0-24'), []);
    assert.ok(!(await reservationNames(ns)).includes('10.84.0.1'));
  });

  test('a pod that starts terminating is acted on at once when --cleanup-terminating is set', async () => {
    const uid = await createPod(ns, 'ending', { phase: 'Running', finalizer: true });
    await createPool(ns, '10.84.1.0-24', '10.84.1.0/24', { '1': allocation(ns, 'ending', uid) });
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/ending`);
    await controller.waitForLine(
      (l) => l.msg === `released 10.84.1.1 of ${ns.name}/ending from IPPool 10.84.1.0-24: pod-terminating`,
      30_000,
    );
    assert.deepEqual(await offsets(ns, '10.84.1.0-24'), []);
  });
});
