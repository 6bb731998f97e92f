// `hereabouts check` against a real API server: exit 0 on a consistent namespace, then each kind of problem, made
// through the API as a broken writer or a lost pod would leave it, is found (exit 1, table and JSON).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { createPod, deleteAllPods, GROUP } from '../controller/harness.ts';
import { entry, hb, json, pool, reservation, sliceOwner } from './harness.ts';

interface Problem {
  kind: string;
  message: string;
  pool?: string;
  address?: string;
  reservation?: string;
  podRef?: string;
  reason?: string;
}
interface Report {
  namespace: string;
  pools: number;
  allocations: number;
  reservations: number;
  problems: Problem[];
}

describe('hereabouts check', () => {
  let ns: Namespace;
  let webUid: string;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-check');
    webUid = await createPod(ns, 'web', { phase: 'Running', container: 'running', node: 'node-a' });
    const web = entry(ns, 'web', { podUid: webUid, node: 'node-a' });
    await pool(ns, '10.95.0.0-24', '10.95.0.0/24', { '5': web });
    await reservation(ns, '10.95.0.5', web);
  });
  after(async () => {
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('a consistent namespace: exit 0', () => {
    const run = hb(ns, ['check', '--reservation-grace', '0s']);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(run.stdout, `namespace ${ns.name}: 1 pool(s), 1 allocation(s), 1 reservation(s): consistent\n`);
  });

  test('each kind of problem is found: exit 1, one entry each, in JSON and in the table', async () => {
    const web = entry(ns, 'web', { podUid: webUid, node: 'node-a' });
    // The same address in two pools of one network (overlapping ranges without reservations between them).
    await pool(ns, '10.95.0.0-28', '10.95.0.0/28', { '5': web });
    // Node-a's slice holds an address for a pod on node-b.
    await sliceOwner(ns, 'slicenet', '10.96.0.0/24', '/28', [{ nodeName: 'node-a', sliceRange: '10.96.0.0/28' }]);
    await pool(ns, 'node-a-10.96.0.0-28', '10.96.0.0/28', {
      '3': entry(ns, 'web', { podUid: webUid, node: 'node-b' }),
    });
    // A pool whose writer uses reservations (.1 has one) but whose .2 lost it, whose .3 is reserved for another
    // pod, whose .4 belongs to a pod that is gone, and an entry that is not an offset.
    const a = entry(ns, 'web', { podUid: webUid });
    await api(ns.cp, 'POST', ns.path('ippools'), {
      apiVersion: GROUP,
      kind: 'IPPool',
      metadata: { name: '10.97.0.0-24' },
      spec: { range: '10.97.0.0/24', allocations: { '1': a, '2': a, '3': a, '4': entry(ns, 'gone'), abc: a } },
    });
    await reservation(ns, '10.97.0.1', a);
    await reservation(ns, '10.97.0.3', entry(ns, 'intruder'));
    await reservation(ns, '10.97.0.4', entry(ns, 'gone'));
    // A reservation for an address no pool holds.
    await reservation(ns, '10.98.0.1', entry(ns, 'left-behind'));

    const run = hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json']);
    const report = json(run, 1) as Report;
    const found = report.problems.map((p) =>
      [p.kind, p.address, p.pool ?? p.reservation].filter((x) => x !== undefined).join(' '),
    );
    assert.deepEqual(found, [
      'unreadable-pool 10.97.0.0-24',
      'duplicate-address 10.95.0.5',
      'outside-node-slice 10.96.0.3 node-a-10.96.0.0-28',
      'orphan 10.97.0.4 10.97.0.0-24',
      'reservation-mismatch 10.97.0.3 10.97.0.0-24',
      'allocation-without-reservation 10.97.0.2 10.97.0.0-24',
      'reservation-without-allocation 10.98.0.1 10.98.0.1',
    ]);
    const byKind = new Map(report.problems.map((p) => [p.kind, p]));
    assert.match(
      byKind.get('duplicate-address')!.message,
      /10\.95\.0\.5 is allocated in 2 pools of network \(unnamed\): 10\.95\.0\.0-24, 10\.95\.0\.0-28/,
    );
    assert.match(
      byKind.get('outside-node-slice')!.message,
      /the node slice of node-a, is held by .*\/web on node node-b/,
    );
    assert.equal(byKind.get('orphan')!.reason, 'pod-gone');
    assert.equal(byKind.get('reservation-mismatch')!.reservation, '10.97.0.3');
    assert.equal(byKind.get('allocation-without-reservation')!.reservation, '10.97.0.2');
    assert.equal(byKind.get('reservation-without-allocation')!.podRef, `${ns.name}/left-behind`);
    assert.match(byKind.get('unreadable-pool')!.message, /ignoring allocation key "abc"/);
    assert.deepEqual([report.pools, report.allocations, report.reservations], [4, 7, 5]);

    const table = hb(ns, ['check', '--reservation-grace', '0s']);
    assert.equal(table.code, 1);
    const lines = table.stdout.split('\n');
    assert.equal(lines[0], `namespace ${ns.name}: 4 pool(s), 7 allocation(s), 5 reservation(s): 7 problem(s)`);
    assert.match(lines[1] ?? '', /^PROBLEM\s+DETAILS$/);
    assert.match(lines[2] ?? '', /^unreadable-pool\s+IPPool 10\.97\.0\.0-24: ignoring allocation key "abc"/);
  });

  test('a young reservation is not yet a problem (its writer reserves before its pool write)', () => {
    const report = json(hb(ns, ['check', '-o', 'json']), 1) as Report;
    assert.ok(
      !report.problems.some((p) => p.kind === 'reservation-without-allocation'),
      JSON.stringify(report.problems),
    );
  });

  test('a warm record of a node that exists is no problem; one of a node that is gone is', async () => {
    const live = `${ns.name}-live`;
    await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: live } });
    try {
      const warm = (node: string) => ({ id: `hereabouts-warm:${node}/10.99.0.0-24`, podref: '', ifname: 'warm' });
      await pool(ns, '10.99.0.0-24', '10.99.0.0/24', { '1': warm(live), '2': warm(`${ns.name}-gone`) });
      const report = json(hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json']), 1) as Report;
      const warmProblems = report.problems.filter((p) => p.kind === 'warm-of-gone-node');
      assert.deepEqual(
        warmProblems.map((p) => p.address),
        ['10.99.0.2'],
        JSON.stringify(report.problems),
      );
      assert.match(warmProblems[0]?.message ?? '', new RegExp(`${ns.name}-gone, a node that no longer exists`));
    } finally {
      await api(ns.cp, 'DELETE', `/api/v1/nodes/${live}`);
    }
  });

  test('a user who may not list pods gets a pods-not-listed problem', async () => {
    const base = `/api/v1/namespaces/${ns.name}`;
    await api(ns.cp, 'POST', `${base}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'pools-only' },
    });
    await api(ns.cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pools-only' },
      rules: [
        {
          apiGroups: ['whereabouts.cni.cncf.io'],
          resources: ['ippools', 'nodeslicepools', 'overlappingrangeipreservations'],
          verbs: ['list'],
        },
      ],
    });
    await api(ns.cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pools-only' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pools-only' },
      subjects: [{ kind: 'ServiceAccount', name: 'pools-only', namespace: ns.name }],
    });
    const token = (await api(ns.cp, 'POST', `${base}/serviceaccounts/pools-only/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    })) as { status: { token: string } };
    const kubeconfig = join(ns.dir, 'pools-only.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { token: token.status.token }), { mode: 0o600 });
    let report: Report | undefined;
    // The RBAC authorizer reads through an informer: wait until the new binding is seen.
    for (let i = 0; i < 50; i++) {
      const run = hb(undefined, ['check', '--kubeconfig', kubeconfig, '-o', 'json']);
      if (run.code === 1 && run.stdout !== '') {
        report = JSON.parse(run.stdout) as Report;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(report?.problems[report.problems.length - 1]?.kind, 'pods-not-listed', JSON.stringify(report));
  });
});
