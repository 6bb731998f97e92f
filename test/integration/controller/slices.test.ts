// Node slices by a running `hereabouts controller`: NodeSlicePools made from NADs with node_slice_size, a slice
// for each node that joins (IPv4 and IPv6), freed when it leaves and its pool holds no live allocation; NADs that
// disagree and networks without a free slice reported by events and conditions. Nodes are cluster-wide: every
// case counts on the nodes it created, never on how many others exist.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { contains, parseCidr } from '../../../src/ip/cidr.ts';
import { NodeSlices } from '../../../src/controller/slices/node-slices.ts';
import { EventRecorder } from '../../../src/controller/runtime/events.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { nadView, nodeSlicePoolView } from '../../../src/controller/runtime/views.ts';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import {
  allocation,
  bin,
  GROUP,
  createNad,
  createPod,
  createPool,
  deletePod,
  eventually,
  events,
  offsets,
  startController,
  writePool,
  type Running,
  slicePasses,
} from './harness.ts';

const inside = (address: string, cidr: string): boolean => contains(parseCidr(cidr), parseIP(address));

interface Entry {
  nodeName: string;
  sliceRange: string;
}

describe('controller node slices', () => {
  let ns: Namespace;
  let controller: Running;
  const nodes: string[] = [];
  // Controllers of other suites see these NADs too (NADs are read cluster-wide): count only this one's events.
  const identity = () => `slices-${ns.name}`;
  const ours = async () => (await events(ns)).filter((e) => e.reportingInstance === identity());
  const node = async (suffix: string) => {
    const name = `${ns.name}-${suffix}`;
    await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    nodes.push(name);
    return name;
  };
  const pool = async (network: string) => ns.get('nodeslicepools', network);
  const entries = async (network: string): Promise<Entry[]> =>
    ((await pool(network))?.['status'] as { allocations?: Entry[] } | undefined)?.allocations ?? [];
  const sliceOf = async (network: string, name: string) =>
    (await entries(network)).find((e) => e.nodeName === name)?.sliceRange;
  const updateNad = async (name: string, ipamConf: Record<string, unknown>) => {
    const path = `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions/${name}`;
    const current = (await api(ns.cp, 'GET', path)) as { spec: { config: string } };
    const config = JSON.parse(current.spec.config) as Record<string, unknown>;
    await api(ns.cp, 'PUT', path, { ...current, spec: { config: JSON.stringify({ ...config, ipam: ipamConf }) } });
  };
  const condition = async (network: string, type: string) =>
    (
      (
        (await pool(network))?.['status'] as
          { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } | undefined
      )?.conditions ?? []
    ).find((c) => c.type === type);

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'slc');
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

  test('a node that joins gets its own slice, and the plugin on that node allocates from it', async () => {
    const network = `${ns.name}-v4`;
    const ipam = { type: 'hereabouts', range: '10.85.0.0/16', node_slice_size: '/24', network_name: network };
    const a = await node('a');
    await createNad(ns, 'slicenet', ipam);
    assert.ok(await eventually(async () => (await sliceOf(network, a)) !== undefined, 10_000), controller.log());
    assert.deepEqual((await pool(network))?.['spec'], { range: '10.85.0.0/16', sliceSize: '/24' });
    const owners = (
      (await pool(network))?.['metadata'] as { ownerReferences?: Array<{ kind: string; name: string; uid: string }> }
    ).ownerReferences;
    assert.deepEqual(
      (owners ?? []).map((o) => [o.kind, o.name, o.uid]),
      [],
      'not owned by its NADs: the garbage collector would delete it with them while its slices hold addresses',
    );
    const b = await node('b');
    assert.ok(await eventually(async () => (await sliceOf(network, b)) !== undefined, 10_000), controller.log());
    const sliceB = await sliceOf(network, b);
    assert.notEqual(await sliceOf(network, a), sliceB);
    assert.ok(
      await eventually(
        async () => (await ours()).some((e) => e.reason === 'SliceAssigned' && e.message === `assigned ${b} ${sliceB}`),
        5000,
      ),
    );

    const slice = (await sliceOf(network, a))!;
    const conf = {
      cniVersion: '1.0.0',
      name: 'slicenet',
      type: 'macvlan',
      ipam: { ...ipam, kubernetes: { kubeconfig: ns.kubeconfig }, cache_dir: join(ns.dir, 'cache') },
    };
    const add = await runCni(
      bin,
      {
        command: 'ADD',
        containerId: 's1',
        netns: '/x',
        ifname: 'net1',
        path: '/x',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p`,
      },
      conf,
      { extraEnv: { NODENAME: a } },
    );
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const address = (add.json?.['ips'] as Array<{ address: string }>)[0]!.address;
    assert.equal(
      address,
      `${slice.split('/')[0]!.replace(/\.0$/, '.1')}/16`,
      'first address of the slice, with the whole range mask',
    );
  });

  test('IPv6 ranges are sliced too (a /48 into /64s, never listed out whole)', async () => {
    const network = `${ns.name}-v6`;
    const c = await node('c');
    await createNad(ns, 'slicenet6', {
      type: 'hereabouts',
      range: 'fd00:85::/48',
      node_slice_size: '64',
      network_name: network,
    });
    assert.ok(await eventually(async () => (await sliceOf(network, c)) !== undefined, 10_000), controller.log());
    assert.match((await sliceOf(network, c))!, /^fd00:85:0:[0-9a-f]+::\/64$/);
  });

  test("a departed node's slice is kept while its pool holds a live allocation, and freed once it does not", async () => {
    const network = `${ns.name}-leave`;
    const d = await node('d');
    await createNad(ns, 'leavenet', {
      type: 'hereabouts',
      range: '10.86.0.0/16',
      node_slice_size: '/24',
      network_name: network,
    });
    assert.ok(await eventually(async () => (await sliceOf(network, d)) !== undefined, 10_000), controller.log());
    const slice = (await sliceOf(network, d))!;
    const uid = await createPod(ns, 'on-d', { phase: 'Running' });
    await writePool(ns, `${network}-${d}-${slice.replace('/', '-')}`, slice, { '1': allocation(ns, 'on-d', uid) });
    await api(ns.cp, 'DELETE', `/api/v1/nodes/${d}`);
    // The controller saw the node leave, and passes came after that in which it could have freed the slice.
    await controller.waitForLine(
      (l) => l.msg.startsWith(`slice ${slice} of node ${d} in ${network} drains (NodeLeft)`),
      10_000,
    );
    await slicePasses(controller, 2);
    assert.equal(await sliceOf(network, d), slice, 'a live pod still uses the slice');
    await deletePod(ns, 'on-d'); // its allocation goes (orphan cleanup), then the slice
    assert.ok(await eventually(async () => (await sliceOf(network, d)) === undefined, 10_000), controller.log());
    assert.ok(
      (await entries(network)).some((e) => e.nodeName === '' && e.sliceRange === slice),
      'the slice is free, not forgotten',
    );
    // The event is posted right after the NodeSlicePool is written: it may not be there yet when the write is.
    const freed = async () =>
      (await ours()).some((e) => e.reason === 'SliceFreed' && e.message.startsWith(`freed ${d} ${slice}`));
    assert.ok(await eventually(freed, 10_000), controller.log());
  });

  test("a tenant's NAD that disagrees with the network's oldest NAD is ignored and named (event on it, condition); new nodes still get slices", async () => {
    const network = `${ns.name}-odd`;
    const e = await node('e');
    await createNad(ns, 'oddnet', {
      type: 'hereabouts',
      range: '10.87.0.0/16',
      node_slice_size: '/24',
      network_name: network,
    });
    assert.ok(await eventually(async () => (await sliceOf(network, e)) !== undefined, 10_000), controller.log());
    const tenant = await createNamespace(ns.cp, 'tenant');
    try {
      await createNad(
        ns,
        'oddnet-2',
        { type: 'hereabouts', range: '10.87.0.0/16', node_slice_size: '/26', network_name: network },
        tenant.name,
      );
      const offender = `${tenant.name}/oddnet-2`;
      assert.ok(
        await eventually(async () => (await condition(network, 'ConfigConflict'))?.status === 'True', 10_000),
        controller.log(),
      );
      // A node that joins now still gets its slice, cut as the oldest NAD says.
      const f = await node('f');
      assert.ok(
        await eventually(async () => (await sliceOf(network, f)) !== undefined, 10_000),
        `node ${f} got no slice while ${offender} disagrees\n${controller.log()}`,
      );
      assert.match((await sliceOf(network, f))!, /^10\.87\.\d+\.0\/24$/);
      assert.deepEqual((await pool(network))?.['spec'], { range: '10.87.0.0/16', sliceSize: '/24' });
      assert.match(
        (await condition(network, 'ConfigConflict'))!.message,
        new RegExp(
          `NetworkAttachmentDefinition ${offender} slices 10\\.87\\.0\\.0/16 by /26 but network ${network} follows ` +
            `${ns.name}/oddnet, its oldest NetworkAttachmentDefinition: 10\\.87\\.0\\.0/16 by /24; ${offender} is ignored`,
        ),
      );
      // The offender gets the warning, on its own NAD; the NAD the network follows gets none.
      const onOffender = async () =>
        (await events(ns, tenant.name)).filter(
          (ev) =>
            ev.reportingInstance === identity() &&
            ev.reason === 'NetworkConflict' &&
            ev.type === 'Warning' &&
            ev.involvedObject.kind === 'NetworkAttachmentDefinition' &&
            ev.involvedObject.name === 'oddnet-2',
        );
      assert.ok(await eventually(async () => (await onOffender()).length > 0, 10_000), controller.log());
      assert.match((await onOffender())[0]!.message, new RegExp(`${offender} is ignored`));
      assert.deepEqual(
        (await ours()).filter(
          (ev) => ev.reason === 'NetworkConflict' && ev.involvedObject.kind === 'NetworkAttachmentDefinition',
        ),
        [],
        'no warning on the NAD the network follows',
      );
      await slicePasses(controller, 2);
      const count = async () => (await onOffender()).reduce((n, ev) => n + (ev.count ?? 1), 0);
      const warnings = await count();
      await slicePasses(controller, 2);
      assert.equal(await count(), warnings, 'no new event in later passes');
      assert.equal(controller.lines().filter((l) => l.msg.includes(`${offender} is ignored`)).length, 1, 'logged once');
      await api(
        ns.cp,
        'DELETE',
        `/apis/k8s.cni.cncf.io/v1/namespaces/${tenant.name}/network-attachment-definitions/oddnet-2`,
      );
      assert.ok(
        await eventually(async () => (await condition(network, 'ConfigConflict'))?.status === 'False', 10_000),
        controller.log(),
      );
    } finally {
      await apiRequest(
        ns.cp,
        'DELETE',
        `/apis/k8s.cni.cncf.io/v1/namespaces/${tenant.name}/network-attachment-definitions`,
      );
      await tenant.cleanup();
    }
  });

  test('a reslice while a pod holds an address in an old slice: no new slice covers it, and DEL releases it there', async () => {
    const network = `${ns.name}-reslice`;
    const j = await node('j');
    await node('k');
    const ipam = { type: 'hereabouts', range: '10.120.0.0/16', node_slice_size: '/28', network_name: network };
    await createNad(ns, 'reslicenet', ipam);
    assert.ok(await eventually(async () => (await sliceOf(network, j)) !== undefined, 10_000), controller.log());
    const old = (await sliceOf(network, j))!;
    const conf = (size: string) => ({
      cniVersion: '1.0.0',
      name: 'reslicenet',
      type: 'macvlan',
      ipam: {
        ...ipam,
        node_slice_size: size,
        kubernetes: { kubeconfig: ns.kubeconfig },
        cache_dir: join(ns.dir, 'cache-j'),
      },
    });
    const env = {
      command: 'ADD',
      containerId: 'r1',
      netns: '/x',
      ifname: 'net1',
      path: '/x',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=r`,
    };
    const add = await runCni(bin, env, conf('/28'), { extraEnv: { NODENAME: j } });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const held = (add.json?.['ips'] as Array<{ address: string }>)[0]!.address.split('/')[0]!;
    assert.ok(inside(held, old));

    await updateNad('reslicenet', { ...ipam, node_slice_size: '/24' });
    assert.ok(
      await eventually(
        async () =>
          (await pool(network))?.['spec'] !== undefined &&
          ((await pool(network))!['spec'] as { sliceSize: string }).sliceSize === '/24' &&
          (await sliceOf(network, j)) !== undefined,
        10_000,
      ),
      controller.log(),
    );
    type Status = { allocations: Entry[]; draining?: Array<Entry & { reason: string }> };
    // The other nodes' old slices are empty: the passes that release them (and hand their space out) are done once
    // only j's old slice, which holds an address, is left draining.
    const drainingNow = async () =>
      (((await pool(network))!['status'] as Status).draining ?? []).map((d) => d.sliceRange);
    assert.ok(
      await eventually(async () => JSON.stringify(await drainingNow()) === JSON.stringify([old]), 10_000),
      `${JSON.stringify(await drainingNow())}\n${controller.log()}`,
    );
    const status = (await pool(network))!['status'] as Status;
    assert.deepEqual(
      status.allocations.filter((e) => e.nodeName !== '' && inside(held, e.sliceRange)),
      [],
      `no slice holding ${held} is assigned while it is in use`,
    );
    assert.deepEqual(
      status.draining?.filter((d) => d.sliceRange === old),
      [{ nodeName: j, sliceRange: old, reason: 'Resliced' }],
    );
    assert.ok((await ours()).some((e) => e.reason === 'Resliced'));

    const del = await runCni(bin, { ...env, command: 'DEL' }, conf('/24'), { extraEnv: { NODENAME: j } });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.deepEqual(
      await offsets(ns, `${network}-${j}-${old.replace('/', '-')}`),
      [],
      'DEL released the address in the old slice pool',
    );
    assert.ok(
      await eventually(
        async () => (((await pool(network))!['status'] as { draining?: Entry[] }).draining ?? []).length === 0,
        10_000,
      ),
      controller.log(),
    );
  });

  // docs/procedures.md, "Enabling node slices on a live network".
  test('node_slice_size added to a live network: slices cover the whole range, and the plugin skips the addresses its shared pool holds', async () => {
    const network = `${ns.name}-live`;
    const ipam = { type: 'hereabouts', range: '10.121.0.0/16', network_name: network };
    const l = await node('l');
    await createNad(ns, 'livenet', ipam);
    const conf = (extra: Record<string, unknown>) => ({
      cniVersion: '1.0.0',
      name: 'livenet',
      type: 'macvlan',
      ipam: { ...ipam, ...extra, kubernetes: { kubeconfig: ns.kubeconfig }, cache_dir: join(ns.dir, 'cache-l') },
    });
    const add = async (pod: string, extra: Record<string, unknown>): Promise<string> => {
      const env = {
        command: 'ADD',
        containerId: pod,
        netns: '/x',
        ifname: 'net1',
        path: '/x',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=${pod}`,
      };
      const out = await runCni(bin, env, conf(extra), { extraEnv: { NODENAME: l } });
      assert.equal(out.code, 0, out.stdout + out.stderr);
      return (out.json?.['ips'] as Array<{ address: string }>)[0]!.address.split('/')[0]!;
    };
    const shared = `${network}-10.121.0.0-16`;
    assert.equal(await add('live1', {}), '10.121.0.1');

    await updateNad('livenet', { ...ipam, node_slice_size: '/24' });
    assert.ok(await eventually(async () => (await sliceOf(network, l)) !== undefined, 10_000), controller.log());
    const slice = (await sliceOf(network, l))!;
    // The slicing goes by the slice pools only: the shared pool is no slice pool, and the node's slice may cover
    // addresses it holds. A NAD not yet changed takes one at the slice's start (as live1 may hold already).
    const first = slice.split('/')[0]!.replace(/\.0$/, '.1');
    await add('live2', { range_start: first });
    const held = (await offsets(ns, shared)).map((o) => `10.121.${Math.floor(Number(o) / 256)}.${Number(o) % 256}`);
    assert.ok(held.includes(first), `${held.join(', ')} holds ${first}`);

    const sliced = await add('live3', { node_slice_size: '/24' });
    assert.ok(inside(sliced, slice), `${sliced} in ${slice}`);
    // Without reservations it would be the slice's first address, which the shared pool holds.
    assert.ok(!held.includes(sliced), `${sliced} is not one of ${held.join(', ')}, which the shared pool holds`);
  });

  test('a network without a free slice for a node says so (event, condition)', async () => {
    const network = `${ns.name}-tiny`;
    for (const s of ['g', 'h', 'i']) await node(s);
    await createNad(ns, 'tinynet', {
      type: 'hereabouts',
      range: '10.88.0.0/30',
      node_slice_size: '/31',
      network_name: network,
    });
    assert.ok(
      await eventually(async () => (await condition(network, 'SlicesExhausted'))?.status === 'True', 10_000),
      controller.log(),
    );
    assert.equal((await entries(network)).filter((en) => en.nodeName !== '').length, 2);
    assert.match(
      (await condition(network, 'SlicesExhausted'))!.message,
      /^no free \/31 slice of 10\.88\.0\.0\/30 for node\(s\) /,
    );
    // The event is posted right after the condition is written: it may not be there yet when the condition is.
    const warned = async () =>
      (await ours()).some(
        (ev) => ev.reason === 'NoFreeSlice' && ev.type === 'Warning' && ev.involvedObject.name === network,
      );
    assert.ok(await eventually(warned, 10_000), controller.log());
  });
});

// The decision to free a slice, in process against the real API server, with caches that lag behind it: an
// IPPool written after the informers' snapshot must keep its slice.
describe('freeing a slice is confirmed against the API, not the caches', () => {
  let ns: Namespace;
  let client: ApiClient;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'slcfree');
    client = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
  });
  after(async () => {
    client.close();
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`);
    await ns.cleanup();
  });

  test("a departed node's slice stays while its pool holds an address the pool cache has not seen", async () => {
    const network = `${ns.name}-late`;
    const slice = '10.90.0.0/28';
    const poolName = `${network}-gone-node-${slice.replace('/', '-')}`;
    await createNad(ns, 'latenet', {
      type: 'hereabouts',
      range: '10.90.0.0/24',
      node_slice_size: '/28',
      network_name: network,
    });
    const nadObject = await api(
      ns.cp,
      'GET',
      `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions/latenet`,
    );
    await ns.create('nodeslicepools', {
      apiVersion: GROUP,
      kind: 'NodeSlicePool',
      metadata: { name: network },
      spec: { range: '10.90.0.0/24', sliceSize: '/28' },
      status: { allocations: [{ nodeName: 'gone-node', sliceRange: slice }] },
    });
    // Written after the caches' snapshot (which has no such pool): a pod of the departed node still holds .1.
    const uid = await createPod(ns, 'late', { phase: 'Running' });
    await createPool(ns, poolName, slice, { '1': allocation(ns, 'late', uid) });
    const slices = new NodeSlices(client, { drainGraceMs: 0 });
    const log = jsonLog({ level: 'error' });
    const recorder = new EventRecorder(client, { identity: 'slcfree', log });
    const pass = async () => {
      const nsp = nodeSlicePoolView(await ns.get('nodeslicepools', network));
      await slices.reconcile({
        nads: new Map([[`${ns.name}/latenet`, nadView(nadObject)!]]),
        nodes: new Map(),
        nodeSlicePools: new Map([[`${ns.name}/${network}`, nsp]]),
        pools: new Map(),
        leading: () => true,
        log,
        events: recorder,
      });
    };
    const entries = async () =>
      (await ns.get('nodeslicepools', network))!['status'] as { allocations: Entry[]; draining?: Entry[] };
    await pass(); // marks the slice draining
    await pass(); // would free it, were the caches believed
    assert.deepEqual((await entries()).allocations, [{ nodeName: 'gone-node', sliceRange: slice }]);
    assert.deepEqual((await entries()).draining, [{ nodeName: 'gone-node', sliceRange: slice, reason: 'NodeLeft' }]);
    // Once the pool is empty in the API, the next pass frees the slice.
    const current = (await ns.get('ippools', poolName))!;
    await api(ns.cp, 'PUT', ns.path('ippools', poolName), { ...current, spec: { range: slice, allocations: {} } });
    await pass();
    assert.deepEqual(await entries(), {
      allocations: [{ nodeName: '', sliceRange: slice }],
      draining: [],
      ...conditionsOf(await entries()),
    });
  });
});

function conditionsOf(status: object): object {
  return 'conditions' in status ? { conditions: status.conditions } : {};
}
