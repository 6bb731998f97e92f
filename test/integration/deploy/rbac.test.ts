// deploy/'s RBAC applied for real (through a kustomize overlay that moves it into a test namespace, as an operator
// would), then checked both ways: each ServiceAccount may do what its workload does and nothing else (access
// reviews), and real tokens of those ServiceAccounts run the plugin and a controller pass against the API server.
// Last, deploy/sticky/ (the opt-in for sticky addresses, docs/sticky.md) is applied on top: only then may the node
// read pods, and a node token's ADD on a sticky network binds a StatefulSet replica's address.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { api, apiRequest, controlPlane, createCached, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { repoRoot, requireBinary } from '../../support/paths.ts';
import { allowed, describeAccess, kubectlOf, type Access } from './kubectl.ts';

const bin = requireBinary();
const WA = 'whereabouts.cni.cncf.io';
const NAD = 'k8s.cni.cncf.io';
const KUBEVIRT = 'kubevirt.io';

describe('deploy/ RBAC, applied for real', () => {
  let ns: Namespace;
  let kubectl: string;
  let overlay: string;
  const node = (): { namespace: string; name: string } => ({ namespace: ns.name, name: 'hereabouts-node' });
  const controller = (): { namespace: string; name: string } => ({ namespace: ns.name, name: 'hereabouts-controller' });
  const kube = (...args: string[]): string => execFileSync(kubectl, ['--kubeconfig', ns.cp.kubeconfig, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tokenOf = async (sa: string): Promise<string> => {
    const path = `/api/v1/namespaces/${ns.name}/serviceaccounts/${sa}/token`;
    const body = (await api(ns.cp, 'POST', path, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } })) as { status: { token: string } };
    return body.status.token;
  };
  const kubeconfigOf = async (sa: string): Promise<string> => {
    const file = join(ns.dir, `${sa}.kubeconfig`);
    writeFileSync(file, kubeconfigFor(ns.cp, ns.name, { token: await tokenOf(sa) }), { mode: 0o600 });
    return file;
  };
  const expectAccess = async (sa: { namespace: string; name: string }, list: readonly Access[], expected: boolean): Promise<void> => {
    const wrong: string[] = [];
    for (const access of list) if ((await allowed(ns.cp, sa, access)) !== expected) wrong.push(describeAccess(access));
    assert.deepEqual(wrong, [], `${sa.name} should ${expected ? '' : 'not '}be allowed to`);
  };
  // An ADD on a sticky network (docs/sticky.md) for the replica web-0 of a StatefulSet web, as a node token runs it
  // without a node agent: the plugin reads the pod once to learn its owner.
  let replicaUid = '';
  const stickyAdd = async (): Promise<Awaited<ReturnType<typeof runCni>>> => {
    const conf = { cniVersion: '1.1.0', name: 'rbac-sticky', type: 'macvlan', ipam: { type: 'hereabouts', range: '10.93.0.0/24', network_name: 'rbacsticky', sticky: true, kubernetes: { kubeconfig: await kubeconfigOf('hereabouts-node') }, cache_dir: join(ns.dir, 'cache') } };
    const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=web-0;K8S_POD_UID=${replicaUid}`;
    return runCni(bin, { command: 'ADD', containerId: 'rbac-web-0', netns: '/x', ifname: 'net1', path: '/x', args }, conf, { extraEnv: { NODENAME: 'rbac-node' } });
  };

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'rbac');
    kubectl = kubectlOf(ns.cp);
    overlay = join(ns.dir, 'overlay');
    mkdirSync(overlay);
    for (const file of ['rbac-node.yaml', 'rbac-controller.yaml']) copyFileSync(join(repoRoot, 'deploy', file), join(overlay, file));
    writeFileSync(join(overlay, 'kustomization.yaml'), `namespace: ${ns.name}\nresources: [rbac-node.yaml, rbac-controller.yaml]\n`);
    kube('apply', '-k', overlay);
    // The RBAC authorizer reads through an informer: wait until the new bindings are seen.
    for (let i = 0; i < 50 && !(await allowed(ns.cp, controller(), { verb: 'list', resource: 'pods' })); i++) await new Promise((r) => setTimeout(r, 100));
  });
  after(async () => {
    kube('delete', '-k', overlay, '--ignore-not-found');
    await ns.cleanup();
  });

  test('the node ServiceAccount may make exactly the plugin\'s calls on its own namespace', async () => {
    const n = ns.name;
    await expectAccess(node(), [
      ...['get', 'create', 'patch'].map((verb) => ({ verb, group: WA, resource: 'ippools', namespace: n })),
      ...['get', 'create', 'update', 'delete'].map((verb) => ({
        verb,
        group: WA,
        resource: 'overlappingrangeipreservations',
        namespace: n,
      })),
      { verb: 'get', group: WA, resource: 'nodeslicepools', namespace: n },
      ...['get', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', name: 'whereabouts', namespace: n })),
    ], true);
  });

  test('the node ServiceAccount may not list, watch, update or delete pools, nor touch anything else (no Lease but Whereabouts\' own)', async () => {
    const n = ns.name;
    await expectAccess(node(), [
      ...['list', 'watch', 'update', 'delete'].map((verb) => ({ verb, group: WA, resource: 'ippools', namespace: n })),
      { verb: 'list', group: WA, resource: 'overlappingrangeipreservations', namespace: n },
      ...['list', 'create', 'update'].map((verb) => ({ verb, group: WA, resource: 'nodeslicepools', namespace: n })),
      { verb: 'get', group: WA, resource: 'ippools', namespace: 'default' },
      // No pods, nor the owners they name, with deploy/ alone: sticky addresses need deploy/sticky/ (the last tests).
      ...['get', 'list', 'watch'].flatMap((verb) => [{ verb, resource: 'pods' }, { verb, resource: 'pods', namespace: n }]),
      { verb: 'get', group: 'apps', resource: 'statefulsets', namespace: n },
      { verb: 'get', group: KUBEVIRT, resource: 'virtualmachineinstances', namespace: n },
      { verb: 'get', resource: 'secrets', namespace: n },
      { verb: 'list', resource: 'nodes' },
      { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: n },
      { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', name: 'whereabouts', namespace: n },
      ...['hereabouts-controller', 'kube-scheduler'].flatMap((name) =>
        ['get', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', name, namespace: n })),
      ),
    ], false);
  });

  test('the controller ServiceAccount may watch pods, nodes, NADs, StatefulSets and KubeVirt VMs, own the pools, its Lease and Events', async () => {
    const n = ns.name;
    await expectAccess(controller(), [
      ...['get', 'list', 'watch'].flatMap((verb) => [{ verb, resource: 'pods' }, { verb, resource: 'nodes' }, { verb, group: NAD, resource: 'network-attachment-definitions' }]),
      // Sticky addresses: a binding holds while its StatefulSet keeps the ordinal, or its VM exists.
      ...['get', 'list', 'watch'].flatMap((verb) => [
        { verb, group: 'apps', resource: 'statefulsets' },
        { verb, group: KUBEVIRT, resource: 'virtualmachines' },
        { verb, group: KUBEVIRT, resource: 'virtualmachineinstances' },
        { verb, group: 'apps', resource: 'statefulsets', namespace: n },
      ]),
      { verb: 'create', resource: 'events', namespace: 'default' },
      { verb: 'create', group: 'events.k8s.io', resource: 'events', namespace: n },
      ...['list', 'watch', 'patch', 'delete'].map((verb) => ({ verb, group: WA, resource: 'ippools', namespace: n })),
      { verb: 'update', group: WA, resource: 'ippools', subresource: 'status', namespace: n },
      ...['list', 'delete'].map((verb) => ({ verb, group: WA, resource: 'overlappingrangeipreservations', namespace: n })),
      ...['list', 'create', 'update'].map((verb) => ({ verb, group: WA, resource: 'nodeslicepools', namespace: n })),
      { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: n },
      ...['get', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', name: 'hereabouts-controller', namespace: n })),
    ], true);
  });

  test('the controller ServiceAccount may not read secrets, change pods, nodes, NADs, StatefulSets or VMs, or take other Leases', async () => {
    const n = ns.name;
    await expectAccess(controller(), [
      { verb: 'get', resource: 'secrets', namespace: n },
      { verb: 'list', resource: 'secrets' },
      ...['create', 'update', 'patch', 'delete'].map((verb) => ({ verb, resource: 'pods', namespace: n })),
      ...['create', 'update', 'patch', 'delete'].flatMap((verb) => [
        { verb, group: 'apps', resource: 'statefulsets', namespace: n },
        { verb, group: 'apps', resource: 'statefulsets', subresource: 'scale', namespace: n },
        { verb, group: KUBEVIRT, resource: 'virtualmachines', namespace: n },
        { verb, group: KUBEVIRT, resource: 'virtualmachineinstances', namespace: n },
      ]),
      { verb: 'list', group: 'apps', resource: 'deployments' },
      { verb: 'patch', resource: 'nodes' },
      { verb: 'update', group: NAD, resource: 'network-attachment-definitions', namespace: n },
      ...['get', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', name: 'kube-scheduler', namespace: n })),
      { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', name: 'hereabouts-controller', namespace: n },
      { verb: 'list', group: WA, resource: 'ippools', namespace: 'default' },
    ], false);
  });

  test('a node token runs the plugin: node slice, a taken reservation skipped, its own adopted, STATUS, DEL; pods stay forbidden', async () => {
    const kubeconfig = await kubeconfigOf('hereabouts-node');
    await createCached(ns, 'nodeslicepools', {
      apiVersion: `${WA}/v1alpha1`,
      kind: 'NodeSlicePool',
      metadata: { name: 'rbacnet' },
      spec: { range: '10.89.0.0/24', sliceSize: '/28' },
      status: { allocations: [{ nodeName: 'other-node', sliceRange: '10.89.0.0/28' }, { nodeName: 'rbac-node', sliceRange: '10.89.0.16/28' }] },
    });
    await ns.create('overlappingrangeipreservations', {
      apiVersion: `${WA}/v1alpha1`,
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: 'rbacnet-10.89.0.17' },
      spec: { podref: 'elsewhere/pod', ifname: 'net1', containerid: 'c0' },
    });
    // What an earlier try of this very ADD left when its pool write's answer was lost: the retry adopts it (a PUT).
    await ns.create('overlappingrangeipreservations', {
      apiVersion: `${WA}/v1alpha1`,
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: 'rbacnet-10.89.0.18' },
      spec: { podref: `${ns.name}/r1`, ifname: 'net1', containerid: 'rbac-1' },
    });
    const conf = { cniVersion: '1.1.0', name: 'rbac', type: 'macvlan', ipam: { type: 'hereabouts', range: '10.89.0.0/24', network_name: 'rbacnet', node_slice_size: '/28', kubernetes: { kubeconfig }, cache_dir: join(ns.dir, 'cache') } };
    const call = { containerId: 'rbac-1', netns: '/x', ifname: 'net1', path: '/x', args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=r1` };
    const options = { extraEnv: { NODENAME: 'rbac-node' } };
    const add = await runCni(bin, { command: 'ADD', ...call }, conf, options);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.match(JSON.stringify(add.json?.['ips']), /"address":"10\.89\.0\.18\//);
    const status = await runCni(bin, { command: 'STATUS', path: '/x' }, conf, options);
    assert.equal(status.code, 0, status.stdout + status.stderr);
    const del = await runCni(bin, { command: 'DEL', ...call }, conf, options);
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(await ns.get('overlappingrangeipreservations', 'rbacnet-10.89.0.18'), undefined);
    const asNode = { ...ns.cp, token: await tokenOf('hereabouts-node') };
    assert.equal((await apiRequest(asNode, 'GET', '/api/v1/pods')).status, 403);
  });

  test('with deploy/ alone, a node token\'s ADD on a sticky network fails with code 11 naming the permission it lacks, and writes nothing', async () => {
    // A real StatefulSet web: the node binds its replica only once it has read the set under the uid web-0 names.
    const set = (await api(ns.cp, 'POST', `/apis/apps/v1/namespaces/${ns.name}/statefulsets`, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web' },
      spec: { replicas: 1, serviceName: 'web', selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
    })) as { metadata: { uid: string } };
    const created = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-0', labels: { 'apps.kubernetes.io/pod-index': '0' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: set.metadata.uid, controller: true }] },
      spec: { containers: [{ name: 'c', image: 'busybox' }], nodeName: 'rbac-node' },
    })) as { metadata: { uid: string } };
    replicaUid = created.metadata.uid;
    const add = await stickyAdd();
    assert.equal(add.code, 1, add.stdout + add.stderr);
    assert.equal(add.json?.['code'], 11, add.stdout);
    assert.match(String(add.json['msg']), /reading pod .*web-0.*403/, add.stdout);
    assert.match(String(add.json['details']), /get\/list\/watch on pods/, add.stdout);
    assert.equal(await ns.get('ippools', 'rbacsticky-10.93.0.0-24'), undefined);
  });

  test('a controller token runs a full pass: an orphaned allocation and its reservation are removed', async () => {
    const kubeconfig = await kubeconfigOf('hereabouts-controller');
    await ns.create('ippools', {
      apiVersion: `${WA}/v1alpha1`,
      kind: 'IPPool',
      metadata: { name: '10.91.0.0-24' },
      spec: { range: '10.91.0.0/24', allocations: { '5': { id: 'c5', podref: `${ns.name}/gone`, ifname: 'net1' } } },
    });
    await ns.create('overlappingrangeipreservations', {
      apiVersion: `${WA}/v1alpha1`,
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: '10.91.0.5' },
      spec: { podref: `${ns.name}/gone`, ifname: 'net1', containerid: 'c5' },
    });
    const run = spawnSync(bin, ['controller', '--once', '--kubeconfig', kubeconfig, '--namespace', ns.name, '--metrics-addr', '', '--health-addr', '', '--reservation-grace', '0s', '--claims', ns.name, '--sticky', ns.name], {
      encoding: 'utf8',
      env: {},
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr.slice(-2000));
    assert.doesNotMatch(run.stderr, /forbidden|403/i, 'every call of the pass (status writes, events, lease) was allowed');
    const pool = await ns.get('ippools', '10.91.0.0-24');
    assert.deepEqual((pool?.['spec'] as { allocations?: unknown }).allocations ?? {}, {});
    assert.equal(await ns.get('overlappingrangeipreservations', '10.91.0.5'), undefined);
  });

  describe('with deploy/sticky/ applied too (sticky addresses, opt-in)', () => {
    let sticky: string;
    before(async () => {
      // deploy/sticky/ as an operator lists it beside deploy/ in one overlay, so that kustomize moves the binding's
      // subject (hereabouts-node in kube-system) with the ServiceAccount.
      const source = join(ns.dir, 'deploy-sticky');
      mkdirSync(source);
      for (const file of readdirSync(join(repoRoot, 'deploy', 'sticky'))) copyFileSync(join(repoRoot, 'deploy', 'sticky', file), join(source, file));
      sticky = join(ns.dir, 'overlay-sticky');
      mkdirSync(sticky);
      writeFileSync(join(sticky, 'kustomization.yaml'), `namespace: ${ns.name}\nresources: [../overlay, ../deploy-sticky]\n`);
      kube('apply', '-k', sticky);
      for (let i = 0; i < 50 && !(await allowed(ns.cp, node(), { verb: 'watch', resource: 'pods' })); i++) await new Promise((r) => setTimeout(r, 100));
    });
    after(() => {
      kube('delete', 'clusterrolebinding/hereabouts-node-pods', 'clusterrole/hereabouts-node-pods', '--ignore-not-found');
    });

    test('the node ServiceAccount may get, list and watch pods, and get StatefulSets and VMIs, cluster-wide, and nothing more than before', async () => {
      const n = ns.name;
      await expectAccess(node(), ['get', 'list', 'watch'].flatMap((verb) => [{ verb, resource: 'pods' }, { verb, resource: 'pods', namespace: n }, { verb, resource: 'pods', namespace: 'default' }]), true);
      // The owner a pod names is read (get only) before it binds an address.
      await expectAccess(node(), [n, 'default'].flatMap((namespace) => [{ verb: 'get', group: 'apps', resource: 'statefulsets', namespace }, { verb: 'get', group: KUBEVIRT, resource: 'virtualmachineinstances', namespace }]), true);
      await expectAccess(node(), [
        ...['create', 'update', 'patch', 'delete'].map((verb) => ({ verb, resource: 'pods', namespace: n })),
        { verb: 'get', resource: 'pods', subresource: 'log', namespace: n },
        { verb: 'create', resource: 'pods', subresource: 'exec', namespace: n },
        { verb: 'get', resource: 'secrets', namespace: n },
        { verb: 'list', resource: 'nodes' },
        { verb: 'list', group: 'apps', resource: 'statefulsets' },
        ...['list', 'watch', 'update', 'patch', 'delete'].map((verb) => ({ verb, group: 'apps', resource: 'statefulsets', namespace: n })),
        { verb: 'get', group: 'apps', resource: 'statefulsets', subresource: 'scale', namespace: n },
        ...['list', 'watch', 'update', 'delete'].map((verb) => ({ verb, group: KUBEVIRT, resource: 'virtualmachineinstances', namespace: n })),
        { verb: 'get', group: KUBEVIRT, resource: 'virtualmachines', namespace: n },
        { verb: 'get', group: 'apps', resource: 'deployments', namespace: n },
        ...['list', 'watch', 'update', 'delete'].map((verb) => ({ verb, group: WA, resource: 'ippools', namespace: n })),
      ], false);
      const asNode = { ...ns.cp, token: await tokenOf('hereabouts-node') };
      assert.equal((await apiRequest(asNode, 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=rbac-node')}`)).status, 200);
    });

    test('a node token\'s ADD on a sticky network reads the pod and its StatefulSet, and binds the replica\'s address to StatefulSet/web/0', async () => {
      const add = await stickyAdd();
      assert.equal(add.code, 0, add.stdout + add.stderr);
      assert.match(JSON.stringify(add.json?.['ips']), /"address":"10\.93\.0\.1\//);
      const pool = await ns.get('ippools', 'rbacsticky-10.93.0.0-24');
      const record = (pool?.['spec'] as { allocations: Record<string, Record<string, unknown>> }).allocations['1'];
      assert.equal(record?.['binding'], 'StatefulSet/web/0');
      assert.equal(record['podref'], `${ns.name}/web-0`);
      await apiRequest(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/web-0`, { gracePeriodSeconds: 0 });
    });
  });
});
