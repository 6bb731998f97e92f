// A pod deletion is cleaned up within seconds, long before the next periodic pass (the controller watches pods).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

describe('controller pod watch', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'wat');
  });
  after(() => ns.cleanup());

  test('deleting a pod releases its allocation without waiting for the 10-minute pass', async () => {
    const pod = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'short-lived' }, spec: { containers: [{ name: 'c', image: 'x' }] } })) as { metadata: { uid: string } };
    await ns.create('ippools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1', kind: 'IPPool', metadata: { name: '10.72.0.0-24' },
      spec: { range: '10.72.0.0/24', allocations: { '1': { id: 'c1', podref: `${ns.name}/short-lived`, ifname: 'net1', podUid: pod.metadata.uid } } },
    });
    const child = spawn(bin, ['controller', '--kubeconfig', ns.kubeconfig, '--reconcile-interval', '10m', '--retry-period', '300ms', '--metrics-addr', '', '--health-addr', ''], { stdio: ['ignore', 'ignore', 'pipe'], env: {} });
    let log = '';
    child.stderr.on('data', (b: Buffer) => (log += b.toString()));
    try {
      for (let i = 0; i < 100 && !/full pass/.test(log); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(log, /full pass: 1 pools/);
      const allocations = async () => Object.keys(((await ns.get('ippools', '10.72.0.0-24'))?.['spec'] as { allocations: object }).allocations);
      assert.deepEqual(await allocations(), ['1'], 'the live pod keeps its address');
      await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/short-lived?gracePeriodSeconds=0`);
      const deletedAt = Date.now();
      while (Date.now() - deletedAt < 15_000 && (await allocations()).length > 0) await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(await allocations(), [], log);
      assert.ok(Date.now() - deletedAt < 15_000);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});
