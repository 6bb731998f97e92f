// Sticky addresses (docs/sticky.md) against the real API server: the packaged plugin binds a StatefulSet replica's
// and a KubeVirt VM's address to its identity (read from the pod's owner), DEL keeps it, a re-created replica or a
// migration target gets it back, an ordinary pod or another set never does; the packaged controller releases a
// binding only once its set was scaled below the ordinal or deleted, or its VM is gone, after --sticky-grace.
// KubeVirt is not installed here: its two kinds are served from minimal CRDs, so that a VirtualMachine can exist.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { kubevirtKinds } from '../../support/kubevirt.ts';
import { startAgentProcess } from '../../support/agent.ts';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cniConf, poolView } from '../kubernetes/harness.ts';
import { bin, createNad, eventually, events, runOnce, sleep, startController } from './harness.ts';

type Obj = Record<string, unknown>;
const POOL = 'sticky-10.77.0.0-24';
const VM_GROUP = 'kubevirt.io';

describe('sticky addresses: StatefulSet replicas and KubeVirt VMs keep their address', () => {
  let ns: Namespace;
  let conf: Obj;
  const sets = new Map<string, string>(); // name -> uid

  const createSet = async (name: string, replicas: number, annotations: Obj = {}): Promise<void> => {
    const created = (await api(ns.cp, 'POST', `/apis/apps/v1/namespaces/${ns.name}/statefulsets`, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, annotations },
      spec: {
        replicas,
        serviceName: name,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: 'c', image: 'busybox' }] },
        },
      },
    })) as { metadata: { uid: string } };
    sets.set(name, created.metadata.uid);
  };
  const scale = (name: string, replicas: number): Promise<unknown> =>
    api(
      ns.cp,
      'PATCH',
      `/apis/apps/v1/namespaces/${ns.name}/statefulsets/${name}`,
      { spec: { replicas } },
      'application/merge-patch+json',
    );
  /** A pod as a controller would create it: `owner` is [apiVersion, kind, name, uid]. */
  const createPod = async (
    name: string,
    owner?: readonly [string, string, string, string],
    labels: Obj = {},
    node?: string,
  ) => {
    const created = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        labels,
        ...(owner === undefined
          ? {}
          : {
              ownerReferences: [
                { apiVersion: owner[0], kind: owner[1], name: owner[2], uid: owner[3], controller: true },
              ],
            }),
      },
      spec: { containers: [{ name: 'c', image: 'busybox' }], ...(node === undefined ? {} : { nodeName: node }) },
    })) as { metadata: { uid: string } };
    return created.metadata.uid;
  };
  const replica = (set: string, ordinal: number, node?: string): Promise<string> =>
    createPod(
      `${set}-${ordinal}`,
      ['apps/v1', 'StatefulSet', set, sets.get(set) ?? ''],
      { 'apps.kubernetes.io/pod-index': String(ordinal) },
      node,
    );
  const deletePod = async (name: string): Promise<void> => {
    await apiRequest(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/${name}`, { gracePeriodSeconds: 0 });
    const gone = await eventually(
      async () => (await apiRequest(ns.cp, 'GET', `/api/v1/namespaces/${ns.name}/pods/${name}`)).status === 404,
      10_000,
    );
    assert.ok(gone, `pod ${name} deleted`);
  };
  /**
   * A VirtualMachineInstance as KubeVirt would run it; its uid is what a virt-launcher pod's controller reference
   * names (the node reads the VMI and compares uids before it binds: docs/sticky.md).
   */
  const createVmi = async (name: string): Promise<readonly [string, string, string, string]> => {
    const created = (await api(ns.cp, 'POST', `/apis/${VM_GROUP}/v1/namespaces/${ns.name}/virtualmachineinstances`, {
      apiVersion: `${VM_GROUP}/v1`,
      kind: 'VirtualMachineInstance',
      metadata: { name },
      spec: {},
    })) as { metadata: { uid: string } };
    return [`${VM_GROUP}/v1`, 'VirtualMachineInstance', name, created.metadata.uid];
  };
  const deleteVmi = async (name: string): Promise<void> => {
    const path = `/apis/${VM_GROUP}/v1/namespaces/${ns.name}/virtualmachineinstances/${name}`;
    await apiRequest(ns.cp, 'DELETE', path);
    const gone = await eventually(async () => (await apiRequest(ns.cp, 'GET', path)).status === 404, 10_000);
    assert.ok(gone, `VirtualMachineInstance ${name} deleted`);
  };
  let agentSocket: string | undefined;
  const cni = (command: 'ADD' | 'DEL', container: string, pod: string, uid: string, extra = ''): Promise<CniOutcome> =>
    runCni(
      bin,
      {
        command,
        containerId: container,
        netns: '/var/run/netns/none',
        ifname: 'net1',
        path: '/opt/cni/bin',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=${pod};K8S_POD_UID=${uid}${extra}`,
      },
      conf,
      {
        extraEnv: {
          NODENAME: 'sticky-node',
          ...(agentSocket === undefined ? {} : { HEREABOUTS_AGENT_SOCKET: agentSocket }),
        },
      },
    );
  const added = async (container: string, pod: string, uid: string): Promise<string> => {
    const out = await cni('ADD', container, pod, uid);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const ips = out.json?.['ips'] as Array<{ address: string }>;
    return ips[0]!.address.split('/')[0]!;
  };
  const recordAt = async (ip: string): Promise<Obj | undefined> => (await poolView(ns, POOL))?.allocations.get(ip);

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'sticky');
    await kubevirtKinds(ns.cp);
    const base = cniConf(ns, 'sticky-node', { name: 'sticky', range: '10.77.0.0/24', networkName: 'sticky' });
    conf = { ...base, ipam: { ...(base['ipam'] as Obj), sticky: true } };
    await createSet('web', 2);
    await createSet('db', 1);
  });
  after(async () => {
    await ns.cleanup();
  });

  test('a re-created replica gets its address back on any container; DEL keeps it; an ordinary pod and another set never get it', async () => {
    const uid1 = await replica('web', 0);
    const a = await added('c-web0-1', 'web-0', uid1);
    assert.equal((await recordAt(a))?.['binding'], 'StatefulSet/web/0');
    const del = await cni('DEL', 'c-web0-1', 'web-0', uid1);
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal((await recordAt(a))?.['binding'], 'StatefulSet/web/0', 'DEL keeps a bound record');

    // Another set's replica never takes it, not even when it asks for it.
    const dbUid = await replica('db', 0);
    const asked = await cni('ADD', 'c-db0', 'db-0', dbUid, `;IP=${a}`);
    assert.notEqual(asked.code, 0, 'a requested bound address is refused');
    assert.match(asked.stdout, /taken|allocated|held/i);
    const b = await added('c-db0', 'db-0', dbUid);
    assert.notEqual(b, a);

    // The replica is re-created (a new pod of the same name, a new uid): same address, the record is its own now.
    await deletePod('web-0');
    const uid2 = await replica('web', 0);
    assert.equal(await added('c-web0-2', 'web-0', uid2), a);
    const record = await recordAt(a);
    assert.equal(record?.['id'], 'c-web0-2');
    assert.equal(record['podUid'], uid2);

    // A bare pod that takes the replica's name is no replica: an ordinary address, released by its DEL.
    await deletePod('web-0');
    const bareUid = await createPod('web-0');
    const c = await added('c-bare', 'web-0', bareUid);
    assert.notEqual(c, a);
    assert.equal((await recordAt(c))?.['binding'], undefined);
    assert.equal((await cni('DEL', 'c-bare', 'web-0', bareUid)).code, 0);
    assert.equal(await recordAt(c), undefined);
    assert.equal((await recordAt(a))?.['binding'], 'StatefulSet/web/0');
    await deletePod('web-0');
  });

  test('an ADD for a pod the API server does not show (or shows with another uid) answers code 11 and writes nothing', async () => {
    const before = (await poolView(ns, POOL))?.resourceVersion;
    const out = await cni('ADD', 'c-ghost', 'web-1', '00000000-0000-0000-0000-000000000000');
    assert.equal(out.code, 1);
    assert.equal(out.json?.['code'], 11, out.stdout);
    assert.match(String(out.json['msg']), /pod .*web-1.* is not known to the API server/);
    assert.equal((await poolView(ns, POOL))?.resourceVersion, before);
  });

  test("a live migration's two virt-launcher pods share the VM's one record; the source's DEL keeps it", async () => {
    const vmi = await createVmi('vm1');
    const source = await createPod('virt-launcher-vm1-aaaaa', vmi);
    const a = await added('c-src', 'virt-launcher-vm1-aaaaa', source);
    const target = await createPod('virt-launcher-vm1-bbbbb', vmi);
    assert.equal(await added('c-dst', 'virt-launcher-vm1-bbbbb', target), a);
    const pool = await poolView(ns, POOL);
    const held = [...(pool?.allocations.values() ?? [])].filter((r) => r['binding'] === 'VirtualMachine/vm1');
    assert.equal(held.length, 1, 'one record for the VM');
    assert.equal(held[0]?.['id'], 'c-dst');
    assert.equal((await cni('DEL', 'c-src', 'virt-launcher-vm1-aaaaa', source)).code, 0);
    assert.equal((await recordAt(a))?.['binding'], 'VirtualMachine/vm1');
    await deletePod('virt-launcher-vm1-aaaaa');
    await deletePod('virt-launcher-vm1-bbbbb');
    await deleteVmi('vm1');
  });

  test('the controller releases a binding scaled away or whose VM is gone, and keeps one in range or whose VM exists', async () => {
    // web/1 in range now; vm2 has neither VirtualMachine nor VirtualMachineInstance; vm3's VirtualMachine exists.
    // Each VM's pod binds only under a live VMI (the node checks its uid), which then stops, as a VM's does.
    const web1 = await added('c-web1', 'web-1', await replica('web', 1));
    await deletePod('web-1');
    const vm2 = await added(
      'c-vm2',
      'virt-launcher-vm2-x',
      await createPod('virt-launcher-vm2-x', await createVmi('vm2')),
    );
    const vm3 = await added(
      'c-vm3',
      'virt-launcher-vm3-x',
      await createPod('virt-launcher-vm3-x', await createVmi('vm3')),
    );
    assert.equal((await recordAt(vm2))?.['binding'], 'VirtualMachine/vm2');
    assert.equal((await recordAt(vm3))?.['binding'], 'VirtualMachine/vm3');
    await deletePod('virt-launcher-vm2-x');
    await deletePod('virt-launcher-vm3-x');
    await deleteVmi('vm2');
    await deleteVmi('vm3');
    await api(ns.cp, 'POST', `/apis/${VM_GROUP}/v1/namespaces/${ns.name}/virtualmachines`, {
      apiVersion: `${VM_GROUP}/v1`,
      kind: 'VirtualMachine',
      metadata: { name: 'vm3' },
      spec: {},
    });
    const web0 = [...((await poolView(ns, POOL))?.allocations ?? [])].find(
      ([, r]) => r['binding'] === 'StatefulSet/web/0',
    )?.[0];
    assert.ok(web0 !== undefined);

    const first = runOnce(ns, '--sticky', ns.name, '--sticky-grace', '0s');
    assert.equal(first.code, 0, first.stderr.slice(-2000));
    assert.ok(await recordAt(web1), 'web-1: ordinal 1 < 2 replicas, kept');
    assert.ok(await recordAt(web0), 'web-0 kept');
    assert.ok(await recordAt(vm3), 'vm3: its VirtualMachine exists, kept');
    assert.equal(await recordAt(vm2), undefined, 'vm2: no VirtualMachine, no instance: released');
    assert.ok(
      first.lines.some((l) => /released .* of .*virt-launcher-vm2-x.*vm-gone/.test(l.msg)),
      first.stderr.slice(-2000),
    );

    // Scaled to one replica: ordinal 1 goes, after the grace (not before it), ordinal 0 stays.
    const controller = startController(ns, '--sticky', ns.name, '--sticky-grace', '3s', '--reconcile-interval', '1h');
    try {
      await controller.waitForLine((l) => /pass done/.test(l.msg), 30_000);
      await scale('web', 1);
      const scaledAt = Date.now();
      await sleep(1500);
      assert.ok(await recordAt(web1), 'still held inside the grace');
      const released = await eventually(async () => (await recordAt(web1)) === undefined, 20_000);
      assert.ok(released, controller.log().slice(-3000));
      assert.ok(Date.now() - scaledAt >= 3000, 'not before the grace');
      // Its log line may reach the pipe after the write is visible.
      await controller.waitForLine((l) => /released .*web-1.*scaled-down/.test(l.msg), 10_000);
      assert.ok(await recordAt(web0), 'ordinal 0 is within the one replica: kept');
      assert.ok(await recordAt(vm3));
    } finally {
      await controller.stop();
    }
  });

  test('with node slices, the sticky area: a replica re-created on another node gets its address back; ordinary pods stay in their slices', async () => {
    const nodes = [`${ns.name}-a`, `${ns.name}-b`];
    for (const name of nodes)
      await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    const ipam = {
      type: 'hereabouts',
      range: '10.78.0.0/24',
      node_slice_size: '/28',
      network_name: `${ns.name}-sl`,
      sticky: true,
    };
    await createNad(ns, 'sliced', ipam);
    const controller = startController(ns, '--sticky', ns.name, '--sticky-grace', '1h');
    try {
      const slicesOf = async (): Promise<Map<string, string>> => {
        const object = await ns.get('nodeslicepools', `${ns.name}-sl`);
        const allocations = ((object?.['status'] as Obj | undefined)?.['allocations'] ?? []) as Array<{
          nodeName: string;
          sliceRange: string;
        }>;
        return new Map(allocations.filter((a) => a.nodeName !== '').map((a) => [a.nodeName, a.sliceRange]));
      };
      const sliced = await eventually(async () => {
        const slices = await slicesOf();
        return [...nodes, 'hereabouts-sticky'].every((n) => slices.has(n));
      }, 30_000);
      assert.ok(sliced, `slices: ${JSON.stringify([...(await slicesOf())])}\n${controller.log().slice(-2000)}`);
      const slices = await slicesOf();
      const base = cniConf(ns, nodes[0]!, {
        name: 'sliced',
        range: '10.78.0.0/24',
        networkName: `${ns.name}-sl`,
        nodeSliceSize: '/28',
      });
      const on = (node: string): Obj => ({
        ...base,
        ipam: { ...(base['ipam'] as Obj), sticky: true, cache_dir: `${ns.dir}/nodes/${node}` },
      });
      const addOn = async (node: string, container: string, pod: string, uid: string): Promise<string> => {
        const out = await runCni(
          bin,
          {
            command: 'ADD',
            containerId: container,
            netns: '/var/run/netns/none',
            ifname: 'net1',
            path: '/opt/cni/bin',
            args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=${pod};K8S_POD_UID=${uid}`,
          },
          on(node),
          { extraEnv: { NODENAME: node } },
        );
        assert.equal(out.code, 0, out.stdout + out.stderr);
        return (out.json?.['ips'] as Array<{ address: string }>)[0]!.address;
      };
      const area = slices.get('hereabouts-sticky')!;
      const inSlice = (address: string, slice: string): boolean => {
        const [net] = slice.split('/');
        const last = (ip: string): number => Number(ip.split('.')[3]);
        return last(address) >= last(net!) && last(address) < last(net!) + 16;
      };
      await createSet('sliced', 1);
      const first = await addOn(nodes[0]!, 'c-sl-1', 'sliced-0', await replica('sliced', 0));
      assert.match(first, /\/24$/, "the whole range's mask, as any node-slice answer");
      assert.ok(inSlice(first.split('/')[0]!, area), `${first} lies in the sticky area ${area}`);
      await deletePod('sliced-0');
      const again = await addOn(nodes[1]!, 'c-sl-2', 'sliced-0', await replica('sliced', 0));
      assert.equal(again, first, 'the same address on the other node');
      // CHECK finds the sticky address in the sticky area, not in the node's slice.
      const check = await runCni(
        bin,
        {
          command: 'CHECK',
          containerId: 'c-sl-2',
          netns: '/var/run/netns/none',
          ifname: 'net1',
          path: '/opt/cni/bin',
          args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=sliced-0`,
        },
        { ...on(nodes[1]!), prevResult: { cniVersion: '1.1.0', ips: [{ address: first }] } },
        { extraEnv: { NODENAME: nodes[1]! } },
      );
      assert.equal(check.code, 0, check.stdout + check.stderr);
      const plain = await addOn(nodes[1]!, 'c-plain', 'plain', await createPod('plain'));
      assert.ok(inSlice(plain.split('/')[0]!, slices.get(nodes[1]!)!), `${plain} lies in ${nodes[1]}'s slice`);
      await deletePod('sliced-0');
      await deletePod('plain');
    } finally {
      await controller.stop();
      for (const name of nodes) await apiRequest(ns.cp, 'DELETE', `/api/v1/nodes/${name}`);
    }
  });

  test("through the node agent, a sticky ADD learns its pod's owner from the watch of the node's pods, without a read", async () => {
    const socket = join(ns.dir, 'agent', 'agent.sock');
    mkdirSync(dirname(socket), { recursive: true });
    const agent = await startAgentProcess(bin, socket);
    agentSocket = socket;
    try {
      await createSet('agent', 2);
      const uid = await replica('agent', 0, 'sticky-node');
      const a = await added('c-ag-1', 'agent-0', uid);
      assert.equal((await recordAt(a))?.['binding'], 'StatefulSet/agent/0');
      assert.equal((await cni('DEL', 'c-ag-1', 'agent-0', uid)).code, 0);
      await deletePod('agent-0');
      const uid2 = await replica('agent', 0, 'sticky-node');
      assert.equal(await added('c-ag-2', 'agent-0', uid2), a, 'the re-created replica, through the agent');
      const stats = async (): Promise<Obj> => {
        const before = agent.log().length;
        agent.child.kill('SIGUSR1');
        let line: string | undefined;
        await eventually(
          () => (line = /pod watch stats (\{.*\})/.exec(agent.log().slice(before))?.[1]) !== undefined,
          5_000,
        );
        return JSON.parse(line ?? 'null') as Obj;
      };
      const watched = await stats();
      assert.equal(watched['read'], 0, JSON.stringify(watched));
      assert.equal(Number(watched['watched']) + Number(watched['waited']), 2, JSON.stringify(watched));
      // A pod the watch cannot show (not bound to this node): after the wait, one read.
      const away = await replica('agent', 1);
      assert.ok(await added('c-ag-3', 'agent-1', away));
      assert.equal((await stats())['read'], 1);
      await deletePod('agent-0');
      await deletePod('agent-1');
    } finally {
      agentSocket = undefined;
      agent.kill('SIGTERM');
      await agent.exited;
    }
  });

  test("a StatefulSet's declared addresses are pre-bound to its ordinals in range, taken by its replicas; one it cannot have is refused with an Event", async () => {
    const ipam = { ...(conf['ipam'] as Obj) };
    await createNad(ns, 'sticky-nad', ipam);
    const list = JSON.stringify({ 'sticky-nad': ['10.77.0.200', '10.77.0.201', '10.77.0.202'] });
    await createSet('listed', 2, { 'hereabouts.cni.cncf.io/sticky-addresses': list });
    const first = runOnce(ns, '--sticky', ns.name, '--sticky-grace', '1h');
    assert.equal(first.code, 0, first.stderr.slice(-2000));
    assert.deepEqual(
      [(await recordAt('10.77.0.200'))?.['binding'], (await recordAt('10.77.0.201'))?.['binding']],
      ['StatefulSet/listed/0', 'StatefulSet/listed/1'],
      first.stderr.slice(-2000),
    );
    assert.equal((await recordAt('10.77.0.200'))?.['id'], 'hereabouts-sticky:prebound');
    assert.equal(await recordAt('10.77.0.202'), undefined, 'ordinal 2 is beyond the two replicas');
    // The replica takes its declared address (over any free lower one), and the record becomes its own.
    assert.equal(await added('c-listed-1', 'listed-1', await replica('listed', 1)), '10.77.0.201');
    assert.equal((await recordAt('10.77.0.201'))?.['id'], 'c-listed-1');
    // Another set that declares a taken address, and one outside the network, gets nothing but Events.
    const clash = JSON.stringify({ 'sticky-nad': ['10.77.0.200', '10.99.0.1'] });
    await createSet('clash', 2, { 'hereabouts.cni.cncf.io/sticky-addresses': clash });
    const second = runOnce(ns, '--sticky', ns.name, '--sticky-grace', '1h');
    assert.equal(second.code, 0, second.stderr.slice(-2000));
    assert.equal((await recordAt('10.77.0.200'))?.['binding'], 'StatefulSet/listed/0');
    const refused = (await events(ns)).filter(
      (e) => e.reason === 'StickyAddressRefused' && e.involvedObject.name === 'clash',
    );
    const messages = refused.map((e) => e.message).join('\n');
    assert.match(messages, /10\.77\.0\.200 for ordinal 0 on .*sticky-nad: held by StatefulSet\/listed\/0/);
    assert.match(messages, /10\.99\.0\.1 for ordinal 1 is in no range of .*sticky-nad/);
    await deletePod('listed-1');
  });
});
