// `hereabouts status` (the packaged executable) against pools, slices and pods in a real API server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function status(args: readonly string[], env: Record<string, string> = {}): Run {
  const run = spawnSync(bin, ['status', ...args], { encoding: 'utf8', env, timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Report {
  namespace: string;
  pools: Array<Record<string, unknown>>;
  slices: Array<Record<string, unknown>>;
  warnings: string[];
}

function json(run: Run): Report {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Report;
}

const pool = (name: string, range: string, allocations: Record<string, unknown> = {}) => ({
  apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name },
  spec: { range, allocations },
});

describe('hereabouts status', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'st');
    const live = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'alive' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    })) as { metadata: { uid: string } };
    // Running (a young Pending pod is never judged, as by the controller).
    const running = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'c',
          image: 'busybox',
          imageID: '',
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
        },
      ],
    };
    await api(
      ns.cp,
      'PATCH',
      `/api/v1/namespaces/${ns.name}/pods/alive/status`,
      { status: running },
      'application/merge-patch+json',
    );
    const alloc = (id: string, pod: string, podUid?: string) => ({
      id,
      podref: `${ns.name}/${pod}`,
      ifname: 'net1',
      ...(podUid === undefined ? {} : { podUid }),
    });
    // .1 held by the live pod, .2 by a deleted pod, .3 by an earlier pod of the same name (another UID).
    await ns.create(
      'ippools',
      pool('10.30.0.0-24', '10.30.0.0/24', {
        '1': alloc('c1', 'alive', live.metadata.uid),
        '2': alloc('c2', 'gone'),
        '3': alloc('c3', 'alive', 'old-uid'),
      }),
    );
    await ns.create(
      'ippools',
      pool('fd00---64', 'fd00::/64', { '1': alloc('c4', 'alive'), '18446744073709551614': alloc('c5', 'gone') }),
    );
    // Node slices of network "net1" (no network_name: unprefixed pool names) and of "blue" (network_name "blue").
    await ns.create('ippools', pool('node-a-10.40.0.0-26', '10.40.0.0/26'));
    await ns.create('ippools', pool('blue-node-b-10.50.0.64-26', '10.50.0.64/26'));
    for (const [network, range, slices] of [
      [
        'net1',
        '10.40.0.0/24',
        [
          { nodeName: 'node-a', sliceRange: '10.40.0.0/26' },
          { nodeName: '', sliceRange: '10.40.0.64/26' },
        ],
      ],
      [
        'blue',
        '10.50.0.0/24',
        [
          { nodeName: '', sliceRange: '10.50.0.0/26' },
          { nodeName: 'node-b', sliceRange: '10.50.0.64/26' },
        ],
      ],
    ] as const) {
      await ns.create('nodeslicepools', {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'NodeSlicePool',
        metadata: { name: network },
        spec: { range, sliceSize: '/26' },
        status: { allocations: slices },
      });
    }
  });
  after(async () => {
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/alive?gracePeriodSeconds=0`);
    await ns.cleanup();
  });

  test('-o json counts capacity, used, free and orphans (a deleted pod, a re-created pod)', () => {
    const report = json(status(['--kubeconfig', ns.kubeconfig, '-o', 'json']));
    assert.equal(report.namespace, ns.name);
    assert.deepEqual(
      report.pools.find((p) => p['name'] === '10.30.0.0-24'),
      {
        name: '10.30.0.0-24',
        range: '10.30.0.0/24',
        capacity: 254,
        used: 3,
        warm: 0,
        claims: 0,
        prefixes: 0,
        sticky: 0,
        free: 251,
        orphans: 2,
        problems: [],
      },
    );
    assert.deepEqual(report.warnings, []);
  });

  test('an IPv6 /64 reports counts beyond 2^53 as exact decimal strings', () => {
    const report = json(status(['--kubeconfig', ns.kubeconfig, '-o', 'json']));
    const v6 = report.pools.find((p) => p['name'] === 'fd00---64');
    assert.equal(v6?.['capacity'], '18446744073709551614');
    assert.equal(v6['free'], '18446744073709551612');
    assert.equal(v6['used'], 2);
    assert.equal(v6['orphans'], 1, 'a pod without a recorded UID is matched by name');
  });

  test('node-slice pools name their node, with and without a network_name prefix', () => {
    const report = json(status(['--kubeconfig', ns.kubeconfig, '-o', 'json']));
    const nodeOf = (name: string): unknown => report.pools.find((p) => p['name'] === name)?.['node'];
    assert.equal(nodeOf('node-a-10.40.0.0-26'), 'node-a');
    assert.equal(nodeOf('blue-node-b-10.50.0.64-26'), 'node-b');
    assert.equal(nodeOf('10.30.0.0-24'), undefined);
    assert.deepEqual(report.slices, [
      {
        network: 'blue',
        range: '10.50.0.0/24',
        sliceSize: '/26',
        assigned: 1,
        free: 1,
        nodes: [{ nodeName: 'node-b', sliceRange: '10.50.0.64/26' }],
      },
      {
        network: 'net1',
        range: '10.40.0.0/24',
        sliceSize: '/26',
        assigned: 1,
        free: 1,
        nodes: [{ nodeName: 'node-a', sliceRange: '10.40.0.0/26' }],
      },
    ]);
  });

  test('the table shows one aligned row per pool, then the node slices', () => {
    const run = status(['--kubeconfig', ns.kubeconfig]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines[0], `namespace ${ns.name}: 4 pool(s)`);
    assert.match(
      lines[1] ?? '',
      /^POOL\s+RANGE\s+CAPACITY\s+USED\s+WARM\s+CLAIMS\s+PREFIXES\s+STICKY\s+FREE\s+ORPHANS\s+NODE$/,
    );
    const row = lines.find((l) => l.startsWith('10.30.0.0-24 '));
    assert.match(row ?? '', /^10\.30\.0\.0-24\s+10\.30\.0\.0\/24\s+254\s+3\s+0\s+0\s+0\s+0\s+251\s+2\s+-$/);
    const header = lines[1] ?? '';
    for (const [column, cell] of [
      ['RANGE', '10.30.0.0/24'],
      ['CAPACITY', '254'],
      ['ORPHANS', '2'],
    ] as const) {
      assert.equal(row?.indexOf(cell, header.indexOf(column)), header.indexOf(column), `${column} is aligned`);
    }
    assert.match(lines.find((l) => l.startsWith('node-a-')) ?? '', /\snode-a$/);
    const sliceHeader = lines.indexOf('node slices:');
    assert.ok(sliceHeader > 0);
    assert.match(lines[sliceHeader + 1] ?? '', /^NETWORK\s+RANGE\s+SLICE\s+ASSIGNED\s+FREE$/);
  });

  test('without --kubeconfig, the first file of $KUBECONFIG is used', () => {
    const report = json(status(['-o', 'json'], { KUBECONFIG: `${ns.kubeconfig}:/nonexistent` }));
    assert.equal(report.namespace, ns.name);
    assert.equal(report.pools.length, 4);
  });

  test('--namespace overrides the context namespace; an empty one says where it looked', () => {
    const run = status(['--kubeconfig', ns.kubeconfig, '--namespace', 'default']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^namespace default: 0 pool\(s\)/);
    assert.match(run.stdout, /warning: no IPPools in namespace default .*try --namespace/);
  });

  test('a user who may not list pods sees the pools with orphans unknown', async () => {
    const base = `/api/v1/namespaces/${ns.name}`;
    await api(ns.cp, 'POST', `${base}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'viewer' },
    });
    await api(ns.cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pool-viewer' },
      rules: [{ apiGroups: ['whereabouts.cni.cncf.io'], resources: ['ippools', 'nodeslicepools'], verbs: ['list'] }],
    });
    await api(ns.cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pool-viewer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pool-viewer' },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: ns.name }],
    });
    const token = (await api(ns.cp, 'POST', `${base}/serviceaccounts/viewer/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    })) as { status: { token: string } };
    const kubeconfig = join(ns.dir, 'viewer.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { token: token.status.token }), { mode: 0o600 });

    const report = json(status(['--kubeconfig', kubeconfig, '-o', 'json']));
    assert.equal(report.pools.length, 4);
    assert.ok(report.pools.every((p) => p['orphans'] === null));
    assert.deepEqual(report.warnings, ['pods could not be listed: orphans are not counted']);
    const table = status(['--kubeconfig', kubeconfig]);
    assert.match(table.stdout.split('\n').find((l) => l.startsWith('10.30.0.0-24 ')) ?? '', /\s\?\s+-$/);
  });

  test('an unknown output format or flag is refused with exit 2', () => {
    const run = status(['--kubeconfig', ns.kubeconfig, '-o', 'yaml']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /-o "yaml" must be table or json/);
    const flag = status(['--kubeconfig', ns.kubeconfig, '--bogus']);
    assert.equal(flag.code, 2, flag.stderr);
    assert.equal(flag.stderr, 'hereabouts status: unknown flag --bogus (see hereabouts status --help)\n');
  });

  test('a kubeconfig that does not exist fails with exit 1 and names it by the flag, not a CNI key', () => {
    const run = status(['--kubeconfig', '/nonexistent/kubeconfig']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /--kubeconfig "\/nonexistent\/kubeconfig" does not exist/);
    assert.doesNotMatch(run.stderr, /kubernetes\.kubeconfig/);
  });
});
