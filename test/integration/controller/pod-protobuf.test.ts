// The pods informer lists in protobuf, streamed from the watch cache, and decodes only what the orphan rules read
// (pod-protobuf.ts). On a real API server, every kind of pod those rules tell apart must come out of the protobuf
// list with the very view its JSON gives; and the informer must sync and then follow changes through its watch.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { listProtobuf } from '../../../src/kube/protobuf-list.ts';
import { Informer, keyOf } from '../../../src/kube/informer.ts';
import { podView, type PodView } from '../../../src/controller/orphans/pod-view.ts';
import { podFromProtobuf } from '../../../src/controller/orphans/pod-protobuf.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { createPod, deleteAllPods, eventually, terminatePod } from './harness.ts';

const PROBES = ['10.1.2.3', '10.1.2.4', 'fd00::5', '192.0.2.9'];

/** A view as plain data: the network-status addresses as which probes it holds (the list keeps them private). */
function plain(view: PodView | undefined): unknown {
  if (view === undefined) return undefined;
  const { networkStatusIPs, ...rest } = view;
  return { ...rest, networkStatusIPs: networkStatusIPs && PROBES.filter((ip) => networkStatusIPs.has(ip)) };
}

const podsPath = (ns: Namespace): string => `/api/v1/namespaces/${ns.name}/pods`;

async function createRaw(ns: Namespace, pod: Record<string, unknown>, status?: Record<string, unknown>): Promise<void> {
  const name = (pod['metadata'] as { name: string }).name;
  await api(ns.cp, 'POST', podsPath(ns), { apiVersion: 'v1', kind: 'Pod', ...pod });
  if (status !== undefined)
    await api(ns.cp, 'PATCH', `${podsPath(ns)}/${name}/status`, { status }, 'application/merge-patch+json');
}

describe('pods in protobuf against the real API server', () => {
  let ns: Namespace;
  let client: ApiClient;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'pb');
    client = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
    const t = '2026-11-20T10:00:00Z';
    await createPod(ns, 'pending');
    await createPod(ns, 'running', { phase: 'Running', container: 'running', networkStatus: ['10.1.2.3', 'fd00::5'] });
    await createPod(ns, 'done', { phase: 'Succeeded', container: 'terminated' });
    await createPod(ns, 'evicted', { phase: 'Running', container: 'running', disrupted: 'EvictionByEvictionAPI' });
    await createPod(ns, 'no-sandbox', {
      phase: 'Running',
      conditions: [{ type: 'PodReadyToStartContainers', status: 'False', lastTransitionTime: t }],
    });
    await createPod(ns, 'held', { phase: 'Running', container: 'running', finalizer: true, node: 'n1' });
    await terminatePod(ns, 'held'); // stays Terminating (its finalizer): deletionTimestamp set
    await createPod(ns, 'bad-status', { networkStatus: ['10.1.2.4'] });
    await api(
      ns.cp,
      'PATCH',
      `${podsPath(ns)}/bad-status`,
      { metadata: { annotations: { 'k8s.v1.cni.cncf.io/network-status': '{not json' } } },
      'application/merge-patch+json',
    );
    await createRaw(ns, {
      metadata: {
        name: 'mirror',
        annotations: { 'kubernetes.io/config.mirror': 'static-uid-1', 'other.example/x': 'y' },
        labels: { app: 'x' },
      },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'registry.example/app:1' }] },
    });
    await createRaw(
      ns,
      {
        metadata: { name: 'whereabouts-init' },
        spec: {
          initContainers: [
            { name: 'i', image: 'ghcr.io/k8snetworkplumbingwg/whereabouts:v0.9.4', command: ['/install'] },
          ],
          containers: [
            {
              name: 'c',
              image: 'registry.example/tool:2',
              command: ['/bin/sh', '-c'],
              args: ['exec ip-reconciler -x'],
            },
          ],
        },
      },
      {
        phase: 'Failed',
        initContainerStatuses: [
          {
            name: 'i',
            image: 'x',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 1, finishedAt: '2026-11-21T08:30:00Z' } },
          },
        ],
        conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-11-21T08:31:00Z' }],
      },
    );
    await createRaw(ns, {
      metadata: { name: 'debugged' },
      spec: { containers: [{ name: 'c', image: 'registry.example/app:1' }] },
    });
    await api(
      ns.cp,
      'PATCH',
      `${podsPath(ns)}/debugged/ephemeralcontainers`,
      { spec: { ephemeralContainers: [{ name: 'dbg', image: 'registry.example/whereabouts-debug:1' }] } },
      'application/strategic-merge-patch+json',
    );
  });
  after(async () => {
    client.close();
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('every pod gets the view its JSON gives', async () => {
    const json = (await api(ns.cp, 'GET', podsPath(ns))) as { items: unknown[] };
    const expected = new Map(json.items.map((item) => [keyOf(item), plain(podView(item))]));
    const got = new Map<string | undefined, unknown>();
    const res = await listProtobuf(
      client.endpoint,
      `${podsPath(ns)}?resourceVersion=0`,
      (bytes) => {
        const pod = podFromProtobuf(bytes);
        got.set(keyOf(pod), plain(podView(pod)));
      },
      { idleMs: 10_000 },
    );
    assert.equal(res.status, 200);
    assert.equal(expected.size, 10);
    assert.deepEqual(got, expected);
    // The cases differ where the rules look: were they all alike, the comparison would prove little.
    const view = (name: string) => got.get(`${ns.name}/${name}`) as Record<string, unknown>;
    assert.deepEqual(view('running')['networkStatusIPs'], ['10.1.2.3', 'fd00::5']);
    assert.equal(view('bad-status')['networkStatusIPs'], undefined);
    assert.equal(view('mirror')['uid'], 'static-uid-1');
    assert.equal(view('evicted')['disruption'], 'EvictionByEvictionAPI');
    assert.equal(view('no-sandbox')['sandboxGone'], true);
    assert.equal(view('held')['terminating'], true);
    assert.equal(typeof view('held')['deletionAtMs'], 'number');
    assert.equal(view('done')['containersRunning'], false);
    assert.equal(view('whereabouts-init')['whereabouts'], true);
    assert.equal(view('whereabouts-init')['lastChangeMs'], Date.parse('2026-11-21T08:31:00Z'));
    assert.equal(view('debugged')['whereabouts'], false); // ephemeral containers are not among those read
    assert.equal(view('pending')['phase'], 'Pending');
  });

  test('a collection the server does not have answers with its status, not an exception', async () => {
    const res = await listProtobuf(client.endpoint, '/api/v1/nosuchthings?resourceVersion=0', () => undefined, {
      idleMs: 10_000,
    });
    assert.equal(res.status, 404);
    assert.ok('message' in res && res.message.startsWith('404'), JSON.stringify(res));
  });

  test('the informer syncs from the protobuf list, then follows changes through its watch', async () => {
    const informer = new Informer(client, {
      resource: 'pods',
      path: podsPath(ns),
      view: podView,
      protobuf: podFromProtobuf,
      log: jsonLog({ level: 'error' }),
    });
    informer.start();
    try {
      await informer.whenSynced();
      assert.equal(informer.items.size, 10);
      assert.equal(informer.items.get(`${ns.name}/mirror`)?.uid, 'static-uid-1');
      await createPod(ns, 'later', { phase: 'Running', networkStatus: ['192.0.2.9'] });
      assert.ok(
        await eventually(
          () => informer.items.get(`${ns.name}/later`)?.networkStatusIPs?.has('192.0.2.9') === true,
          5000,
        ),
      );
    } finally {
      informer.stop();
    }
  });
});
