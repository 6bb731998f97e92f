// The operator commands in a cluster, as `kubectl exec` into the controller's pod runs them: no kubeconfig, the
// ServiceAccount's files at their fixed path (a private mount namespace puts them there for this process only),
// KUBERNETES_SERVICE_HOST/PORT set, and the token of deploy/rbac-controller.yaml's ServiceAccount, applied for real.
// Every command works with exactly that RBAC, and so does the controller.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { repoRoot } from '../../support/paths.ts';
import { allowed, kubectlOf } from '../deploy/kubectl.ts';
import { createNad, createPod, deleteAllPods } from '../controller/harness.ts';
import { allocationsOf, bin, entry, pool, reservation, type Run } from './harness.ts';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

describe("operator commands in a cluster, with the controller's ServiceAccount", () => {
  let ns: Namespace;
  let kubectl: string;
  let overlay: string;
  let files: string;
  let sa: string;
  const kube = (...args: string[]): string =>
    execFileSync(kubectl, ['--kubeconfig', ns.cp.kubeconfig, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  /** `hereabouts <args>` with the ServiceAccount's files mounted where a pod has them, and no kubeconfig anywhere. */
  const inPod = (args: readonly string[], env: NodeJS.ProcessEnv = {}): Run => {
    const script = `mount -t tmpfs none /run && mkdir -p ${SA_DIR} && cp "$0"/* ${SA_DIR}/ && exec "$@"`;
    const url = new URL(ns.cp.url);
    const run = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, files, bin, ...args], {
      encoding: 'utf8',
      env: {
        PATH: '/usr/bin:/bin',
        HOME: join(ns.dir, 'home'),
        KUBERNETES_SERVICE_HOST: url.hostname,
        KUBERNETES_SERVICE_PORT: url.port,
        ...env,
      },
      timeout: 60_000,
    });
    return { code: run.status, stdout: run.stdout, stderr: run.stderr };
  };

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-pod');
    kubectl = kubectlOf(ns.cp);
    overlay = join(ns.dir, 'overlay');
    mkdirSync(overlay);
    mkdirSync(join(ns.dir, 'home'));
    copyFileSync(join(repoRoot, 'deploy', 'rbac-controller.yaml'), join(overlay, 'rbac-controller.yaml'));
    // A name prefix keeps the cluster-wide objects apart from other suites'.
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      `namespace: ${ns.name}\nnamePrefix: ${ns.name}-\nresources: [rbac-controller.yaml]\n`,
    );
    kube('apply', '-k', overlay);
    sa = `${ns.name}-hereabouts-controller`;
    for (
      let i = 0;
      i < 50 && !(await allowed(ns.cp, { namespace: ns.name, name: sa }, { verb: 'list', resource: 'pods' }));
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const token = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/serviceaccounts/${sa}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    })) as { status: { token: string } };
    files = join(ns.dir, 'sa');
    mkdirSync(files);
    writeFileSync(join(files, 'token'), token.status.token);
    writeFileSync(join(files, 'namespace'), ns.name);
    copyFileSync(ns.cp.ca, join(files, 'ca.crt'));

    await createPod(ns, 'web', { phase: 'Running', container: 'running', node: 'node-a' });
    await pool(ns, '10.99.0.0-24', '10.99.0.0/24', { '5': entry(ns, 'web'), '6': entry(ns, 'gone') });
    await reservation(ns, '10.99.0.5', entry(ns, 'web'));
    await reservation(ns, '10.99.0.6', entry(ns, 'gone'));
    await createNad(ns, 'pod-net', { type: 'whereabouts', range: '10.99.0.0/24' });
  });
  after(async () => {
    await api(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    kube('delete', '-k', overlay, '--ignore-not-found');
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test("status, ip, pool, orphans and check read through the ServiceAccount, in the pod's namespace", () => {
    const status = inPod(['status', '-o', 'json']);
    assert.equal(status.code, 0, status.stderr);
    const report = JSON.parse(status.stdout) as { namespace: string; pools: Array<{ name: string; orphans: number }> };
    assert.equal(report.namespace, ns.name);
    assert.deepEqual(
      report.pools.map((p) => [p.name, p.orphans]),
      [['10.99.0.0-24', 1]],
    );
    const ip = inPod(['ip', '10.99.0.5']);
    assert.equal(ip.code, 0, ip.stderr);
    assert.match(ip.stdout, new RegExp(`^10\\.99\\.0\\.5 is held by ${ns.name}/web in IPPool 10\\.99\\.0\\.0-24\\n`));
    assert.match(ip.stdout, /reservation {2}10\.99\.0\.5: agrees with the pool/);
    const poolRun = inPod(['pool', '10.99.0.0-24', '-o', 'json']);
    assert.equal(poolRun.code, 0, poolRun.stderr);
    const orphans = inPod(['orphans', '-o', 'json']);
    assert.equal(orphans.code, 0, orphans.stderr);
    assert.deepEqual(
      (JSON.parse(orphans.stdout) as { allocations: Array<{ address: string }> }).allocations.map((a) => a.address),
      ['10.99.0.6'],
    );
    const check = inPod(['check', '-o', 'json']);
    assert.equal(check.code, 1, check.stderr);
    assert.deepEqual(
      (JSON.parse(check.stdout) as { problems: Array<{ kind: string }> }).problems.map((p) => p.kind),
      ['orphan'],
    );
  });

  test('preflight lists the NADs through the ServiceAccount', () => {
    const run = inPod(['preflight', '-n', ns.name, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as { nads: Array<{ name: string; verdict: string }> };
    assert.deepEqual(
      report.nads.map((n) => [n.name, n.verdict]),
      [['pod-net', 'same']],
    );
  });

  test('release writes through the ServiceAccount: the pool entry and the reservation go', async () => {
    const run = inPod(['release', '10.99.0.6', '--network', '']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^released 10\.99\.0\.6 from IPPool 10\.99\.0\.0-24 .*\nreservation 10\.99\.0\.6: deleted\n$/,
    );
    assert.deepEqual(Object.keys(await allocationsOf(ns, '10.99.0.0-24')), ['5']);
    assert.equal(await ns.get('overlappingrangeipreservations', '10.99.0.6'), undefined);
  });

  test('--context means nothing without a kubeconfig: exit 2', () => {
    const run = inPod(['status', '--context', 'x']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--context needs a kubeconfig/);
  });

  test('the controller in the pod keeps its ServiceAccount first: a $KUBECONFIG in the image does not override it', () => {
    const run = inPod(
      ['controller', '--once', '--metrics-addr', '', '--health-addr', '', '--claims', 'none', '--sticky', 'none'],
      {
        KUBECONFIG: '/nonexistent/kubeconfig',
      },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, new RegExp(`"msg":"controller started".*"namespace":"${ns.name}"`));
    assert.doesNotMatch(run.stderr, /KUBECONFIG|nonexistent/);
  });
});
