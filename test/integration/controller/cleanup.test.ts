// `hereabouts controller` (the packaged executable) against pods, pools and reservations in a real API server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { ApiClient } from '../../../src/store/kubernetes/api.ts';
import { loadEndpoint } from '../../../src/store/kubernetes/kubeconfig.ts';
import { fullPass } from '../../../src/controller/full-pass.ts';

const bin = requireBinary();
const GROUP = 'whereabouts.cni.cncf.io/v1alpha1';

async function pod(ns: Namespace, name: string, opts: { running?: boolean; finalizer?: boolean; disrupted?: boolean; networkStatus?: string[] } = {}): Promise<string> {
  const created = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      ...(opts.finalizer ? { finalizers: ['hereabouts.test/hold'] } : {}),
      ...(opts.networkStatus ? { annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify([{ name: 'net1', ips: opts.networkStatus }]) } } : {}),
    },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  })) as { metadata: { uid: string } };
  if (opts.running || opts.disrupted) {
    const conditions = opts.disrupted ? [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager' }] : [];
    await api(ns.cp, 'PATCH', `/api/v1/namespaces/${ns.name}/pods/${name}/status`, { status: { phase: 'Running', conditions } }, 'application/merge-patch+json');
  }
  return created.metadata.uid;
}

function controller(ns: Namespace, ...flags: string[]): { code: number | null; stderr: string } {
  const run = spawnSync(bin, ['controller', '--kubeconfig', ns.kubeconfig, '--once', '--metrics-addr', '', '--health-addr', '', '--reservation-grace', '0s', ...flags], { encoding: 'utf8', env: {}, timeout: 60_000 });
  return { code: run.status, stderr: run.stderr };
}

async function allocations(ns: Namespace, pool: string): Promise<Record<string, { podref: string }>> {
  const object = await ns.get('ippools', pool);
  return (object?.['spec'] as { allocations: Record<string, { podref: string }> }).allocations;
}

describe('controller orphan and reservation cleanup', () => {
  let ns: Namespace;
  const alloc = (pod: string, podUid?: string) => ({ id: `ctr-${pod}`, podref: `${ns.name}/${pod}`, ifname: 'net1', ...(podUid === undefined ? {} : { podUid }) });
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ctl');
    const uids = {
      alive: await pod(ns, 'alive', { running: true }),
      web: await pod(ns, 'web', { running: true }),
      young: await pod(ns, 'young'),
      ending: await pod(ns, 'ending', { running: true, finalizer: true }),
      disrupted: await pod(ns, 'disrupted', { disrupted: true }),
      multus: await pod(ns, 'multus', { running: true, networkStatus: ['10.70.0.99'] }),
    };
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/ending`); // stays terminating: it has a finalizer
    await ns.create('ippools', {
      apiVersion: GROUP, kind: 'IPPool', metadata: { name: '10.70.0.0-24' },
      spec: {
        range: '10.70.0.0/24',
        allocations: {
          '1': alloc('alive', uids.alive), '2': alloc('ghost'), '3': alloc('web', 'uid-of-an-older-web'), '4': alloc('young', 'another-uid'),
          '5': alloc('ending', uids.ending), '6': alloc('disrupted', uids.disrupted), '7': alloc('multus', uids.multus),
        },
      },
    });
    await ns.create('ippools', { apiVersion: GROUP, kind: 'IPPool', metadata: { name: 'fd00-70---64' }, spec: { range: 'fd00:70::/64', allocations: { '5': alloc('ghost6') } } });
    const orir = (name: string, podref: string) => ns.create('overlappingrangeipreservations', { apiVersion: GROUP, kind: 'OverlappingRangeIPReservation', metadata: { name }, spec: { podref, ifname: 'net1', containerid: 'x' } });
    await orir('10.70.0.1', `${ns.name}/alive`);
    await orir('10.70.0.2', `${ns.name}/ghost`);
    await orir('blue-10.70.0.2', `${ns.name}/ghost`);
    await orir('fd00-70--5', `${ns.name}/ghost6`);
    await orir('10.70.0.50', `${ns.name}/alive`); // the pod lives but holds no such address
  });
  after(async () => {
    await api(ns.cp, 'PATCH', `/api/v1/namespaces/${ns.name}/pods/ending`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`);
    await ns.cleanup();
  });

  test('a full pass releases gone, re-created, disrupted and network-status-less allocations and keeps the rest', async () => {
    const run = controller(ns);
    assert.equal(run.code, 0, run.stderr);
    const left = await allocations(ns, '10.70.0.0-24');
    assert.deepEqual(Object.keys(left).sort(), ['1', '4', '5'], run.stderr); // alive, young Pending, terminating (flag off)
    assert.deepEqual(await allocations(ns, 'fd00-70---64'), {});
    const status = (await ns.get('ippools', '10.70.0.0-24'))?.['status'] as { capacity: string; used: number; free: string; conditions: Array<{ type: string; status: string }> };
    assert.deepEqual([status.capacity, status.used, status.free], ['254', 3, '251']);
    assert.deepEqual(status.conditions.map((c) => [c.type, c.status]), [['Exhausted', 'False']]);
  });

  test('reservations of gone pods (IPv4, IPv6, with network_name) and of addresses not held are deleted', async () => {
    const names = (await ns.list('overlappingrangeipreservations')).map((o) => (o['metadata'] as { name: string }).name);
    assert.deepEqual(names, ['10.70.0.1']);
  });

  test('--cleanup-terminating=true also releases the terminating pod', async () => {
    const run = controller(ns, '--cleanup-terminating=true');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(Object.keys(await allocations(ns, '10.70.0.0-24')).sort(), ['1', '4']);
  });

  test('an allocation made while a pass runs is never removed: the conditional patch defers the pool', async () => {
    await ns.create('ippools', { apiVersion: GROUP, kind: 'IPPool', metadata: { name: '10.71.0.0-24' }, spec: { range: '10.71.0.0/24', allocations: { '1': alloc('ghost') } } });
    const client = new (class extends ApiClient {
      override async send(req: Parameters<ApiClient['send']>[0], options?: Parameters<ApiClient['send']>[1]) {
        if (req.method === 'PATCH') {
          // A node's ADD lands between the pass's read and its write (a pod our pod list has not seen).
          await api(ns.cp, 'PATCH', ns.path('ippools', '10.71.0.0-24'), { spec: { allocations: { '2': alloc('brand-new') } } }, 'application/merge-patch+json');
        }
        return super.send(req, options);
      }
    })(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
    try {
      const result = await fullPass(client, {
        policy: { cleanupTerminating: false, cleanupDisrupted: true, verifyNetworkStatus: true, pendingGraceMs: 300_000 },
        leading: () => true,
        reservationGraceMs: 60_000,
        log: () => undefined,
      });
      assert.ok(result.deferred.includes('10.71.0.0-24'));
    } finally {
      client.close();
    }
    assert.deepEqual(Object.keys(await allocations(ns, '10.71.0.0-24')).sort(), ['1', '2']);
  });
});

describe('controller leader election and metrics', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'lead');
  });
  after(() => ns.cleanup());

  test('only the leader acts; when it dies the other takes over within the lease duration; metrics are served', async () => {
    const start = (id: string, metricsPort: number) => {
      const child = spawn(bin, ['controller', '--kubeconfig', ns.kubeconfig, '--identity', id, '--lease-duration', '3s', '--renew-deadline', '2s', '--retry-period', '300ms', '--reconcile-interval', '500ms', '--metrics-addr', `127.0.0.1:${metricsPort}`, '--health-addr', ''], { stdio: ['ignore', 'ignore', 'pipe'], env: {} });
      const out = { text: '' };
      child.stderr.on('data', (b: Buffer) => (out.text += b.toString()));
      return { child, out };
    };
    const a = start('replica-a', 19391);
    await new Promise((r) => setTimeout(r, 1500));
    const b = start('replica-b', 19392);
    try {
      await new Promise((r) => setTimeout(r, 2000));
      const lease = (await api(ns.cp, 'GET', `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/hereabouts-controller`)) as { spec: { holderIdentity: string } };
      assert.equal(lease.spec.holderIdentity, 'replica-a');
      assert.match(a.out.text, /full pass/);
      assert.doesNotMatch(b.out.text, /full pass/);
      const metrics = await (await fetch('http://127.0.0.1:19391/metrics')).text();
      assert.match(metrics, /hereabouts_leader 1/);
      assert.match(metrics, /hereabouts_reconcile_passes_total\{result="ok"\} [1-9]/);
      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      for (let i = 0; i < 60 && !/full pass/.test(b.out.text); i++) await new Promise((r) => setTimeout(r, 100));
      const took = Date.now() - killedAt;
      assert.match(b.out.text, /full pass/, b.out.text);
      assert.ok(took < 3000 + 1500, `took over after ${took} ms (lease 3 s)`);
      const exited = new Promise((r) => b.child.once('exit', r));
      b.child.kill('SIGTERM');
      assert.equal(await exited, 0);
      const after = (await apiRequest(ns.cp, 'GET', `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/hereabouts-controller`)).body as { spec: { holderIdentity?: string } };
      assert.equal(after.spec.holderIdentity ?? '', '', 'SIGTERM hands the lease back');
    } finally {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
    }
  });
});
