// The controller's list+watch caches: against the real API server (changes seen, a broken connection resumed with
// what changed meanwhile), and against a small fake server for the one answer a real one gives only at random: a
// watch that expired (410 Gone), which must re-list and report the difference.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type RequestListener } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { controllerEndpoint } from '../../../src/kube/in-cluster.ts';
import { Informer, type ChangeKind } from '../../../src/kube/informer.ts';
import { jsonLog } from '../../../src/log/json-log.ts';
import { podView, type PodView } from '../../../src/controller/orphans/pod-view.ts';
import { podFromProtobuf } from '../../../src/controller/orphans/pod-protobuf.ts';
import { len, listEnvelope } from '../../support/protobuf.ts';
import { createPod, deleteAllPods, deletePod, eventually } from './harness.ts';

const quiet = jsonLog({ level: 'error' });

/** A pods informer on `kubeconfig` that records its changes ("added ns/a"); started. */
async function podsInformer(
  kubeconfig: string,
  options: { protobuf?: boolean } = {},
): Promise<{ client: ApiClient; informer: Informer<PodView>; changes: string[] }> {
  const client = new ApiClient(await loadEndpoint(kubeconfig), { timeoutMs: 5000 });
  const changes: string[] = [];
  const informer = new Informer(client, {
    resource: 'pods',
    path: '/api/v1/pods',
    view: podView,
    ...(options.protobuf === true ? { protobuf: podFromProtobuf } : {}),
    log: quiet,
    onChange: (kind, key) => changes.push(`${kind} ${key}`),
  });
  informer.start();
  return { client, informer, changes };
}

/** A fake API server on loopback with `handler`, and a kubeconfig pointing at it (for answers a real one gives rarely). */
async function fakeApi(handler: RequestListener): Promise<{ kubeconfig: string; close(): void }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-informer-'));
  const { port } = server.address() as { port: number };
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters: [{name: f, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]\nusers: [{name: f, user: {token: t}}]\ncontexts: [{name: f, context: {cluster: f, user: f, namespace: ns}}]\ncurrent-context: f\n`,
  );
  return {
    kubeconfig,
    close() {
      server.closeAllConnections();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('controller informer against the real API server', () => {
  let ns: Namespace;
  let client: ApiClient;
  let informer: Informer<PodView>;
  const changes: string[] = [];
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'inf');
    await createPod(ns, 'first');
    client = new ApiClient((await controllerEndpoint(() => loadEndpoint(ns.kubeconfig))).endpoint, {
      timeoutMs: 10_000,
    });
    informer = new Informer(client, {
      resource: 'pods',
      path: `/api/v1/namespaces/${ns.name}/pods`,
      view: podView,
      log: quiet,
      onChange: (kind: ChangeKind, key: string) => changes.push(`${kind} ${key.split('/')[1]}`),
    });
    informer.start();
    await informer.whenSynced();
  });
  after(async () => {
    informer.stop();
    client.close();
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('the first list fills the cache; watched changes follow', async () => {
    assert.deepEqual(changes, ['added first']);
    await createPod(ns, 'second', { phase: 'Running' });
    assert.ok(
      await eventually(() => informer.items.get(`${ns.name}/second`)?.phase === 'Running', 5000),
      changes.join(', '),
    );
    await deletePod(ns, 'first');
    assert.ok(await eventually(() => !informer.items.has(`${ns.name}/first`), 5000));
    assert.ok(changes.includes('deleted first'));
  });

  test('a broken watch connection is re-established, and what changed meanwhile is reported', async () => {
    client.endpoint.agent.destroy(); // every open socket, the watch's included
    await createPod(ns, 'third');
    await deletePod(ns, 'second');
    assert.ok(
      await eventually(
        () => informer.synced && informer.items.has(`${ns.name}/third`) && !informer.items.has(`${ns.name}/second`),
        10_000,
      ),
      changes.join(', '),
    );
    assert.ok(changes.includes('added third') && changes.includes('deleted second'), changes.join(', '));
  });
});

describe('controller informer and an expired watch (410 Gone)', () => {
  let fake: { kubeconfig: string; close(): void };
  const lists: string[] = [];
  const pod = (name: string, rv: string) => ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv },
    status: { phase: 'Running' },
  });
  before(async () => {
    let watches = 0;
    fake = await fakeApi((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('Content-Type', 'application/json');
      if (url.searchParams.get('watch') === null) {
        lists.push(url.search);
        const items = lists.length === 1 ? [pod('a', '5')] : [pod('b', '16'), pod('c', '19')];
        return res.end(
          JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: lists.length === 1 ? '10' : '20' }, items }),
        );
      }
      watches++;
      if (watches === 1) {
        res.write(`${JSON.stringify({ type: 'ADDED', object: pod('b', '11') })}\n`);
        res.write(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`,
        );
        return res.end();
      }
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '21' } } })}\n`); // and stays open
    });
  });
  after(() => fake.close());

  test('a 410 Gone re-lists and reports what appeared and disappeared meanwhile', async () => {
    const { client, informer, changes } = await podsInformer(fake.kubeconfig);
    try {
      assert.ok(await eventually(() => lists.length === 2 && informer.items.has('ns/c'), 5000), changes.join(', '));
      assert.deepEqual(changes, ['added ns/a', 'added ns/b', 'deleted ns/a', 'updated ns/b', 'added ns/c']);
      assert.deepEqual([...informer.items.keys()].sort(), ['ns/b', 'ns/c']);
      assert.ok(informer.synced);
      assert.match(lists[0] ?? '', /limit=\d+/);
    } finally {
      informer.stop();
      client.close();
    }
  });
});

describe('controller informer listing in protobuf: which resourceVersion each list asks for', () => {
  let fake: { kubeconfig: string; close(): void };
  const lists: string[] = [];
  const podBytes = (name: string, rv: string) => len(1, len(1, name), len(3, 'ns'), len(5, `uid-${name}`), len(6, rv));
  const jsonPod = (name: string, rv: string) => ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv },
  });
  before(async () => {
    let watches = 0;
    fake = await fakeApi((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.searchParams.get('watch') === null) {
        lists.push(url.searchParams.get('resourceVersion') ?? '(none)');
        res.setHeader('Content-Type', 'application/vnd.kubernetes.protobuf');
        const body =
          lists.length === 1
            ? listEnvelope('10', [podBytes('a', '5')])
            : listEnvelope('20', [podBytes('b', '16'), podBytes('c', '19')]);
        return res.end(body);
      }
      res.setHeader('Content-Type', 'application/json');
      watches++;
      if (watches === 1) {
        res.write(`${JSON.stringify({ type: 'ADDED', object: jsonPod('b', '11') })}\n`);
        res.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } })}\n`);
        return res.end();
      }
      if (watches === 2) {
        res.statusCode = 500; // a failed watch, not an expired one
        return res.end('{"kind":"Status","code":500}');
      }
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '21' } } })}\n`);
    });
  });
  after(() => fake.close());

  test('first from the cache (0), after a 410 a consistent read (""), after a failed watch not older than seen', async () => {
    const { client, informer, changes } = await podsInformer(fake.kubeconfig, { protobuf: true });
    try {
      assert.ok(await eventually(() => lists.length === 3 && informer.synced, 10_000), lists.join(', '));
      assert.deepEqual(lists, ['0', '', '20']);
      assert.deepEqual(changes.slice(0, 5), ['added ns/a', 'added ns/b', 'deleted ns/a', 'updated ns/b', 'added ns/c']);
      assert.deepEqual([...informer.items.keys()].sort(), ['ns/b', 'ns/c']);
    } finally {
      informer.stop();
      client.close();
    }
  });
});

test('a server that answers the protobuf list in JSON (a proxy in between) is listed in JSON pages instead', async () => {
  const queries: string[] = [];
  const fake = await fakeApi((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('Content-Type', 'application/json');
    if (url.searchParams.get('watch') !== null) return; // stays open
    queries.push(url.search);
    res.end(
      JSON.stringify({
        kind: 'PodList',
        metadata: { resourceVersion: '7' },
        items: [{ metadata: { name: 'a', namespace: 'ns', uid: 'uid-a', resourceVersion: '7' } }],
      }),
    );
  });
  const client = new ApiClient(
    await loadEndpoint(fake.kubeconfig).catch((err: unknown) => {
      fake.close();
      throw err;
    }),
    { timeoutMs: 5000 },
  );
  const informer = new Informer(client, {
    resource: 'pods',
    path: '/api/v1/pods',
    view: podView,
    protobuf: podFromProtobuf,
    log: quiet,
  });
  informer.start();
  try {
    await informer.whenSynced();
    assert.equal(informer.items.get('ns/a')?.uid, 'uid-a');
    assert.deepEqual(queries, ['?resourceVersion=0', '?limit=250']);
  } finally {
    informer.stop();
    client.close();
    fake.close();
  }
});
