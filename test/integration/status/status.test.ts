// `hereabouts status` (the packaged executable) against pools, slices and pods in a real API server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

function status(ns: Namespace, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(bin, ['status', '--kubeconfig', ns.kubeconfig, ...args], { encoding: 'utf8', env: {}, timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('hereabouts status', () => {
  let ns: Namespace;
  let liveUid = '';
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'st');
    const pod = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'alive' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    })) as { metadata: { uid: string } };
    liveUid = pod.metadata.uid;
    const alloc = (id: string, pod: string, podUid?: string) => ({ id, podref: `${ns.name}/${pod}`, ifname: 'net1', ...(podUid === undefined ? {} : { podUid }) });
    await ns.create('ippools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: '10.30.0.0-24' },
      spec: { range: '10.30.0.0/24', allocations: { '1': alloc('c1', 'alive', liveUid), '2': alloc('c2', 'gone'), '3': alloc('c3', 'alive', 'old-uid') } },
    });
    await ns.create('ippools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'net1-node-a-10.40.0.0-26' },
      spec: { range: '10.40.0.0/26', allocations: {} },
    });
    await ns.create('ippools', { apiVersion: 'whereabouts.cni.cncf.io/v1alpha1', kind: 'IPPool', metadata: { name: 'fd00---64' }, spec: { range: 'fd00::/64', allocations: {} } });
    await ns.create('nodeslicepools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'NodeSlicePool',
      metadata: { name: 'net1' },
      spec: { range: '10.40.0.0/24', sliceSize: '/26' },
      status: { allocations: [{ nodeName: 'node-a', sliceRange: '10.40.0.0/26' }, { nodeName: '', sliceRange: '10.40.0.64/26' }] },
    });
  });
  after(async () => {
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/alive?gracePeriodSeconds=0`);
    await ns.cleanup();
  });

  test('-o json lists every pool with capacity, used, free and orphans (gone pod, re-created pod)', () => {
    const out = status(ns, '-o', 'json');
    assert.equal(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout) as { namespace: string; pools: Array<Record<string, unknown>>; slices: Array<Record<string, unknown>> };
    assert.equal(report.namespace, ns.name);
    const byName = new Map(report.pools.map((p) => [p['name'], p]));
    assert.deepEqual(byName.get('10.30.0.0-24'), { name: '10.30.0.0-24', range: '10.30.0.0/24', capacity: '254', used: 3, free: '251', orphans: 2, problems: [] });
    assert.equal(byName.get('fd00---64')?.['capacity'], '18446744073709551614');
    assert.equal(byName.get('net1-node-a-10.40.0.0-26')?.['node'], 'node-a');
    assert.deepEqual(report.slices, [{ network: 'net1', range: '10.40.0.0/24', sliceSize: '/26', assigned: 1, free: 1 }]);
  });

  test('the table shows one aligned row per pool and the node slices', () => {
    const out = status(ns);
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.split('\n');
    assert.match(lines[0] ?? '', new RegExp(`namespace ${ns.name}: 3 pool\\(s\\)`));
    assert.match(lines[1] ?? '', /^POOL\s+RANGE\s+CAPACITY\s+USED\s+FREE\s+ORPHANS\s+NODE$/);
    const row = lines.find((l) => l.startsWith('10.30.0.0-24'));
    assert.match(row ?? '', /^10\.30\.0\.0-24\s+10\.30\.0\.0\/24\s+254\s+3\s+251\s+2\s+-$/);
    assert.equal(lines[1]?.indexOf('RANGE'), row?.indexOf('10.30.0.0/24'), 'columns are aligned');
    assert.ok(lines.includes('node slices:'));
  });

  test('an unknown output format is refused with exit 2', () => {
    const out = status(ns, '-o', 'yaml');
    assert.equal(out.code, 2);
    assert.match(out.stderr, /-o "yaml" must be table or json/);
  });
});
