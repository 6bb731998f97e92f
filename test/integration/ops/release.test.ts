// `hereabouts release` (the packaged executable) against a real API server: it refuses a live pod's address unless
// forced, removes the reservation only with its exact version and only while it names the released attachment, and
// when another writer changes the pool between its read and its write (a TLS-terminating proxy in front of the API
// server makes that write just before the command's own), it reads again: an address re-allocated to someone else
// is never removed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { createPod, deleteAllPods } from '../controller/harness.ts';
import { allocationsOf, entry, hb, hbAsync, pool, reservation } from './harness.ts';

/** An HTTPS proxy to the API server that runs `hook` (once) before forwarding the first request it matches. */
interface Interposer {
  readonly url: string;
  hook: { when: (method: string, path: string) => boolean; before: () => Promise<void> } | undefined;
  fired: number;
  close(): Promise<void>;
}

async function interpose(ns: Namespace): Promise<Interposer> {
  const upstream = new URL(ns.cp.url);
  const ca = readFileSync(ns.cp.ca);
  const state: Interposer = {
    url: '',
    hook: undefined,
    fired: 0,
    close: () => new Promise((r) => server.close(() => r())),
  };
  const server: Server = createServer(
    { cert: readFileSync(join(ns.cp.dir, 'apiserver.crt')), key: readFileSync(join(ns.cp.dir, 'apiserver.key')) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on(
        'end',
        () =>
          void (async () => {
            const hook = state.hook;
            if (hook !== undefined && hook.when(req.method ?? '', req.url ?? '')) {
              state.hook = undefined;
              await hook.before();
              state.fired++;
            }
            const out = request(
              {
                host: upstream.hostname,
                port: upstream.port,
                path: req.url,
                method: req.method,
                headers: req.headers,
                ca,
              },
              (answer) => {
                res.writeHead(answer.statusCode ?? 502, answer.headers);
                answer.pipe(res);
              },
            );
            out.end(Buffer.concat(chunks));
          })(),
      );
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return Object.assign(state, { url: `https://127.0.0.1:${address.port}` });
}

describe('hereabouts release', () => {
  let ns: Namespace;
  let proxy: Interposer;
  let viaProxy: string;
  let webUid: string;
  const release = (...args: string[]) => hb(ns, ['release', ...args]);
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-release');
    webUid = await createPod(ns, 'web', { phase: 'Running', container: 'running', node: 'node-a' });
    await createPod(ns, 'done', {
      phase: 'Succeeded',
      container: 'terminated',
      conditions: [{ type: 'PodReadyToStartContainers', status: 'False' }],
    });
    const web = entry(ns, 'web', { podUid: webUid });
    await pool(ns, '10.90.0.0-24', '10.90.0.0/24', {
      '5': web,
      '6': entry(ns, 'done'),
      '7': entry(ns, 'gone'),
      '9': entry(ns, 'gone-too'),
      '10': entry(ns, 'gone-3'),
    });
    await reservation(ns, '10.90.0.5', web);
    await reservation(ns, '10.90.0.6', entry(ns, 'done'));
    await reservation(ns, '10.90.0.10', entry(ns, 'someone-else'));
    await reservation(ns, '10.90.0.99', entry(ns, 'gone'));
    await pool(ns, 'blue-10.90.0.0-24', '10.90.0.0/24', { '6': entry(ns, 'gone') });
    await reservation(ns, 'blue-10.90.0.6', entry(ns, 'gone'));
    proxy = await interpose(ns);
    viaProxy = join(ns.dir, 'via-proxy.kubeconfig');
    writeFileSync(viaProxy, kubeconfigFor({ ...ns.cp, url: proxy.url }, ns.name), { mode: 0o600 });
  });
  after(async () => {
    await proxy.close();
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test("a running pod's address is refused (exit 1, nothing written), and released with --force", async () => {
    const refused = release('10.90.0.5', '--network', '');
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(
      refused.stdout,
      `refused to release 10.90.0.5 of network (unnamed): pod ${ns.name}/web is Running on node-a with its sandbox present: --force releases it anyway\n`,
    );
    assert.ok('5' in (await allocationsOf(ns, '10.90.0.0-24')));
    assert.notEqual(await ns.get('overlappingrangeipreservations', '10.90.0.5'), undefined);

    const forced = release('10.90.0.5', '--network', '', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(
      forced.stdout,
      `released 10.90.0.5 from IPPool 10.90.0.0-24 (was ${ns.name}/web, container ctr-web, interface net1)\nreservation 10.90.0.5: deleted\n`,
    );
    assert.ok(!('5' in (await allocationsOf(ns, '10.90.0.0-24'))));
    assert.equal(await ns.get('overlappingrangeipreservations', '10.90.0.5'), undefined);
  });

  test("a finished pod's address goes without --force; -o json says what was done; the other network is untouched", async () => {
    const run = release('10.90.0.6', '--network', '', '-o', 'json');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), {
      address: '10.90.0.6',
      network: '',
      released: [{ pool: '10.90.0.0-24', podRef: `${ns.name}/done`, containerId: 'ctr-done', ifname: 'net1' }],
      skipped: [],
      reservation: { name: '10.90.0.6', outcome: 'deleted' },
    });
    assert.ok('6' in (await allocationsOf(ns, 'blue-10.90.0.0-24')), 'network blue still holds its 10.90.0.6');
    assert.notEqual(await ns.get('overlappingrangeipreservations', 'blue-10.90.0.6'), undefined);
    const blue = release('10.90.0.6', '--network', 'blue');
    assert.equal(blue.code, 0, blue.stderr);
    assert.match(
      blue.stdout,
      /^released 10\.90\.0\.6 from IPPool blue-10\.90\.0\.0-24 .*\nreservation blue-10\.90\.0\.6: deleted\n$/,
    );
  });

  test('a reservation that names another attachment is kept', async () => {
    const run = release('10.90.0.10', '--network', '');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /reservation 10\.90\.0\.10: kept \(it names another attachment\)\n$/);
    assert.notEqual(await ns.get('overlappingrangeipreservations', '10.90.0.10'), undefined);
  });

  test('an address no pool of the network holds: exit 1; a reservation left alone for it is deleted', async () => {
    const free = release('10.90.0.50', '--network', '');
    assert.equal(free.code, 1);
    assert.match(free.stdout, /^10\.90\.0\.50 is not allocated in any IPPool of network \(unnamed\)\n/);
    const stray = release('10.90.0.99', '--network', '');
    assert.equal(stray.code, 0, stray.stderr);
    assert.equal(stray.stdout, 'reservation 10.90.0.99: deleted\n');
    assert.equal(await ns.get('overlappingrangeipreservations', '10.90.0.99'), undefined);
  });

  test('another writer re-allocates the address between read and write: release reads again and leaves it', async () => {
    const newcomer = entry(ns, 'newcomer');
    proxy.hook = {
      when: (method, path) => method === 'PATCH' && path.includes('/ippools/10.90.0.0-24'),
      // The other writer: the plugin of some node released 10.90.0.7 and gave it to a new pod, in one write.
      before: async () => {
        await api(
          ns.cp,
          'PATCH',
          ns.path('ippools', '10.90.0.0-24'),
          { spec: { allocations: { '7': newcomer } } },
          'application/merge-patch+json',
        );
        await reservation(ns, '10.90.0.7', newcomer);
      },
    };
    const run = await hbAsync(['release', '10.90.0.7', '--network', '', '--kubeconfig', viaProxy]);
    assert.equal(proxy.fired, 1, 'the other write happened between the read and the write');
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /IPPool 10\.90\.0\.0-24: changed since resourceVersion \d+; reading it again/);
    assert.match(
      run.stdout,
      new RegExp(
        `^IPPool 10\\.90\\.0\\.0-24: 10\\.90\\.0\\.7 re-allocated meanwhile to ${ns.name}/newcomer \\(container ctr-newcomer\\): not released\\n`,
      ),
    );
    assert.match(
      run.stdout,
      /reservation 10\.90\.0\.7: kept \(IPPool 10\.90\.0\.0-24 holds 10\.90\.0\.7 for .*\/newcomer\)\n$/,
    );
    assert.deepEqual((await allocationsOf(ns, '10.90.0.0-24'))['7'], newcomer);
    assert.equal(
      ((await ns.get('overlappingrangeipreservations', '10.90.0.7'))?.['spec'] as { podref: string }).podref,
      newcomer.podref,
    );
  });

  test('another writer changes another address meanwhile: release reads again and releases only its own', async () => {
    const other = entry(ns, 'other');
    proxy.hook = {
      when: (method, path) => method === 'PATCH' && path.includes('/ippools/10.90.0.0-24'),
      before: async () => {
        await api(
          ns.cp,
          'PATCH',
          ns.path('ippools', '10.90.0.0-24'),
          { spec: { allocations: { '8': other } } },
          'application/merge-patch+json',
        );
      },
    };
    const run = await hbAsync(['release', '10.90.0.9', '--network', '', '--kubeconfig', viaProxy]);
    assert.equal(proxy.fired, 2);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /reading it again/);
    assert.match(run.stdout, /^released 10\.90\.0\.9 from IPPool 10\.90\.0\.0-24 /);
    const now = await allocationsOf(ns, '10.90.0.0-24');
    assert.ok(!('9' in now));
    assert.deepEqual(now['8'], other);
    assert.deepEqual(now['7'], entry(ns, 'newcomer'));
  });
});
