// Our CRDs applied over Whereabouts' as its Helm chart installed them, the way docs/migration.md and docs/helm.md say
// (`kubectl apply --server-side -f deploy/helm/hereabouts/crds/`), on a real kube-apiserver of this file's own: Helm
// creates the CRDs of a chart's crds/ directory with a plain create under the field manager "helm", so the apply
// meets fields another manager owns. What it answers, what --force-conflicts then does to the CRDs (ours afterwards,
// field for field) and to the objects already stored (kept), and what `kubectl apply -k deploy/`'s client-side
// apply does instead.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import {
  api,
  apiRequest,
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { repoRoot } from '../../support/paths.ts';
import { kubectlOf } from './kubectl.ts';

const WHEREABOUTS_MODULE = 'github.com/k8snetworkplumbingwg/whereabouts@v0.9.4';
const CRD_API = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const ourCrdDir = join(repoRoot, 'deploy', 'helm', 'hereabouts', 'crds');
const NAMES = ['ippools', 'overlappingrangeipreservations', 'nodeslicepools'].map((p) => `${p}.whereabouts.cni.cncf.io`);
/** The field manager of `kubectl apply --server-side` (kubectl's default; the docs name no other). */
const KUBECTL_MANAGER = 'kubectl';

type Obj = Record<string, unknown>;

/** Whereabouts' Helm chart's CRDs, from its published Go module (the release the docs compare against). */
function whereaboutsChartCrds(): Obj[] {
  const info = execFileSync('go', ['mod', 'download', '-json', WHEREABOUTS_MODULE], {
    cwd: mkdtempSync(join(tmpdir(), 'hereabouts-gomod-')),
    encoding: 'utf8',
  });
  const dir = join((JSON.parse(info) as { Dir: string }).Dir, 'deployment', 'whereabouts-chart', 'crds');
  return readdirSync(dir).map((f) => load(readFileSync(join(dir, f), 'utf8')) as Obj);
}

const ourCrds = (): Obj[] =>
  readdirSync(ourCrdDir).map((f) => load(readFileSync(join(ourCrdDir, f), 'utf8')) as Obj);
const nameOf = (o: Obj): string => (o['metadata'] as { name: string }).name;
const versionsOf = (o: Obj): Obj[] => (o['spec'] as { versions: Obj[] }).versions;

async function waitFor(what: string, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("our CRDs applied over Whereabouts' Helm-installed CRDs", { timeout: 600_000 }, () => {
  let cp: ControlPlane;
  let kubectl: string;
  let ns: Namespace;
  const kube = (...args: string[]) =>
    spawnSync(kubectl, ['--kubeconfig', cp.kubeconfig, ...args], { encoding: 'utf8', timeout: 60_000 });
  const crd = async (name: string): Promise<Obj> => (await api(cp, 'GET', `${CRD_API}/${name}`)) as Obj;

  /** Whereabouts' CRDs as `helm install` leaves them (ours, which start.sh applied, deleted first), and a pool. */
  async function helmInstalledWhereabouts(): Promise<void> {
    for (const name of NAMES) await apiRequest(cp, 'DELETE', `${CRD_API}/${name}`);
    for (const name of NAMES) {
      await waitFor(`${name} gone`, async () => (await apiRequest(cp, 'GET', `${CRD_API}/${name}`)).status === 404);
    }
    for (const object of whereaboutsChartCrds()) await api(cp, 'POST', `${CRD_API}?fieldManager=helm`, object);
    for (const name of NAMES) {
      await waitFor(`${name} Established`, async () => {
        const conditions = ((await crd(name))['status'] as { conditions?: Obj[] } | undefined)?.conditions ?? [];
        return conditions.some((c) => c['type'] === 'Established' && c['status'] === 'True');
      });
    }
    ns = await createNamespace(cp, 'crds');
    await ns.create('ippools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: '10.9.0.0-24' },
      spec: { range: '10.9.0.0/24', allocations: { '1': { id: 'c1', podref: 'default/p1', ifname: 'net1' } } },
    });
    await ns.create('overlappingrangeipreservations', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: '10.9.0.1' },
      spec: { containerid: 'c1', podref: 'default/p1', ifname: 'net1' },
    });
  }

  /** The stored pool and reservation are what Whereabouts wrote. */
  async function objectsKept(): Promise<void> {
    const pool = await ns.get('ippools', '10.9.0.0-24');
    assert.deepEqual(pool?.['spec'], {
      range: '10.9.0.0/24',
      allocations: { '1': { id: 'c1', podref: 'default/p1', ifname: 'net1' } },
    });
    const reservation = await ns.get('overlappingrangeipreservations', '10.9.0.1');
    assert.deepEqual(reservation?.['spec'], { containerid: 'c1', podref: 'default/p1', ifname: 'net1' });
  }

  /** Each CRD now has our versions (schemas, subresources, printer columns) and names, field for field. */
  async function crdsAreOurs(): Promise<void> {
    for (const ours of ourCrds()) {
      const live = await crd(nameOf(ours));
      const liveSpec = live['spec'] as Obj;
      const ourSpec = ours['spec'] as Obj;
      assert.deepEqual(liveSpec['names'], { ...(ourSpec['names'] as Obj) }, `${nameOf(ours)} names`);
      assert.deepEqual(versionsOf(live), versionsOf(ours), `${nameOf(ours)} versions`);
    }
  }

  /** hereabouts' own fields are kept now (Whereabouts' schema prunes them), and IPPool status is a subresource. */
  async function hereaboutsFieldsKept(): Promise<void> {
    const path = ns.path('ippools', '10.9.0.0-24');
    const extra = { id: 'c2', podref: 'default/p2', ifname: 'net1', node: 'n1', podUid: 'u2', createdAt: '2026-01-01T00:00:00Z' };
    await api(cp, 'PATCH', path, { spec: { allocations: { '2': extra } } }, 'application/merge-patch+json');
    const pool = (await ns.get('ippools', '10.9.0.0-24')) as { spec: { allocations: Obj } };
    assert.deepEqual(pool.spec.allocations['2'], extra);
    const status = await apiRequest(cp, 'GET', `${path}/status`);
    assert.equal(status.status, 200, JSON.stringify(status.body));
  }

  before(async () => {
    cp = await privateControlPlane();
    kubectl = kubectlOf(cp);
  });
  // (A failed start leaves nothing to stop: control-plane.ts stops what it started when the process exits.)
  after(() => stopControlPlane(cp));

  test('`kubectl apply --server-side` alone conflicts with the fields Helm created, and changes nothing', async () => {
    await helmInstalledWhereabouts();
    const before = await Promise.all(NAMES.map(async (n) => ((await crd(n))['metadata'] as Obj)['resourceVersion']));
    // The API's answer to the apply kubectl sends (one CRD), with the field manager kubectl uses.
    const [ippools] = ourCrds().filter((o) => nameOf(o) === NAMES[0]);
    const answer = await apiRequest(
      cp,
      'PATCH',
      `${CRD_API}/${NAMES[0]}?fieldManager=${KUBECTL_MANAGER}`,
      ippools,
      'application/apply-patch+yaml',
    );
    assert.equal(answer.status, 409, JSON.stringify(answer.body));
    const causes = (answer.body as { details: { causes: Array<{ message: string; field: string }> } }).details.causes;
    // A CRD's versions are one atomic list: the whole of it is Helm's, and it is exactly what must change.
    assert.deepEqual(
      causes.map((c) => [c.field, c.message]),
      [['.spec.versions', 'conflict with "helm" using apiextensions.k8s.io/v1']],
    );
    // The command the docs give, as they give it.
    const out = kube('apply', '--server-side', '-f', ourCrdDir);
    assert.notEqual(out.status, 0, out.stdout);
    assert.match(out.stderr, /Apply failed with 1 conflict: conflict with "helm" using apiextensions\.k8s\.io\/v1: \.spec\.versions/);
    assert.match(out.stderr, /--force-conflicts/);
    const now = await Promise.all(NAMES.map(async (n) => ((await crd(n))['metadata'] as Obj)['resourceVersion']));
    assert.deepEqual(now, before, 'a refused apply changes nothing');
    await assert.rejects(crdsAreOurs(), /names|versions/, "the CRDs are still Whereabouts'");
    await objectsKept();
  });

  test('`kubectl apply --server-side --force-conflicts` makes the CRDs ours and keeps every stored object', async () => {
    await helmInstalledWhereabouts();
    const out = kube('apply', '--server-side', '--force-conflicts', '-f', ourCrdDir);
    assert.equal(out.status, 0, out.stderr);
    for (const name of NAMES) assert.match(out.stdout, new RegExp(`customresourcedefinition.apiextensions.k8s.io/${name} serverside-applied`));
    await crdsAreOurs();
    await objectsKept();
    // kubectl now owns the versions; Helm keeps what only it set (an annotation of Whereabouts' generator, inert) and
    // co-owns the names it set to the same values.
    for (const name of NAMES) {
      const meta = (await api(cp, 'GET', `${CRD_API}/${name}`)) as { metadata: { annotations?: Obj; managedFields: Obj[] } };
      const owned = (manager: string): string =>
        JSON.stringify(meta.metadata.managedFields.find((m) => m['manager'] === manager)?.['fieldsV1'] ?? {});
      assert.match(owned(KUBECTL_MANAGER), /"f:versions"/, name);
      assert.doesNotMatch(owned('helm'), /"f:versions"/, name);
      assert.deepEqual(meta.metadata.annotations, { 'controller-gen.kubebuilder.io/version': 'v0.20.0' }, name);
    }
    // The next upgrade's apply needs no force, and the force the docs keep in the command changes nothing.
    for (const force of [[], ['--force-conflicts']]) {
      const again = kube('apply', '--server-side', ...force, '-f', ourCrdDir);
      assert.equal(again.status, 0, again.stderr);
    }
    await crdsAreOurs();
    await objectsKept();
    await hereaboutsFieldsKept();
  });

  test("`kubectl apply -k deploy/`'s client-side apply of the CRDs also replaces Whereabouts' definitions and keeps the objects", async () => {
    await helmInstalledWhereabouts();
    const out = kube('apply', ...readdirSync(ourCrdDir).flatMap((f) => ['-f', join(repoRoot, 'deploy', 'crds', f)]));
    assert.equal(out.status, 0, out.stderr);
    await crdsAreOurs();
    await objectsKept();
    await hereaboutsFieldsKept();
  });
});
