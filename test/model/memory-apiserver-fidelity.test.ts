// The in-memory API server is only worth what it shares with the real one: the same request script runs against a
// real kube-apiserver (a fresh namespace) and against MemoryApiServer, and every answer must agree on what the
// write path and the controller read: status code, Status reason, generation, deletionTimestamp, and whether the
// resourceVersion moved.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ApiClient, type ApiRequest } from '../../src/kube/api.ts';
import { loadEndpoint } from '../../src/kube/kubeconfig.ts';
import { controlPlane, createNamespace, stopControlPlane, type ControlPlane } from '../support/control-plane.ts';
import { MemoryApiClient, MemoryApiServer } from '../support/memory-apiserver.ts';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const meta = (v: unknown): Obj => obj(obj(v)['metadata']);

interface Seen {
  readonly step: string;
  readonly status: number;
  readonly reason?: unknown;
  readonly generation?: unknown;
  readonly terminating?: boolean;
  /** 'new' | 'same' | 'older': the answer's resourceVersion against the last one seen of that object. */
  readonly rv?: string;
  readonly extra?: unknown;
}

async function script(api: ApiClient, node: string): Promise<Seen[]> {
  const ns = api.namespace;
  const wb = `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/${ns}`;
  const out: Seen[] = [];
  const rvs = new Map<string, string>();
  const uids = new Map<string, string>();
  const call = async (
    step: string,
    object: string,
    req: ApiRequest,
    extra?: (body: unknown) => unknown,
  ): Promise<unknown> => {
    const res = await api.send(req);
    const m = meta(res.body);
    const rv =
      typeof m['resourceVersion'] === 'string' && obj(res.body)['kind'] !== 'Status' ? m['resourceVersion'] : undefined;
    let moved: string | undefined;
    if (rv !== undefined && !String(obj(res.body)['kind']).endsWith('List')) {
      const before = rvs.get(object);
      moved = before === undefined ? 'first' : BigInt(rv) > BigInt(before) ? 'new' : rv === before ? 'same' : 'older';
      rvs.set(object, rv);
      if (typeof m['uid'] === 'string') uids.set(object, m['uid']);
    }
    const status = obj(res.body)['kind'] === 'Status';
    out.push({
      step,
      status: res.status,
      ...(status ? { reason: obj(res.body)['reason'] } : {}),
      ...(!status && m['generation'] !== undefined && !object.startsWith('pod') ? { generation: m['generation'] } : {}),
      ...(!status && rv !== undefined ? { terminating: m['deletionTimestamp'] !== undefined } : {}),
      ...(moved === undefined ? {} : { rv: moved }),
      ...(extra === undefined ? {} : { extra: extra(res.body) }),
    });
    return res.body;
  };
  const pool = (allocations: Obj) => ({
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: 'p1' },
    spec: { range: '10.0.0.0/24', allocations },
  });
  const merge = 'application/merge-patch+json';
  const entry = { id: 'c1', podref: `${ns}/a`, ifname: 'net1' };

  await call('create pool', 'p1', { method: 'POST', path: `${wb}/ippools`, body: pool({}) });
  await call('create it again', 'p1', { method: 'POST', path: `${wb}/ippools`, body: pool({}) });
  await call('create with a resourceVersion', 'p9', {
    method: 'POST',
    path: `${wb}/ippools`,
    body: { ...pool({}), metadata: { name: 'p9', resourceVersion: '5' } },
  });
  await call('get', 'p1', { method: 'GET', path: `${wb}/ippools/p1` });
  await call('get missing', 'x', { method: 'GET', path: `${wb}/ippools/nope` });
  const rv1 = rvs.get('p1')!;
  await call('conditional merge patch', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { metadata: { resourceVersion: rv1 }, spec: { allocations: { '1': entry } } },
  });
  await call('merge patch on a stale version', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { metadata: { resourceVersion: rv1 }, spec: { allocations: { '2': entry } } },
  });
  await call('merge patch that changes nothing', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { spec: { allocations: { '1': entry } } },
  });
  await call('unconditional merge patch', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { spec: { allocations: { '2': entry } } },
  });
  await call('merge patch removing a key', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { spec: { allocations: { '2': null } } },
  });
  await call('patch as plain JSON', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: 'application/json',
    body: { spec: {} },
  });
  const json = 'application/json-patch+json';
  const claim = (offset: string, annotations: string): unknown[] => [
    { op: 'test', path: '/spec/range', value: '10.0.0.0/24' },
    { op: 'test', path: annotations, value: null },
    { op: 'test', path: `/spec/allocations/${offset}`, value: null },
    { op: 'add', path: `/spec/allocations/${offset}`, value: entry },
  ];
  const jsonPatchOf = (body: unknown[]): ApiRequest => ({
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: json,
    body,
  });
  const offsets = (b: unknown): unknown => Object.keys(obj(obj(obj(b)['spec'])['allocations'])).sort();
  await call(
    'key-level claim of a free offset (no annotations)',
    'p1',
    jsonPatchOf(claim('5', '/metadata/annotations')),
    offsets,
  );
  await call('key-level claim of a taken offset', 'p1', jsonPatchOf(claim('5', '/metadata/annotations')));
  await call(
    'test of a member under a missing parent',
    'p1',
    jsonPatchOf(claim('6', '/metadata/annotations/hereabouts.cni.cncf.io~1retired')),
  );
  await call('annotate pool', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { metadata: { annotations: { other: 'x' } } },
  });
  await call('test of no annotations on an annotated pool', 'p1', jsonPatchOf(claim('6', '/metadata/annotations')));
  await call(
    'key-level claim (annotated, not retired)',
    'p1',
    jsonPatchOf(claim('6', '/metadata/annotations/hereabouts.cni.cncf.io~1retired')),
    offsets,
  );
  await call('retire pool', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1`,
    contentType: merge,
    body: { metadata: { annotations: { 'hereabouts.cni.cncf.io/retired': 'u/1', other: null } } },
  });
  await call(
    'key-level claim in a retired pool',
    'p1',
    jsonPatchOf(claim('7', '/metadata/annotations/hereabouts.cni.cncf.io~1retired')),
  );
  await call('test of another range', 'p1', jsonPatchOf([{ op: 'test', path: '/spec/range', value: '10.0.0.0/25' }]));
  await call(
    'JSON patch removing offsets',
    'p1',
    jsonPatchOf([
      { op: 'remove', path: '/spec/allocations/5' },
      { op: 'remove', path: '/spec/allocations/6' },
      { op: 'remove', path: '/metadata/annotations' },
    ]),
    offsets,
  );
  await call('JSON patch of a missing pool', 'x', {
    method: 'PATCH',
    path: `${wb}/ippools/nope`,
    contentType: json,
    body: claim('1', '/metadata/annotations'),
  });
  const current = (await call('get again', 'p1', { method: 'GET', path: `${wb}/ippools/p1` })) as Obj;
  await call('put on a stale version', 'p1', {
    method: 'PUT',
    path: `${wb}/ippools/p1`,
    body: { ...current, metadata: { ...meta(current), resourceVersion: rv1 } },
  });
  await call('put without a version', 'p1', {
    method: 'PUT',
    path: `${wb}/ippools/p1`,
    body: { ...current, metadata: { name: 'p1' } },
  });
  await call(
    'put',
    'p1',
    {
      method: 'PUT',
      path: `${wb}/ippools/p1`,
      body: { ...current, spec: { ...obj(current['spec']), allocations: {} } },
    },
    (b) => obj(obj(b)['spec'])['allocations'],
  );
  await call(
    'put with status (ignored)',
    'p1',
    {
      method: 'PUT',
      path: `${wb}/ippools/p1`,
      body: { ...current, metadata: { ...meta(current), resourceVersion: rvs.get('p1') }, status: { used: 7 } },
    },
    (b) => obj(b)['status'],
  );
  await call(
    'status patch',
    'p1',
    {
      method: 'PATCH',
      path: `${wb}/ippools/p1/status`,
      contentType: merge,
      body: { metadata: { resourceVersion: rvs.get('p1') }, status: { used: 3 } },
    },
    (b) => obj(b)['status'],
  );
  await call('status patch on a stale version', 'p1', {
    method: 'PATCH',
    path: `${wb}/ippools/p1/status`,
    contentType: merge,
    body: { metadata: { resourceVersion: rv1 }, status: { used: 4 } },
  });
  await call('put of a missing pool', 'x', {
    method: 'PUT',
    path: `${wb}/ippools/nope`,
    body: { ...pool({}), metadata: { name: 'nope', resourceVersion: '1' } },
  });
  await call('patch of a missing pool', 'x', {
    method: 'PATCH',
    path: `${wb}/ippools/nope`,
    contentType: merge,
    body: { spec: {} },
  });
  await call('create second pool', 'p2', {
    method: 'POST',
    path: `${wb}/ippools`,
    body: { ...pool({}), metadata: { name: 'p2' } },
  });
  const page = (await call(
    'list, one a page',
    'list',
    { method: 'GET', path: `${wb}/ippools?limit=1` },
    (b) => (obj(b)['items'] as unknown[]).length,
  )) as Obj;
  const token = (meta(page)['continue'] as string | undefined) ?? '';
  await call(
    'list, next page',
    'list',
    { method: 'GET', path: `${wb}/ippools?limit=1&continue=${encodeURIComponent(token)}` },
    (b) => [(obj(b)['items'] as unknown[]).length, meta(b)['continue'] ?? ''],
  );

  const orir = (name: string) => ({
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name },
    spec: { podref: `${ns}/a`, ifname: 'net1', containerid: 'c1' },
  });
  await call('create reservation', 'r1', {
    method: 'POST',
    path: `${wb}/overlappingrangeipreservations`,
    body: orir('10.0.0.1'),
  });
  const rRv = rvs.get('r1')!;
  await call('touch reservation', 'r1', {
    method: 'PATCH',
    path: `${wb}/overlappingrangeipreservations/10.0.0.1`,
    contentType: merge,
    body: { spec: { containerid: 'c2' } },
  });
  const del = (preconditions: Obj) => ({
    method: 'DELETE' as const,
    path: `${wb}/overlappingrangeipreservations/10.0.0.1`,
    body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions },
  });
  await call('delete, wrong uid', 'r1', del({ uid: '00000000-0000-0000-0000-000000000000' }));
  await call('delete, stale resourceVersion', 'r1', del({ uid: uids.get('r1'), resourceVersion: rRv }));
  await call('delete, right preconditions', 'r1', del({ uid: uids.get('r1'), resourceVersion: rvs.get('r1') }));
  await call('delete again', 'r1', del({}));

  const podPath = `/api/v1/namespaces/${ns}/pods`;
  await call('create node', 'node', {
    method: 'POST',
    path: '/api/v1/nodes',
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node } },
  });
  await call(
    'create pod',
    'pod',
    {
      method: 'POST',
      path: podPath,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'a' },
        spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] },
        status: { phase: 'Running' },
      },
    },
    (b) => obj(obj(b)['status'])['phase'],
  );
  await call(
    'pod status patch',
    'pod',
    {
      method: 'PATCH',
      path: `${podPath}/a/status`,
      contentType: merge,
      body: {
        status: {
          phase: 'Running',
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }],
        },
      },
    },
    (b) => obj(obj(b)['status'])['phase'],
  );
  await call('pod annotation patch', 'pod', {
    method: 'PATCH',
    path: `${podPath}/a`,
    contentType: merge,
    body: { metadata: { annotations: { x: 'y' } } },
  });
  await call('graceful pod delete', 'pod', { method: 'DELETE', path: `${podPath}/a` });
  await call('terminating pod', 'pod', { method: 'GET', path: `${podPath}/a` });
  await call('force pod delete', 'pod', { method: 'DELETE', path: `${podPath}/a?gracePeriodSeconds=0` });
  await call('deleted pod', 'pod', { method: 'GET', path: `${podPath}/a` });
  await call('delete node', 'node', { method: 'DELETE', path: `/api/v1/nodes/${node}` });

  const leases = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
  const lease = (await call('create lease', 'lease', {
    method: 'POST',
    path: leases,
    body: {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l' },
      spec: { holderIdentity: 'a' },
    },
  })) as Obj;
  await call('renew lease', 'lease', {
    method: 'PUT',
    path: `${leases}/l`,
    body: { ...lease, spec: { holderIdentity: 'a', leaseTransitions: 1 } },
  });
  await call('renew on a stale version', 'lease', {
    method: 'PUT',
    path: `${leases}/l`,
    body: { ...lease, spec: { holderIdentity: 'b' } },
  });

  const nads = `/apis/k8s.cni.cncf.io/v1/namespaces/${ns}/network-attachment-definitions`;
  await call('create NAD', 'nad', {
    method: 'POST',
    path: nads,
    body: {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'n' },
      spec: { config: '{}' },
    },
  });
  await call('patch NAD', 'nad', {
    method: 'PATCH',
    path: `${nads}/n`,
    contentType: merge,
    body: { spec: { config: '{"a":1}' } },
  });
  await call('create event', 'event', {
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/events`,
    body: {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'e1' },
      involvedObject: { kind: 'Pod', name: 'a', namespace: ns },
      reason: 'R',
      message: 'm',
      type: 'Normal',
    },
  });
  return out;
}

let cp: ControlPlane | undefined;
after(() => cp !== undefined && stopControlPlane(cp));

test('MemoryApiServer answers the request script as kube-apiserver does', { timeout: 120_000 }, async () => {
  cp = await controlPlane();
  const ns = await createNamespace(cp, 'fidelity');
  const node = `${ns.name}-node`;
  try {
    const real = await script(new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 20_000 }), node);
    const memory = await script(new MemoryApiClient(new MemoryApiServer(), { namespace: ns.name }), node);
    assert.equal(memory.length, real.length);
    const differences = real.flatMap((r, i) =>
      JSON.stringify(r) === JSON.stringify(memory[i])
        ? []
        : [`${r.step}:\n  real   ${JSON.stringify(r)}\n  memory ${JSON.stringify(memory[i])}`],
    );
    assert.deepEqual(differences, [], `the in-memory API differs from kube-apiserver:\n${differences.join('\n')}`);
  } finally {
    await ns.cleanup();
  }
});
