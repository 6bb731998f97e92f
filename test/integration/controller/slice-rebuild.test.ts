// The slice IPPools are the truth about which space is in use (DESIGN §9). A NodeSlicePool that disappears (deleted
// by hand, by a GitOps sync, or by garbage collection) is rebuilt by a running `hereabouts controller` from the
// network's slice pools: every node keeps the slice its pool is in, and no node is given a slice whose pool holds
// another node's pod. The NodeSlicePool no longer lives and dies with the NADs: it carries no owner reference to
// them (ones an earlier version wrote are removed), and the controller deletes it itself only once no NAD asks for
// its network and every slice pool of the network is empty.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { contains, parseCidr } from '../../../src/ip/cidr.ts';
import { NodeSlices } from '../../../src/controller/slices/node-slices.ts';
import { EventRecorder } from '../../../src/controller/runtime/events.ts';
import { nadView } from '../../../src/controller/runtime/views.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import {
  allocation,
  bin,
  createNad,
  createPod,
  createPool,
  deletePod,
  eventually,
  GROUP,
  startController,
  writePool,
  type Running,
  slicePasses,
} from './harness.ts';

interface Entry {
  nodeName: string;
  sliceRange: string;
}

describe('a NodeSlicePool that disappears', () => {
  let ns: Namespace;
  let controller: Running;
  const nodes: string[] = [];
  const identity = () => `rebuild-${ns.name}`;
  const node = async (suffix: string) => {
    const name = `${ns.name}-${suffix}`;
    await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    nodes.push(name);
    return name;
  };
  const nsp = async (network: string) => ns.get('nodeslicepools', network);
  const uidOf = (object: Record<string, unknown> | undefined) =>
    (object?.['metadata'] as { uid?: string } | undefined)?.uid;
  const entries = async (network: string): Promise<Entry[]> =>
    ((await nsp(network))?.['status'] as { allocations?: Entry[] } | undefined)?.allocations ?? [];
  const sliceOf = async (network: string, name: string) =>
    (await entries(network)).find((e) => e.nodeName === name)?.sliceRange;

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'rebuild');
    controller = startController(
      ns,
      '--identity',
      identity(),
      '--retry-period',
      '300ms',
      '--reconcile-interval',
      '2s',
      '--reservation-grace',
      '0s',
      '--slice-drain-grace',
      '0s',
    );
    await controller.waitForLine((l) => l.msg.startsWith('leading:'), 15_000);
  });
  after(async () => {
    await controller.stop();
    for (const name of nodes) await apiRequest(ns.cp, 'DELETE', `/api/v1/nodes/${name}`);
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`);
    await ns.cleanup();
  });

  test("is rebuilt from the slice pools: no node is given a slice whose pool holds another node's pod", async () => {
    const network = `${ns.name}-rb`;
    const ipam = {
      type: 'hereabouts',
      range: '10.91.0.0/24',
      node_slice_size: '/28',
      network_name: network,
      enable_overlapping_ranges: false,
    };
    // b joins first and gets a slice; a (which sorts first) gets a later one. Nodes are cluster-wide: another suite's
    // node may take a slice in between, so which slices is not fixed, only their order.
    const b = await node('b');
    await createNad(ns, 'rbnet', ipam);
    assert.ok(await eventually(async () => (await sliceOf(network, b)) !== undefined, 10_000), controller.log());
    const a = await node('a');
    assert.ok(await eventually(async () => (await sliceOf(network, a)) !== undefined, 10_000), controller.log());
    const [sliceB, sliceA] = [(await sliceOf(network, b))!, (await sliceOf(network, a))!];
    assert.ok(parseCidr(sliceB).address < parseCidr(sliceA).address, `b has ${sliceB}, a has ${sliceA}`);
    for (const slice of [sliceB, sliceA]) assert.match(slice, /^10\.91\.0\.\d+\/28$/);

    const conf = {
      cniVersion: '1.0.0',
      name: 'rbnet',
      type: 'macvlan',
      ipam: { ...ipam, kubernetes: { kubeconfig: ns.kubeconfig } },
    };
    const add = async (on: string, pod: string) => {
      await createPod(ns, pod, { phase: 'Running', node: on });
      const out = await runCni(
        bin,
        {
          command: 'ADD',
          containerId: `ctr-${pod}`,
          netns: '/x',
          ifname: 'net1',
          path: '/x',
          args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=${pod}`,
        },
        { ...conf, ipam: { ...conf.ipam, cache_dir: join(ns.dir, `cache-${on}`) } },
        { extraEnv: { NODENAME: on } },
      );
      assert.equal(out.code, 0, out.stdout + out.stderr);
      return (out.json?.['ips'] as Array<{ address: string }>)[0]!.address.split('/')[0]!;
    };
    const onB = await add(b, 'pod-b');
    const onA = await add(a, 'pod-a');
    assert.ok(contains(parseCidr(sliceB), parseIP(onB)) && contains(parseCidr(sliceA), parseIP(onA)));

    const before = await nsp(network);
    await api(ns.cp, 'DELETE', ns.path('nodeslicepools', network));
    assert.ok(
      await eventually(async () => {
        const now = await nsp(network);
        return now !== undefined && uidOf(now) !== uidOf(before) && (await entries(network)).length >= 2;
      }, 10_000),
      controller.log(),
    );
    // The next pod on a: from a's own slice, never the address b's live pod holds.
    const next = await add(a, 'pod-a2');
    assert.notEqual(next, onB, `a's new pod got ${next}, which b's live pod holds`);
    assert.equal(await sliceOf(network, b), sliceB, 'b keeps the slice its pool is in');
    assert.equal(await sliceOf(network, a), sliceA, 'a keeps the slice its pool is in');
    assert.ok(contains(parseCidr(sliceA), parseIP(next)));
  });

  test('has no owner reference to the NADs, and outlives its last NAD until every slice pool of the network is empty', async () => {
    const network = `${ns.name}-own`;
    const ipam = { type: 'hereabouts', range: '10.92.0.0/24', node_slice_size: '/28', network_name: network };
    const c = await node('c');
    const nad = await createNad(ns, 'ownnet', ipam);
    // As an earlier version wrote it: owned by the NAD, so the garbage collector would delete it with the NAD.
    await ns.create('nodeslicepools', {
      apiVersion: GROUP,
      kind: 'NodeSlicePool',
      metadata: {
        name: network,
        ownerReferences: [
          { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', name: 'ownnet', uid: nad.uid },
        ],
      },
      spec: { range: '10.92.0.0/24', sliceSize: '/28' },
      status: { allocations: [] },
    });
    assert.ok(await eventually(async () => (await sliceOf(network, c)) !== undefined, 10_000), controller.log());
    const owners = async () =>
      ((await nsp(network))?.['metadata'] as { ownerReferences?: Array<{ kind: string }> } | undefined)
        ?.ownerReferences ?? [];
    assert.ok(
      await eventually(async () => (await owners()).every((o) => o.kind !== 'NetworkAttachmentDefinition'), 10_000),
      `the NAD still owns the NodeSlicePool: ${JSON.stringify(await owners())}\n${controller.log()}`,
    );
    const slice = (await sliceOf(network, c))!;
    const uid = await createPod(ns, 'on-c', { phase: 'Running', node: c });
    const poolName = `${network}-${c}-${slice.replace('/', '-')}`;
    await writePool(ns, poolName, slice, { '1': allocation(ns, 'on-c', uid) });
    await api(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions/ownnet`);
    await slicePasses(controller, 2);
    assert.equal(await sliceOf(network, c), slice, 'a pod of the network still holds an address in the slice');
    await deletePod(ns, 'on-c'); // its allocation goes (orphan cleanup), then the NodeSlicePool
    assert.ok(await eventually(async () => (await nsp(network)) === undefined, 15_000), controller.log());
  });
});

// The same decisions in process against the real API server, with caches that have not seen the pools: a
// NodeSlicePool written anew is decided on the IPPools as the API has them, and a slice's pool exists before the
// NodeSlicePool write that hands the slice out.
describe('a NodeSlicePool written anew', () => {
  let ns: Namespace;
  let client: ApiClient;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'rbfresh');
    client = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
  });
  after(async () => {
    client.close();
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await ns.cleanup();
  });

  test('is decided on the IPPools as the API has them, and creates a slice pool before it hands the slice out', async () => {
    const network = `${ns.name}-fresh`;
    await createNad(ns, 'freshnet', {
      type: 'hereabouts',
      range: '10.93.0.0/24',
      node_slice_size: '/28',
      network_name: network,
    });
    const nadObject = await api(
      ns.cp,
      'GET',
      `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions/freshnet`,
    );
    // Node x held the first slice of a NodeSlicePool that is gone; its pod still holds .1. The caches below have
    // not seen that pool (a watch that lags).
    await createPool(ns, `${network}-x-10.93.0.0-28`, '10.93.0.0/28', { '1': allocation(ns, 'on-x') });
    const requests: string[] = [];
    const send = client.send.bind(client);
    client.send = async (req, options) => {
      if (req.method !== 'GET') requests.push(`${req.method} ${req.path.replace(/^.*\/namespaces\/[^/]+\//, '')}`);
      return send(req, options);
    };
    const log = jsonLog({ level: 'error' });
    await new NodeSlices(client, { drainGraceMs: 0 }).reconcile({
      nads: new Map([[`${ns.name}/freshnet`, nadView(nadObject)!]]),
      nodes: new Map([['y', { uid: 'uid-y' }]]),
      nodeSlicePools: new Map(),
      pools: new Map(),
      leading: () => true,
      log,
      events: new EventRecorder(client, { identity: 'rbfresh', log }),
    });
    const status = (await ns.get('nodeslicepools', network))?.['status'] as {
      allocations: Entry[];
      draining?: Array<Entry & { reason: string }>;
    };
    assert.deepEqual(status.allocations, [
      { nodeName: 'x', sliceRange: '10.93.0.0/28' },
      { nodeName: 'y', sliceRange: '10.93.0.16/28' },
    ]);
    assert.deepEqual(status.draining, [{ nodeName: 'x', sliceRange: '10.93.0.0/28', reason: 'NodeLeft' }]);
    const pool = `ippools/${network}-y-10.93.0.16-28`;
    assert.ok((await ns.get('ippools', `${network}-y-10.93.0.16-28`)) !== undefined, 'the slice pool of y exists');
    const created = requests.indexOf('POST ippools');
    const written = requests.findIndex(
      (r) => r.startsWith('POST nodeslicepools') || r.startsWith('PUT nodeslicepools'),
    );
    assert.ok(created >= 0 && created < written, `${pool} is created before the NodeSlicePool: ${requests.join(', ')}`);
  });
});
