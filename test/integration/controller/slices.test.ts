// Node-slice assignment by `hereabouts controller`, then the plugin allocating from the slice it was given.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

function controller(ns: Namespace): string {
  const run = spawnSync(bin, ['controller', '--kubeconfig', ns.kubeconfig, '--once', '--metrics-addr', '', '--health-addr', ''], { encoding: 'utf8', env: {}, timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  return run.stderr;
}

describe('controller node slices', () => {
  let ns: Namespace;
  let nodes: string[];
  const network = () => `slice-${ns.name}`;
  const nadConfig = (size: string) => JSON.stringify({ cniVersion: '1.0.0', name: 'slicenet', type: 'macvlan', ipam: { type: 'hereabouts', range: '10.77.0.0/16', node_slice_size: size, network_name: network() } });
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'slc');
    nodes = [`${ns.name}-a`, `${ns.name}-b`];
    for (const name of nodes) await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await api(ns.cp, 'POST', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`, {
      apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'slicenet' }, spec: { config: nadConfig('/24') },
    });
  });
  after(async () => {
    for (const name of nodes) await apiRequest(ns.cp, 'DELETE', `/api/v1/nodes/${name}`);
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await ns.cleanup();
  });

  const entries = async () => ((await ns.get('nodeslicepools', network()))?.['status'] as { allocations: Array<{ nodeName: string; sliceRange: string }> }).allocations;

  test('each node gets its own slice, and the plugin on that node allocates from it', async () => {
    controller(ns);
    const pool = await ns.get('nodeslicepools', network());
    assert.deepEqual(pool?.['spec'], { range: '10.77.0.0/16', sliceSize: '/24' });
    const mine = (await entries()).filter((e) => nodes.includes(e.nodeName));
    assert.equal(mine.length, 2);
    assert.notEqual(mine[0]!.sliceRange, mine[1]!.sliceRange);
    const slice = mine.find((e) => e.nodeName === nodes[0])!.sliceRange;
    const conf = { cniVersion: '1.0.0', name: 'slicenet', type: 'macvlan', ipam: { ...JSON.parse(nadConfig('/24')).ipam, kubernetes: { kubeconfig: ns.kubeconfig }, cache_dir: join(ns.dir, 'cache') } };
    const add = await runCni(bin, { command: 'ADD', containerId: 's1', netns: '/x', ifname: 'net1', path: '/x', args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p` }, conf, { extraEnv: { NODENAME: nodes[0]! } });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const address = (add.json?.['ips'] as Array<{ address: string }>)[0]!.address;
    assert.equal(address, `${slice.split('/')[0]!.replace(/\.0$/, '.1')}/16`, 'first address of the slice, with the whole range mask');
  });

  test("a departed node's empty slice is freed; NADs that disagree are reported and change nothing", async () => {
    await api(ns.cp, 'DELETE', `/api/v1/nodes/${nodes[1]}`);
    await api(ns.cp, 'POST', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`, {
      apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'slicenet-odd' }, spec: { config: nadConfig('/26') },
    });
    const log = controller(ns);
    assert.match(log, /slices 10\.77\.0\.0\/16 by \/24 but .* by \/26; not changed until they agree/);
    assert.ok((await entries()).some((e) => e.nodeName === nodes[1]), 'conflicting NADs: nothing changed');
    await api(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions/slicenet-odd`);
    controller(ns);
    const after = await entries();
    assert.ok(!after.some((e) => e.nodeName === nodes[1]), 'the departed node lost its slice');
    assert.ok(after.some((e) => e.nodeName === nodes[0]), 'the live node kept its slice');
  });
});
