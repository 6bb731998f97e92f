// hereabouts' Cluster API IPAM provider side by side with the upstream one, on the real API server: the packaged
// `hereabouts controller --claims <ns>` serving an AddressPool, and the in-cluster provider v1.1.0
// (sigs.k8s.io/cluster-api-ipam-provider-in-cluster, built from its Go module by scripts/tools/capi-in-cluster.sh and
// cached outside the repo; its CRDs applied from that module) serving an InClusterIPPool of the same addresses, prefix
// and gateway, each in a namespace of its own (the upstream provider runs with --namespace: it never sees another
// suite's claims). The same claims go to both; the IPAddresses they get must be equivalent.
//
// Differences between the two, asserted below as what each does:
//   - a served claim: hereabouts sets a Ready condition (reason Ready, message <address>/<prefix>) and records an
//     Warning Event when it cannot; upstream sets no condition and records no Event (status.addressRef is all it says), and
//     says nothing on the claim when its pool is exhausted (hereabouts: Ready=False, reason PoolExhausted);
//   - the IPAddress: upstream adds a second owner reference, to its pool (controller: false, blockOwnerDeletion);
//     hereabouts' is owned by its claim only (its pool is kept by the finalizer hereabouts.cni.cncf.io/protect-pool
//     while a claim holds an address of it) and carries annotations naming the IPPool that records the address;
//   - the pool: its counts are status.ipAddresses upstream and status.addresses in hereabouts (the same fields), its
//     finalizer ipam.cluster.x-k8s.io/ProtectPool upstream and hereabouts.cni.cncf.io/protect-pool in hereabouts.
// With allocateReservedIPAddresses both hand out the network and broadcast addresses and never the gateway (this
// suite found hereabouts handing the gateway out; it follows upstream now).
// Without a Go toolchain, or when the upstream provider cannot be built, the suite is skipped and says why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { load } from 'js-yaml';
import {
  api,
  apiRequest,
  controlPlane,
  createNamespace,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { repoRoot } from '../../support/paths.ts';
import { eventually, events, sleep, startController, type Running } from './harness.ts';

const CAPI = '/apis/ipam.cluster.x-k8s.io/v1beta2';
const MODULE = 'sigs.k8s.io/cluster-api-ipam-provider-in-cluster';
const PROTECT_ADDRESS = 'ipam.cluster.x-k8s.io/ProtectAddress';
const RELEASE_ADDRESS = 'ipam.cluster.x-k8s.io/ReleaseAddress';
type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});

/** The upstream provider and its CRDs, or why the suite cannot run. */
function upstreamProvider(): { bin: string; crds: string } | { skip: string } {
  const go = ['go', '/usr/local/go/bin/go'].find(
    (candidate) => spawnSync(candidate, ['version'], { stdio: 'ignore' }).status === 0,
  );
  if (go === undefined)
    return {
      skip: 'no Go toolchain: cannot build the Cluster API in-cluster IPAM provider v1.1.0 from its Go module (scripts/tools/capi-in-cluster.sh)',
    };
  // Instant when scripts/test.sh built it beforehand (or any earlier run did).
  const built = spawnSync('bash', [join(repoRoot, 'scripts', 'tools', 'capi-in-cluster.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const bin = built.stdout.trim().split('\n').at(-1) ?? '';
  if (built.status !== 0 || !existsSync(bin))
    return {
      skip: `the in-cluster provider is not built: scripts/tools/capi-in-cluster.sh exited ${String(built.status)}: ${built.stderr.trim().split('\n').slice(-3).join(' / ')}`,
    };
  // Its CRDs are in its module, which the build left in the module cache.
  const dir = execFileSync(go, ['list', '-m', '-f', '{{.Dir}}', MODULE], {
    cwd: join(dirname(bin), 'src'),
    env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', GOWORK: 'off' },
    encoding: 'utf8',
  }).trim();
  return { bin, crds: join(dir, 'config', 'crd', 'bases') };
}

/** `kubectl apply --server-side` of the CRDs in `dir`, then waits until each is Established. */
async function applyCrds(cp: ControlPlane, dir: string): Promise<void> {
  const names: string[] = [];
  for (const file of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    const crd = rec(load(readFileSync(join(dir, file), 'utf8')));
    const name = String(rec(crd['metadata'])['name']);
    names.push(name);
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}?fieldManager=hereabouts-test&force=true`;
    await api(cp, 'PATCH', path, crd, 'application/apply-patch+yaml');
  }
  for (const name of names) {
    const established = async (): Promise<boolean> => {
      const crd = rec(await api(cp, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`));
      const conditions = (rec(crd['status'])['conditions'] as Obj[] | undefined) ?? [];
      return conditions.some((c) => c['type'] === 'Established' && c['status'] === 'True');
    };
    assert.ok(await eventually(established, 60_000), `CRD ${name} not Established`);
  }
}

const provider = upstreamProvider();

/** One provider's side: its namespace, its pool kind, its log. */
interface Side {
  readonly label: 'hereabouts' | 'upstream';
  readonly ns: Namespace;
  readonly poolGroup: string;
  readonly poolKind: string;
  readonly poolPath: string;
  readonly poolApiVersion: string;
  /** The pool status field holding total / used / free / outOfRange. */
  readonly counts: string;
  readonly log: () => string;
}

describe(
  'hereabouts and the upstream in-cluster provider v1.1.0 on the same claims',
  { skip: 'skip' in provider ? provider.skip : false },
  () => {
    let hereabouts: Side;
    let upstream: Side;
    let controller: Running;
    let upstreamChild: ChildProcess;
    let upstreamLog = '';
    const sides = (): Side[] => [hereabouts, upstream];

    const claimPath = (side: Side, name?: string) =>
      `${CAPI}/namespaces/${side.ns.name}/ipaddressclaims${name === undefined ? '' : `/${name}`}`;
    const addressPath = (side: Side, name?: string) =>
      `${CAPI}/namespaces/${side.ns.name}/ipaddresses${name === undefined ? '' : `/${name}`}`;
    const get = async (side: Side, path: string): Promise<Obj | undefined> => {
      const res = await apiRequest(side.ns.cp, 'GET', path);
      return res.status === 404 ? undefined : rec(res.body);
    };
    const pool = (side: Side, name: string, spec: Obj) =>
      api(side.ns.cp, 'POST', side.poolPath, {
        apiVersion: side.poolApiVersion,
        kind: side.poolKind,
        metadata: { name },
        spec,
      });
    const claim = (side: Side, name: string, poolName: string) =>
      api(side.ns.cp, 'POST', claimPath(side), {
        apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
        kind: 'IPAddressClaim',
        metadata: { name },
        spec: { poolRef: { apiGroup: side.poolGroup, kind: side.poolKind, name: poolName } },
      });
    const conditionsOf = (object: Obj | undefined): Obj[] | undefined =>
      rec(object?.['status'])['conditions'] as Obj[] | undefined;
    /** Waits until the claim has its IPAddress and status.addressRef (and, in hereabouts, Ready=True). */
    const served = async (side: Side, name: string): Promise<{ claim: Obj; address: Obj }> => {
      let claimNow: Obj | undefined;
      let addressNow: Obj | undefined;
      const ok = await eventually(async () => {
        claimNow = await get(side, claimPath(side, name));
        addressNow = await get(side, addressPath(side, name));
        const ref = rec(rec(claimNow?.['status'])['addressRef'])['name'];
        const ready =
          side.label === 'upstream' ||
          (conditionsOf(claimNow) ?? []).some((c) => c['type'] === 'Ready' && c['status'] === 'True');
        return ref === name && ready && addressNow !== undefined;
      }, 30_000);
      assert.ok(
        ok,
        `${side.label}: claim ${name} not served: ${JSON.stringify(claimNow?.['status'])}\n${side.log().slice(-3000)}`,
      );
      return { claim: claimNow as Obj, address: addressNow as Obj };
    };
    const addressOf = (served: { address: Obj }): string => String(rec(served.address['spec'])['address']);
    /** Serves `name` on both sides, at once, and returns what each got. */
    const claimBoth = async (name: string, poolName: string) => {
      await Promise.all(sides().map((side) => claim(side, name, poolName)));
      const [h, u] = await Promise.all(sides().map((side) => served(side, name)));
      return { h: h!, u: u! };
    };
    const gone = async (side: Side, name: string): Promise<void> => {
      const ok = await eventually(
        async () =>
          (await get(side, claimPath(side, name))) === undefined &&
          (await get(side, addressPath(side, name))) === undefined,
        30_000,
      );
      assert.ok(ok, `${side.label}: claim ${name} or its IPAddress still there\n${side.log().slice(-3000)}`);
    };
    const countsOf = async (side: Side, poolName: string): Promise<Obj> =>
      rec(rec((await get(side, `${side.poolPath}/${poolName}`))?.['status'])[side.counts]);

    before(async () => {
      if ('skip' in provider) return;
      const cp = await controlPlane();
      await applyCrds(cp, provider.crds);
      const nsH = await createNamespace(cp, 'claims-h');
      const nsU = await createNamespace(cp, 'claims-u');
      controller = startController(nsH, '--claims', nsH.name);
      upstreamChild = spawn(
        provider.bin,
        [
          '--kubeconfig',
          nsU.kubeconfig,
          '--webhook-port=0',
          '--diagnostics-address=0',
          '--health-probe-bind-address=0',
          '--namespace',
          nsU.name,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], env: { HOME: nsU.dir } },
      );
      upstreamChild.stderr?.on('data', (b: Buffer) => (upstreamLog += b.toString()));
      hereabouts = {
        label: 'hereabouts',
        ns: nsH,
        poolGroup: 'hereabouts.cni.cncf.io',
        poolKind: 'AddressPool',
        poolPath: `/apis/hereabouts.cni.cncf.io/v1alpha1/namespaces/${nsH.name}/addresspools`,
        poolApiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
        counts: 'addresses',
        log: () => controller.log(),
      };
      upstream = {
        label: 'upstream',
        ns: nsU,
        poolGroup: 'ipam.cluster.x-k8s.io',
        poolKind: 'InClusterIPPool',
        poolPath: `/apis/ipam.cluster.x-k8s.io/v1alpha2/namespaces/${nsU.name}/inclusterippools`,
        poolApiVersion: 'ipam.cluster.x-k8s.io/v1alpha2',
        counts: 'ipAddresses',
        log: () => upstreamLog,
      };
      await controller.waitForLine((l) => l.msg.startsWith('leading:'), 30_000);
    });

    after(async () => {
      if ('skip' in provider) return;
      await controller.stop();
      if (upstreamChild.exitCode === null && upstreamChild.signalCode === null) {
        const exited = new Promise((resolve) => upstreamChild.once('close', resolve));
        upstreamChild.kill('SIGTERM');
        await exited;
      }
      // Both providers are stopped: their finalizers go by hand.
      for (const side of sides())
        for (const path of [claimPath(side), addressPath(side), side.poolPath])
          for (const item of (rec(await api(side.ns.cp, 'GET', path))['items'] as Obj[] | undefined) ?? []) {
            const object = `${path}/${String(rec(item['metadata'])['name'])}`;
            await apiRequest(
              side.ns.cp,
              'PATCH',
              object,
              { metadata: { finalizers: null } },
              'application/merge-patch+json',
            );
            await apiRequest(side.ns.cp, 'DELETE', object);
          }
      for (const side of sides()) await side.ns.cleanup();
    });

    test('five claims made one after another get equivalent IPAddresses, the lowest free address first on both', async () => {
      const spec = { addresses: ['10.76.0.10-10.76.0.20'], prefix: 24, gateway: '10.76.0.1' };
      for (const side of sides()) await pool(side, 'machines', spec);
      for (let i = 0; i < 5; i++) {
        const name = `m-${i}`;
        const { h, u } = await claimBoth(name, 'machines');
        // The same address on both: the lowest free one (the pool's addresses in order).
        assert.equal(addressOf(h), `10.76.0.${10 + i}`, `hereabouts: ${name}`);
        assert.equal(addressOf(u), `10.76.0.${10 + i}`, `upstream: ${name}`);
        for (const [side, got] of [
          [hereabouts, h],
          [upstream, u],
        ] as const) {
          const what = `${side.label}: ${name}`;
          const addressSpec = rec(got.address['spec']);
          assert.equal(addressSpec['prefix'], 24, what);
          assert.equal(addressSpec['gateway'], '10.76.0.1', what);
          assert.deepEqual(addressSpec['claimRef'], { name }, what);
          assert.deepEqual(
            addressSpec['poolRef'],
            { apiGroup: side.poolGroup, kind: side.poolKind, name: 'machines' },
            what,
          );
          const meta = rec(got.address['metadata']);
          assert.deepEqual(meta['finalizers'], [PROTECT_ADDRESS], what);
          const claimMeta = rec(got.claim['metadata']);
          assert.deepEqual(claimMeta['finalizers'], [RELEASE_ADDRESS], what);
          assert.deepEqual(rec(got.claim['status'])['addressRef'], { name }, what);
          // Owned (and controlled) by its claim on both.
          const owners = (meta['ownerReferences'] as Obj[] | undefined) ?? [];
          assert.deepEqual(
            owners.find((o) => o['kind'] === 'IPAddressClaim'),
            {
              apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
              kind: 'IPAddressClaim',
              name,
              uid: claimMeta['uid'],
              controller: true,
              blockOwnerDeletion: true,
            },
            what,
          );
          if (side === upstream) {
            // Upstream also makes its pool an owner (not the controller).
            const poolOwner = owners.find((o) => o['kind'] === 'InClusterIPPool');
            assert.equal(owners.length, 2, what);
            assert.equal(poolOwner?.['name'], 'machines', what);
            assert.equal(poolOwner['controller'], false, what);
            assert.equal(poolOwner['blockOwnerDeletion'], true, what);
            assert.equal(conditionsOf(got.claim), undefined, `${what}: upstream sets no condition`);
          } else {
            assert.equal(owners.length, 1, `${what}: owned by its claim only`);
            assert.ok(
              String(rec(meta['annotations'])['hereabouts.cni.cncf.io/ippool']).startsWith(
                `hereabouts-claims.ns.${side.ns.name}.8.machines-`,
              ),
              what,
            );
            const ready = (conditionsOf(got.claim) ?? []).find((c) => c['type'] === 'Ready');
            assert.equal(ready?.['reason'], 'Ready', what);
            assert.equal(ready['message'], `10.76.0.${10 + i}/24`, what);
          }
        }
      }
      // The same counts in each pool's status (under a different field name), and each pool's own finalizer.
      for (const side of sides()) {
        const ok = await eventually(async () => {
          const c = await countsOf(side, 'machines');
          return c['total'] === 11 && c['used'] === 5 && c['free'] === 6 && c['outOfRange'] === 0;
        }, 20_000);
        assert.ok(ok, `${side.label}: ${JSON.stringify(await countsOf(side, 'machines'))}`);
      }
      const finalizers = async (side: Side) =>
        rec((await get(side, `${side.poolPath}/machines`))?.['metadata'])['finalizers'];
      assert.deepEqual(await finalizers(hereabouts), ['hereabouts.cni.cncf.io/protect-pool']);
      assert.deepEqual(await finalizers(upstream), ['ipam.cluster.x-k8s.io/ProtectPool']);
      // Events: hereabouts records one per served claim; upstream records none.
      const allocated = (await events(hereabouts.ns)).filter((e) => e.reason === 'AddressAllocated');
      assert.deepEqual(allocated.map((e) => e.involvedObject.name).sort(), ['m-0', 'm-1', 'm-2', 'm-3', 'm-4']);
      assert.deepEqual(await events(upstream.ns), []);
    });

    test('a deleted claim releases its IPAddress, and the next claim gets the freed address on both', async () => {
      for (const side of sides()) await api(side.ns.cp, 'DELETE', claimPath(side, 'm-2'));
      await Promise.all(sides().map((side) => gone(side, 'm-2')));
      const { h, u } = await claimBoth('m-5', 'machines');
      assert.equal(addressOf(h), '10.76.0.12', 'hereabouts reuses the freed address');
      assert.equal(addressOf(u), '10.76.0.12', 'upstream reuses the freed address');
      // The others kept theirs.
      for (const side of sides())
        for (const [name, ip] of [
          ['m-0', '10.76.0.10'],
          ['m-1', '10.76.0.11'],
          ['m-3', '10.76.0.13'],
          ['m-4', '10.76.0.14'],
        ] as const)
          assert.equal(rec((await get(side, addressPath(side, name)))?.['spec'])['address'], ip, side.label);
    });

    test('without allocateReservedIPAddresses neither hands out the network address, the broadcast or the gateway; exhaustion is said by hereabouts only', async () => {
      const spec = { addresses: ['10.76.2.0-10.76.2.3', '10.76.2.255'], prefix: 24, gateway: '10.76.2.1' };
      for (const side of sides()) await pool(side, 'reserved', spec);
      for (const [i, ip] of ['10.76.2.2', '10.76.2.3'].entries()) {
        const { h, u } = await claimBoth(`r-${i}`, 'reserved');
        assert.equal(addressOf(h), ip, 'hereabouts');
        assert.equal(addressOf(u), ip, 'upstream');
      }
      for (const side of sides()) await claim(side, 'r-full', 'reserved');
      let exhausted: Obj | undefined;
      assert.ok(
        await eventually(async () => {
          exhausted = (conditionsOf(await get(hereabouts, claimPath(hereabouts, 'r-full'))) ?? []).find(
            (c) => c['type'] === 'Ready',
          );
          return exhausted?.['status'] === 'False';
        }, 30_000),
      );
      assert.equal(exhausted?.['reason'], 'PoolExhausted');
      // Upstream keeps retrying (its log says "no address available"), and the claim says nothing.
      assert.ok(await eventually(() => upstreamLog.includes('no address available'), 30_000), upstreamLog.slice(-3000));
      await sleep(500);
      const full = await get(upstream, claimPath(upstream, 'r-full'));
      assert.equal(rec(full?.['status'])['addressRef'], undefined);
      assert.equal(conditionsOf(full), undefined);
      assert.equal(await get(upstream, addressPath(upstream, 'r-full')), undefined);
    });

    test('with allocateReservedIPAddresses both hand out the network address and the broadcast, never the gateway', async () => {
      const spec = {
        addresses: ['10.76.1.0-10.76.1.3', '10.76.1.255'],
        prefix: 24,
        gateway: '10.76.1.1',
        allocateReservedIPAddresses: true,
      };
      for (const side of sides()) await pool(side, 'all', spec);
      const got: Record<'hereabouts' | 'upstream', string[]> = { hereabouts: [], upstream: [] };
      for (let i = 0; i < 4; i++) {
        const { h, u } = await claimBoth(`a-${i}`, 'all');
        got.hereabouts.push(addressOf(h));
        got.upstream.push(addressOf(u));
      }
      // Upstream, verified: the network address and the broadcast are handed out, the gateway is not.
      assert.deepEqual(got.upstream, ['10.76.1.0', '10.76.1.2', '10.76.1.3', '10.76.1.255']);
      assert.deepEqual(got.hereabouts, got.upstream);
    });
  },
);
