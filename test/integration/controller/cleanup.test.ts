// Orphan cleanup by `hereabouts controller --once` (the packaged executable) against pods and IPPools in a real API
// server. Each case has its own pool and pods, so a run that also sees the other cases' pools changes nothing the
// case looks at.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import {
  allocation,
  createPod,
  createPool,
  deleteAllPods,
  deletePod,
  events,
  offsets,
  runOnce,
  setPodStatus,
  terminatePod,
} from './harness.ts';

describe('controller orphan cleanup', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'orph');
  });
  after(async () => {
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  const once = (...flags: string[]) => {
    const run = runOnce(ns, ...flags);
    assert.equal(run.code, 0, run.stderr);
    return run;
  };

  test('the allocation of a deleted pod is released, with an event on the pool', async () => {
    const uid = await createPod(ns, 'gone', { phase: 'Running' });
    const keep = await createPod(ns, 'stays', { phase: 'Running' });
    await createPool(ns, '10.80.1.0-24', '10.80.1.0/24', {
      '1': allocation(ns, 'gone', uid),
      '2': allocation(ns, 'stays', keep),
    });
    await deletePod(ns, 'gone');
    const run = once();
    assert.deepEqual(await offsets(ns, '10.80.1.0-24'), ['2']);
    assert.ok(
      run.lines.some((l) => l.msg === `released 10.80.1.1 of ${ns.name}/gone from IPPool 10.80.1.0-24: pod-gone`),
      run.stderr,
    );
    const event = (await events(ns)).find(
      (e) => e.reason === 'OrphansReleased' && e.involvedObject.name === '10.80.1.0-24',
    );
    assert.match(event?.message ?? '', /released 1 orphaned allocation\(s\): 10\.80\.1\.1 of .*\/gone \(pod-gone\)/);
  });

  test('an allocation whose pod was re-created under the same name (new UID) is released', async () => {
    const old = await createPod(ns, 'web', { phase: 'Running' });
    await deletePod(ns, 'web');
    const fresh = await createPod(ns, 'web', { phase: 'Running' });
    assert.notEqual(old, fresh);
    await createPool(ns, '10.80.2.0-24', '10.80.2.0/24', { '1': allocation(ns, 'web', old) });
    once();
    assert.deepEqual(await offsets(ns, '10.80.2.0-24'), []);
  });

  test('an allocation recorded with the live pod UID is kept', async () => {
    const uid = await createPod(ns, 'same', { phase: 'Running' });
    await createPool(ns, '10.80.3.0-24', '10.80.3.0/24', {
      '1': allocation(ns, 'same', uid),
      '2': allocation(ns, 'same'),
    });
    once();
    assert.deepEqual(
      await offsets(ns, '10.80.3.0-24'),
      ['1', '2'],
      'a record without podUid (Whereabouts) is matched by name',
    );
  });

  test('a terminating pod keeps its allocation unless --cleanup-terminating is true', async () => {
    const uid = await createPod(ns, 'ending', { phase: 'Running', finalizer: true });
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/ending`); // stays Terminating: it has a finalizer
    await createPool(ns, '10.80.4.0-24', '10.80.4.0/24', { '1': allocation(ns, 'ending', uid) });
    once();
    assert.deepEqual(await offsets(ns, '10.80.4.0-24'), ['1'], 'default --cleanup-terminating=false');
    once('--cleanup-terminating');
    assert.deepEqual(await offsets(ns, '10.80.4.0-24'), []);
  });

  test('a pod disrupted by the taint manager whose containers stopped loses its allocation', async () => {
    const uid = await createPod(ns, 'tainted', { phase: 'Running', disrupted: true, container: 'terminated' });
    await createPool(ns, '10.80.5.0-24', '10.80.5.0/24', { '1': allocation(ns, 'tainted', uid) });
    once('--cleanup-disrupted=false');
    assert.deepEqual(await offsets(ns, '10.80.5.0-24'), ['1'], '--cleanup-disrupted=false keeps it');
    const run = once();
    assert.deepEqual(await offsets(ns, '10.80.5.0-24'), []);
    assert.ok(
      run.lines.some(
        (l) => l.msg === `released 10.80.5.1 of ${ns.name}/tainted from IPPool 10.80.5.0-24: pod-disrupted`,
      ),
      run.stderr,
    );
  });

  // The Eviction API (a drain), the scheduler's preemption and the kubelet set DisruptionTarget=True when they start
  // a pod's graceful termination: its containers still run, and so does its network, for the grace period.
  for (const [i, reason] of [
    'EvictionByEvictionAPI',
    'PreemptionByScheduler',
    'TerminationByKubelet',
    'DeletionByTaintManager',
  ].entries()) {
    test(`a pod still running in its grace period after DisruptionTarget=True (${reason}) keeps its allocation`, async () => {
      const name = `draining-${i}`;
      const uid = await createPod(ns, name, {
        phase: 'Running',
        node: 'node-x',
        finalizer: true,
        disrupted: reason,
        container: 'running',
      });
      await terminatePod(ns, name); // bound to a node: deletionTimestamp 30 s ahead, the finalizer keeps it
      const pool = `10.80.${20 + i}.0-24`;
      await createPool(ns, pool, `10.80.${20 + i}.0/24`, { '1': allocation(ns, name, uid) });
      const run = once();
      assert.ok(
        run.lines.some((l) => l.msg.startsWith('full pass done')),
        run.stderr,
      );
      assert.deepEqual(await offsets(ns, pool), ['1'], run.stderr);
      if (reason !== 'DeletionByTaintManager') return;
      // The taint manager's deletion: released once the pod's containers stopped.
      await setPodStatus(ns, name, { phase: 'Running', disrupted: reason, container: 'terminated' });
      once();
      assert.deepEqual(await offsets(ns, pool), []);
    });
  }

  test('a terminal pod keeps its allocation while its sandbox may exist; released once it is gone or after --terminal-grace', async () => {
    const done = await createPod(ns, 'job-done', { phase: 'Succeeded', container: 'terminated' });
    const failed = await createPod(ns, 'job-failed', {
      phase: 'Failed',
      container: 'terminated',
      disrupted: 'TerminationByKubelet',
    });
    await createPool(ns, '10.80.9.0-24', '10.80.9.0/24', {
      '1': allocation(ns, 'job-done', done),
      '2': allocation(ns, 'job-failed', failed),
    });
    once();
    assert.deepEqual(await offsets(ns, '10.80.9.0-24'), ['1', '2'], 'terminal a moment ago, sandbox state unknown');
    // The kubelet turns PodReadyToStartContainers False once it has torn the sandbox down (CNI DEL was attempted).
    await setPodStatus(ns, 'job-done', {
      phase: 'Succeeded',
      container: 'terminated',
      conditions: [{ type: 'PodReadyToStartContainers', status: 'False' }],
    });
    const run = once();
    assert.deepEqual(await offsets(ns, '10.80.9.0-24'), ['2']);
    assert.ok(
      run.lines.some(
        (l) => l.msg === `released 10.80.9.1 of ${ns.name}/job-done from IPPool 10.80.9.0-24: pod-terminal`,
      ),
      run.stderr,
    );
    once('--terminal-grace', '0s'); // graceful node shutdown: no kubelet left to say so
    assert.deepEqual(await offsets(ns, '10.80.9.0-24'), []);
  });

  test("an address missing from a running pod's network-status is released; the listed one stays", async () => {
    const uid = await createPod(ns, 'multus', { phase: 'Running', networkStatus: ['10.80.6.2', 'fd00:80:6::2'] });
    await createPool(ns, '10.80.6.0-24', '10.80.6.0/24', {
      '1': allocation(ns, 'multus', uid),
      '2': allocation(ns, 'multus', uid),
    });
    await createPool(ns, 'fd00-80-6---64', 'fd00:80:6::/64', {
      '2': allocation(ns, 'multus', uid),
      '3': allocation(ns, 'multus', uid),
    });
    once('--verify-network-status=false');
    assert.deepEqual(await offsets(ns, '10.80.6.0-24'), ['1', '2'], '--verify-network-status=false keeps both');
    once();
    assert.deepEqual(await offsets(ns, '10.80.6.0-24'), ['2']);
    assert.deepEqual(await offsets(ns, 'fd00-80-6---64'), ['2']);
  });

  test('a young Pending pod is never touched, even with another UID; past the grace period it is', async () => {
    await createPod(ns, 'starting', { phase: 'Pending' });
    await createPool(ns, '10.80.7.0-24', '10.80.7.0/24', { '1': allocation(ns, 'starting', 'uid-of-an-earlier-pod') });
    once();
    assert.deepEqual(await offsets(ns, '10.80.7.0-24'), ['1'], 'default --pending-grace=5m');
    once('--pending-grace', '0s');
    assert.deepEqual(await offsets(ns, '10.80.7.0-24'), []);
  });

  test('allocations without a pod reference are left alone', async () => {
    await createPool(ns, '10.80.8.0-24', '10.80.8.0/24', {
      '1': { id: 'runtime-without-pod', podref: '', ifname: 'eth0' },
    });
    once();
    assert.deepEqual(await offsets(ns, '10.80.8.0-24'), ['1']);
  });
});
