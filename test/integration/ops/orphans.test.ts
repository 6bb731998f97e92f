// `hereabouts orphans`: what the controller releases now, and what a grace period holds back with the instant it
// ends, for allocations and reservations; the controller's flags change the verdicts as they change the controller's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { createPod, deleteAllPods } from '../controller/harness.ts';
import { entry, hb, json, pool, reservation } from './harness.ts';

interface Row {
  pool?: string;
  name?: string;
  address?: string;
  podRef: string;
  reason: string;
  releasableAt?: string;
}
interface Report {
  allocations: Row[];
  waiting: Row[];
  reservations: Row[];
  reservationsWaiting: Row[];
}

const at = (iso: string, plusMs: number): string => new Date(Date.parse(iso) + plusMs).toISOString();

describe('hereabouts orphans', () => {
  let ns: Namespace;
  const created = new Date().toISOString();
  let pendingCreated: string;
  let failedSince: string;
  let reservationCreated: string;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-orphans');
    await createPod(ns, 'running', { phase: 'Running', container: 'running' });
    await createPod(ns, 'starting', { phase: 'Pending' });
    await createPod(ns, 'failed', { phase: 'Failed', container: 'terminated' });
    const read = async (name: string) =>
      (await api(ns.cp, 'GET', `/api/v1/namespaces/${ns.name}/pods/${name}`)) as {
        metadata: { creationTimestamp: string };
        status: { containerStatuses: Array<{ state: { terminated: { finishedAt: string } } }> };
      };
    pendingCreated = (await read('starting')).metadata.creationTimestamp;
    failedSince = (await read('failed')).status.containerStatuses[0]!.state.terminated.finishedAt;
    await pool(ns, '10.80.0.0-24', '10.80.0.0/24', {
      '1': entry(ns, 'running'),
      '2': entry(ns, 'gone'), // released now
      '3': entry(ns, 'gone-young', { createdAt: created }), // an ADD may still be running: waits 5m
      '4': entry(ns, 'starting', { podUid: 'uid-of-an-earlier-pod' }), // a young Pending pod: waits 5m
      '5': entry(ns, 'failed'), // terminal, sandbox not reported gone: waits 60s
    });
    await reservation(ns, '10.80.0.99', entry(ns, 'gone')); // no pool holds it, its pod is gone: waits 60s
    reservationCreated = (
      (await ns.get('overlappingrangeipreservations', '10.80.0.99'))!['metadata'] as { creationTimestamp: string }
    ).creationTimestamp;
  });
  after(async () => {
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('-o json: released now, and held back by a grace period until a given instant', () => {
    const report = json(hb(ns, ['orphans', '-o', 'json'])) as Report;
    const pod = (name: string) => `${ns.name}/${name}`;
    assert.deepEqual(report.allocations, [
      { pool: '10.80.0.0-24', address: '10.80.0.2', podRef: pod('gone'), containerId: 'ctr-gone', reason: 'pod-gone' },
    ]);
    assert.deepEqual(report.waiting, [
      {
        pool: '10.80.0.0-24',
        address: '10.80.0.3',
        podRef: pod('gone-young'),
        containerId: 'ctr-gone-young',
        reason: 'pod-gone',
        releasableAt: at(created, 5 * 60_000),
      },
      {
        pool: '10.80.0.0-24',
        address: '10.80.0.4',
        podRef: pod('starting'),
        containerId: 'ctr-starting',
        reason: 'pod-recreated',
        releasableAt: at(pendingCreated, 5 * 60_000),
      },
      {
        pool: '10.80.0.0-24',
        address: '10.80.0.5',
        podRef: pod('failed'),
        containerId: 'ctr-failed',
        reason: 'pod-terminal',
        releasableAt: at(failedSince, 60_000),
      },
    ]);
    assert.deepEqual(report.reservations, []);
    assert.deepEqual(report.reservationsWaiting, [
      { name: '10.80.0.99', podRef: pod('gone'), reason: 'pod-gone', releasableAt: at(reservationCreated, 60_000) },
    ]);
  });

  test("the controller's flags: shorter grace periods release what they held back", () => {
    const report = json(
      hb(ns, ['orphans', '-o', 'json', '--terminal-grace', '0s', '--reservation-grace', '0s', '--pending-grace', '0s']),
    ) as Report;
    assert.deepEqual(
      report.allocations.map((r) => `${r.address} ${r.reason}`),
      ['10.80.0.2 pod-gone', '10.80.0.3 pod-gone', '10.80.0.4 pod-recreated', '10.80.0.5 pod-terminal'],
    );
    assert.deepEqual(report.waiting, []);
    assert.deepEqual(
      report.reservations.map((r) => `${r.name} ${r.reason}`),
      ['10.80.0.99 pod-gone'],
    );
  });

  test('the table says what goes now and in how long the rest does', () => {
    const run = hb(ns, ['orphans']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines[0], `namespace ${ns.name}: 1 allocation(s) to release now, 3 in a grace period`);
    assert.match(lines[1] ?? '', /^POOL\s+ADDRESS\s+POD\s+REASON\s+RELEASED$/);
    assert.match(
      lines[2] ?? '',
      new RegExp(`^10\\.80\\.0\\.0-24\\s+10\\.80\\.0\\.2\\s+${ns.name}/gone\\s+pod-gone\\s+now$`),
    );
    assert.match(lines[3] ?? '', /10\.80\.0\.3\s+\S+\s+pod-gone\s+in [45]m\d*s? \(\d{4}-/);
    assert.ok(lines.includes('0 reservation(s) to delete now, 1 in a grace period'), run.stdout);
  });
});
