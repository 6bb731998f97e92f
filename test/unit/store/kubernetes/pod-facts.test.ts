// A sticky binding is derived from the pod's controller reference (src/ipam/sticky.ts bindingOf), which any tenant
// who may create pods can write: the owner it names is read live, and binds only when it exists under the uid the
// reference names (src/store/kubernetes/pod-facts.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cniCodeOf } from '../../../../src/cni/errors.ts';
import { ErrorKind, isKind } from '../../../../src/errors.ts';
import { bindingOf } from '../../../../src/ipam/sticky.ts';
import { ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../../../src/kube/api.ts';
import { NodePods } from '../../../../src/store/kubernetes/node-pods.ts';
import {
  OWNER_CHECK_MAX,
  OWNER_CHECK_TTL_MS,
  OwnerChecks,
  podFactsOf,
  readPodFacts,
  verifyOwner,
  type ObservedPodFacts,
} from '../../../../src/store/kubernetes/pod-facts.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../support/memory-apiserver.ts';

type Obj = Record<string, unknown>;

function setup(): { api: MemoryApiClient } {
  return { api: new MemoryApiClient(new MemoryApiServer(), { namespace: 'kube-system' }) };
}

async function create(api: MemoryApiClient, path: string, body: Obj): Promise<string> {
  const res = await api.send({ method: 'POST', path, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return String(((res.body as Obj)['metadata'] as Obj)['uid']);
}

const vmiOf = (name: string) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name },
  spec: {},
});

async function runningVmi(api: MemoryApiClient, namespace: string, name: string): Promise<string> {
  return create(api, `/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances`, vmiOf(name));
}

/** A pod naming `owner` (with `uid`) as its controller. */
async function podOwnedBy(
  api: MemoryApiClient,
  namespace: string,
  name: string,
  owner: { apiVersion: string; kind: string; name: string; uid?: string },
): Promise<string> {
  return create(api, `/api/v1/namespaces/${namespace}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }] },
    spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] },
  });
}

const vmiRef = (name: string, uid: string) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  name,
  uid,
});

test("a pod naming a running VMI as its controller under another uid gets no binding; the VMI's own pod gets it", async () => {
  const { api } = setup();
  const vmiUid = await runningVmi(api, 'vms', 'vm1');
  const forged = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm1', '00000000-0000-4000-8000-000000000000'));
  const launcher = await podOwnedBy(api, 'vms', 'virt-launcher-vm1-x7k2p', vmiRef('vm1', vmiUid));

  const forgedFacts = await readPodFacts(api, 'vms', 'intruder', forged);
  assert.ok(forgedFacts !== undefined, 'the pod itself exists: the ADD goes on, as an ordinary pod');
  assert.equal(bindingOf('all', 'intruder', forgedFacts), undefined);

  const launcherFacts = await readPodFacts(api, 'vms', 'virt-launcher-vm1-x7k2p', launcher);
  assert.ok(launcherFacts !== undefined);
  assert.equal(bindingOf('all', 'virt-launcher-vm1-x7k2p', launcherFacts), 'VirtualMachine/vm1');
});

test('a pod naming a StatefulSet as its controller under another uid gets no binding; its replica gets it', async () => {
  const { api } = setup();
  const setUid = await create(api, '/apis/apps/v1/namespaces/db/statefulsets', {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web' },
    spec: { replicas: 3 },
  });
  const setRef = (uid: string) => ({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid });
  const forged = await podOwnedBy(api, 'db', 'web-3', setRef('11111111-0000-4000-8000-000000000000'));
  const replica = await podOwnedBy(api, 'db', 'web-0', setRef(setUid));

  const forgedFacts = await readPodFacts(api, 'db', 'web-3', forged);
  assert.ok(forgedFacts !== undefined);
  assert.equal(bindingOf('all', 'web-3', forgedFacts), undefined);
  const replicaFacts = await readPodFacts(api, 'db', 'web-0', replica);
  assert.ok(replicaFacts !== undefined);
  assert.equal(bindingOf('all', 'web-0', replicaFacts), 'StatefulSet/web/0');
});

// --- what the check reads, and what a failed claim leaves ------------------------------------------------------------

/** The GETs of owner objects (anything but pods) the client sent. */
function ownerReads(api: MemoryApiClient): string[] {
  const reads: string[] = [];
  const send = api.send.bind(api);
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (req.method === 'GET' && !req.path.startsWith('/api/v1/')) reads.push(req.path);
    return send(req);
  };
  return reads;
}

function recordingLog(): { log: { warning(msg: string): void }; warnings: string[] } {
  const warnings: string[] = [];
  return { log: { warning: (msg: string) => void warnings.push(msg) }, warnings };
}

test('a pod naming a VMI that does not exist gets no binding, and the warning names the pod and the owner it claimed', async () => {
  const { api } = setup();
  const uid = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm9', 'u-claimed'));
  const { log, warnings } = recordingLog();
  const facts = await readPodFacts(api, 'vms', 'intruder', uid, { log });
  assert.ok(facts !== undefined);
  assert.equal(facts.owner, undefined);
  assert.equal(bindingOf('all', 'intruder', facts), undefined);
  assert.equal(warnings.length, 1);
  const [warning = ''] = warnings;
  for (const part of [`pod vms/intruder (uid ${uid})`, 'VirtualMachineInstance vms/vm9 (uid u-claimed)', 'no such']) {
    assert.ok(warning.includes(part), `${warning} names ${part}`);
  }
});

test("a mismatch's warning names the live object's uid; a match warns nothing", async () => {
  const { api } = setup();
  const vmiUid = await runningVmi(api, 'vms', 'vm1');
  const forged = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm1', 'u-forged'));
  const launcher = await podOwnedBy(api, 'vms', 'virt-launcher-vm1-a', vmiRef('vm1', vmiUid));
  const { log, warnings } = recordingLog();
  await readPodFacts(api, 'vms', 'intruder', forged, { log });
  await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { log });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', new RegExp(`intruder.*vms/vm1 \\(uid u-forged\\).*has uid ${vmiUid}`));
});

test("the owner is read in the pod's namespace: a VMI of the name in another namespace binds nothing", async () => {
  const { api } = setup();
  const vmiUid = await runningVmi(api, 'other', 'vm1');
  const uid = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm1', vmiUid));
  const facts = await readPodFacts(api, 'vms', 'intruder', uid);
  assert.equal(facts?.owner, undefined);
});

test('a controller reference without a uid binds nothing and reads nothing', async () => {
  const { api } = setup();
  await runningVmi(api, 'vms', 'vm1');
  const reads = ownerReads(api);
  const facts = await verifyOwner(api, 'vms', 'p', {
    uid: 'u-pod',
    owner: { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name: 'vm1' },
  });
  assert.equal(facts.owner, undefined);
  assert.deepEqual(reads, []);
});

test('every owner bindingOf binds is read first; an opted-out pod and an owner that binds nothing are not read for', async () => {
  const { api } = setup();
  const reads = ownerReads(api);
  const owners = [
    { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'u' },
    { apiVersion: 'apps/v1beta2', kind: 'StatefulSet', name: 'web', uid: 'u' },
    { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name: 'vm1', uid: 'u' },
    { apiVersion: 'kubevirt.io/v1alpha3', kind: 'VirtualMachineInstance', name: 'vm1', uid: 'u' },
    { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-0', uid: 'u' },
    { apiVersion: 'batch/v1', kind: 'Job', name: 'web', uid: 'u' },
    { apiVersion: 'example.com/v1', kind: 'StatefulSet', name: 'web', uid: 'u' },
    { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'vm1', uid: 'u' },
  ];
  for (const owner of owners) {
    reads.length = 0;
    const facts = { uid: 'u-pod', owner, podIndex: '0' };
    const binds = bindingOf('all', owner.kind === 'StatefulSet' ? 'web-0' : 'virt-launcher-vm1-a', facts) !== undefined;
    const checked = await verifyOwner(api, 'ns', 'web-0', facts);
    assert.equal(reads.length, binds ? 1 : 0, `${owner.apiVersion} ${owner.kind}: read when it binds`);
    assert.equal(checked.owner === undefined, binds, `${owner.apiVersion} ${owner.kind}: kept when it binds nothing`);
    reads.length = 0;
    const optedOut = await verifyOwner(api, 'ns', 'web-0', { ...facts, sticky: 'false' });
    assert.deepEqual(reads, [], `${owner.kind}, opted out: not read for`);
    assert.deepEqual(optedOut.owner, owner);
  }
});

test("the owner is read at its group's v1 path, its names escaped", async () => {
  const { api } = setup();
  const reads = ownerReads(api);
  await verifyOwner(api, 'ns', 'web-0', {
    uid: 'u',
    owner: { apiVersion: 'apps/v1beta2', kind: 'StatefulSet', name: 'web', uid: 'u-set' },
  });
  await verifyOwner(api, 'a b', 'p', {
    uid: 'u',
    owner: { apiVersion: 'kubevirt.io/v1alpha3', kind: 'VirtualMachineInstance', name: 'vm/1', uid: 'u-vmi' },
  });
  assert.deepEqual(reads, [
    '/apis/apps/v1/namespaces/ns/statefulsets/web',
    '/apis/kubevirt.io/v1/namespaces/a%20b/virtualmachineinstances/vm%2F1',
  ]);
});

// --- an owner that cannot be read now: the ADD fails, never binds unchecked -------------------------------------------

/** The client, with the GETs of the VMI answered by `answer`. */
function failingOwnerReads(answer: () => Promise<ApiResponse>): MemoryApiClient {
  const { api } = setup();
  const send = api.send.bind(api);
  api.send = (req: ApiRequest): Promise<ApiResponse> =>
    req.path.includes('/virtualmachineinstances/') ? answer() : send(req);
  return api;
}

const launcherFacts = (uid: string): ObservedPodFacts => ({ uid: 'u-pod', owner: vmiRef('vm1', uid) });

for (const [label, answer] of [
  ['503', () => Promise.resolve({ status: 503, body: { kind: 'Status', reason: 'ServiceUnavailable', code: 503 } })],
  ['500', () => Promise.resolve({ status: 500, body: { kind: 'Status', message: 'etcdserver: request timed out' } })],
  ['429', () => Promise.resolve({ status: 429, body: { kind: 'Status', reason: 'TooManyRequests' } })],
  ['504', () => Promise.resolve({ status: 504, body: undefined })],
  ['200 without an object', () => Promise.resolve({ status: 200, body: 'ok' })],
  [
    '404 about the kind, not the object (KubeVirt not installed, an API server starting)',
    () =>
      Promise.resolve({
        status: 404,
        body: {
          kind: 'Status',
          reason: 'NotFound',
          message: 'the server could not find the requested resource',
          details: {},
          code: 404,
        },
      }),
  ],
  [
    'no answer (timeout)',
    () => Promise.reject(new ApiUnreachableError('no answer within 10000 ms', { ambiguous: false })),
  ],
] as const) {
  test(`an owner read answered ${label} fails with Unavailable (code 11: kubelet retries), naming the pod and owner`, async () => {
    const api = failingOwnerReads(answer);
    const checks = new OwnerChecks();
    await assert.rejects(
      verifyOwner(api, 'vms', 'virt-launcher-vm1-a', launcherFacts('u-vmi'), { checks }),
      (err: unknown) =>
        isKind(err, ErrorKind.Unavailable) &&
        cniCodeOf(err) === 11 &&
        err.message.includes('VirtualMachineInstance vms/vm1') &&
        err.message.includes('pod vms/virt-launcher-vm1-a'),
    );
    assert.equal(checks.size, 0, 'nothing remembered');
  });
}

for (const status of [401, 403]) {
  test(`an owner read answered ${status} fails with Forbidden, naming the permission the node lacks`, async () => {
    const api = failingOwnerReads(() => Promise.resolve({ status, body: { kind: 'Status', reason: 'Forbidden' } }));
    await assert.rejects(
      verifyOwner(api, 'vms', 'virt-launcher-vm1-a', launcherFacts('u-vmi')),
      (err: unknown) =>
        isKind(err, ErrorKind.Forbidden) &&
        cniCodeOf(err) === 11 &&
        /get on virtualmachineinstances \(group kubevirt\.io\)/.test(err.details),
    );
  });
}

// --- the host's memory of verified owners ----------------------------------------------------------------------------

test("a host's OwnerChecks reads a verified owner once per TTL, keyed by its uid; a mismatch is read every time", async () => {
  const { api } = setup();
  const vmiUid = await runningVmi(api, 'vms', 'vm1');
  const launcher = await podOwnedBy(api, 'vms', 'virt-launcher-vm1-a', vmiRef('vm1', vmiUid));
  const forged = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm1', 'u-forged'));
  let now = 1_000;
  const checks = new OwnerChecks({ now: () => now });
  const reads = ownerReads(api);

  for (let i = 0; i < 3; i++) {
    const facts = await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { checks });
    assert.equal(bindingOf('all', 'virt-launcher-vm1-a', facts ?? { uid: '' }), 'VirtualMachine/vm1');
  }
  assert.equal(reads.length, 1, 'the interfaces and retries of one pod read its owner once');

  for (let i = 0; i < 2; i++) {
    const facts = await readPodFacts(api, 'vms', 'intruder', forged, { checks });
    assert.equal(facts?.owner, undefined, 'the verified uid does not vouch for another');
  }
  assert.equal(reads.length, 3, 'a claim that did not hold is read again');

  now += OWNER_CHECK_TTL_MS;
  await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { checks });
  assert.equal(reads.length, 4, 'read again once the TTL is over');
});

test('a VMI deleted and re-created under a new uid: the TTL bounds how long the old uid is taken as verified', async () => {
  const { api } = setup();
  const oldUid = await runningVmi(api, 'vms', 'vm1');
  const launcher = await podOwnedBy(api, 'vms', 'virt-launcher-vm1-a', vmiRef('vm1', oldUid));
  let now = 0;
  const checks = new OwnerChecks({ now: () => now });
  assert.ok((await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { checks }))?.owner !== undefined);
  const deleted = await api.send({
    method: 'DELETE',
    path: '/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances/vm1',
  });
  assert.equal(deleted.status, 200);
  const newUid = await runningVmi(api, 'vms', 'vm1');
  assert.notEqual(newUid, oldUid);
  now += OWNER_CHECK_TTL_MS - 1;
  const within = await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { checks });
  assert.ok(within?.owner !== undefined, 'within the TTL, the uid once verified is still taken');
  now += 1;
  assert.equal((await readPodFacts(api, 'vms', 'virt-launcher-vm1-a', launcher, { checks }))?.owner, undefined);
});

test('OwnerChecks keeps OWNER_CHECK_MAX owners at most, dropping the oldest', () => {
  const checks = new OwnerChecks({ now: () => 0 });
  for (let i = 0; i <= OWNER_CHECK_MAX; i++) checks.add(`k${i}`);
  assert.equal(checks.size, OWNER_CHECK_MAX);
  assert.equal(checks.has('k0'), false);
  assert.equal(checks.has('k1'), true);
  assert.equal(checks.has(`k${OWNER_CHECK_MAX}`), true);
});

// --- the node agent's watch of its node's pods ----------------------------------------------------------------------

test("the node agent's pod watch checks the owner too: a forged VMI owner binds nothing, the real one binds", async (t) => {
  const { api } = setup();
  // The watch is served by the same memory (its WATCH is not: the informer's list is what it shows).
  api.detached = () => api;
  const vmiUid = await runningVmi(api, 'vms', 'vm1');
  const launcher = await podOwnedBy(api, 'vms', 'virt-launcher-vm1-a', vmiRef('vm1', vmiUid));
  const forged = await podOwnedBy(api, 'vms', 'intruder', vmiRef('vm1', 'u-forged'));
  const warnings: string[] = [];
  const pods = new NodePods({
    debug() {},
    info() {},
    warning: (msg) => {
      if (msg.startsWith('sticky:')) warnings.push(msg);
    },
    error() {},
  });
  t.after(() => pods.close());
  const reads = ownerReads(api);

  const forgedFacts = await pods.facts(api, 'node-a', { namespace: 'vms', name: 'intruder', uid: forged });
  assert.ok(forgedFacts !== undefined, 'the pod is known: an ordinary ADD');
  assert.equal(bindingOf('all', 'intruder', forgedFacts), undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /pod vms\/intruder .*VirtualMachineInstance vms\/vm1 \(uid u-forged\)/);

  for (let i = 0; i < 2; i++) {
    const facts = await pods.facts(api, 'node-a', { namespace: 'vms', name: 'virt-launcher-vm1-a', uid: launcher });
    assert.equal(bindingOf('all', 'virt-launcher-vm1-a', facts ?? { uid: '' }), 'VirtualMachine/vm1');
  }
  assert.deepEqual(
    reads.filter((path) => path.includes('/virtualmachineinstances/')).length,
    2,
    "the forged claim's read, then the launcher's, once for its two ADDs",
  );
  assert.equal(pods.stats().read, 0, 'answered from the watch, not by reading the pod');
});

// --- podFactsOf keeps the uid the controller reference names ---------------------------------------------------------

test("podFactsOf() keeps the controller reference's uid, and none that is empty or not a string", () => {
  const ref = { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name: 'vm1', controller: true };
  const owner = (uid: unknown) => podFactsOf({ metadata: { uid: 'p', ownerReferences: [{ ...ref, uid }] } })?.owner;
  assert.deepEqual(owner('u-vmi'), {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    name: 'vm1',
    uid: 'u-vmi',
  });
  for (const uid of ['', 7, null, undefined]) {
    assert.deepEqual(owner(uid), { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name: 'vm1' });
  }
});
