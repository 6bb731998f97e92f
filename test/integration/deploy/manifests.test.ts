// deploy/ stays valid and in step with the executable: `kubectl apply -k deploy/ --dry-run=server` against the real
// API server, a real apply of the CRDs, and the commands of the DaemonSet and the Deployment accepted by the
// executable they run. (RBAC is applied for real in rbac.test.ts.)
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, type ControlPlane } from '../../support/control-plane.ts';
import { repoRoot, requireBinary } from '../../support/paths.ts';
import { kubectlOf, renderedManifests, type Manifest } from './kubectl.ts';
import { assertAgentSeesHostPaths } from './host-paths.ts';
import { admits, platformLabels, PLATFORMS, type Placement } from './scheduling.ts';

const bin = requireBinary();
const deploy = join(repoRoot, 'deploy');

interface Container {
  name: string;
  image: string;
  command: string[];
  env?: Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec extends Placement {
  serviceAccountName: string;
  containers: Container[];
  volumes?: Array<{ name: string; hostPath?: { path: string } }>;
}

describe('deploy/ manifests', () => {
  let cp: ControlPlane;
  let kubectl: string;
  let objects: Manifest[];
  const run = (...args: string[]): string => execFileSync(kubectl, ['--kubeconfig', cp.kubeconfig, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const find = (kind: string, name: string): Manifest => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    assert.ok(found !== undefined, `${kind}/${name} is in deploy/`);
    return found;
  };
  const podSpec = (kind: string, name: string): PodSpec => (find(kind, name).spec as { template: { spec: PodSpec } }).template.spec;
  before(async () => {
    cp = await controlPlane();
    kubectl = kubectlOf(cp);
    objects = renderedManifests(kubectl, deploy);
  });

  test('kubectl apply -k deploy/ --dry-run=server accepts every object', () => {
    const out = run('apply', '-k', deploy, '--dry-run=server');
    for (const o of objects) {
      const pattern = new RegExp(`^${o.kind.toLowerCase()}(\\.[a-z0-9.]+)?/${o.metadata.name.replaceAll('.', '\\.')} `);
      const line = out.split('\n').find((l) => pattern.test(l));
      assert.ok(line?.endsWith('(server dry run)'), `${o.kind}/${o.metadata.name} in:\n${out}`);
    }
  });

  test('the CRDs apply for real (Whereabouts-compatible definitions, updated in place)', () => {
    for (const crd of ['ippools', 'overlappingrangeipreservations', 'nodeslicepools']) {
      const out = run('apply', '-f', join(deploy, 'crds', `whereabouts.cni.cncf.io_${crd}.yaml`));
      assert.match(out, new RegExp(`customresourcedefinition.apiextensions.k8s.io/${crd}.whereabouts.cni.cncf.io (created|configured|unchanged)`));
    }
  });

  test('everything lives in kube-system, and the NetworkAttachmentDefinition CRD (Multus\') is not applied', () => {
    for (const o of objects) {
      if (o.kind === 'CustomResourceDefinition' || o.kind.startsWith('Cluster') || o.kind.startsWith('ValidatingAdmissionPolicy')) continue;
      assert.equal(o.metadata.namespace, 'kube-system', `${o.kind}/${o.metadata.name}`);
    }
    assert.ok(!objects.some((o) => o.metadata.name === 'network-attachment-definitions.k8s.cni.cncf.io'));
  });

  test('both workloads are scheduled on linux nodes of the image\'s architectures (amd64, arm64), and on no other', () => {
    for (const [kind, name] of [['DaemonSet', 'hereabouts-node'], ['Deployment', 'hereabouts-controller']] as const) {
      const spec = podSpec(kind, name);
      for (const { os, arch, image } of PLATFORMS) assert.equal(admits(spec, platformLabels(os, arch)), image, `${kind}/${name} on ${os}/${arch}`);
    }
  });

  test('both workloads run the image\'s /hereabouts (the Dockerfile\'s COPY target), with the kustomization\'s image', () => {
    assert.match(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'), /^COPY dist\/hereabouts \/hereabouts$/m);
    for (const [kind, name] of [['DaemonSet', 'hereabouts-node'], ['Deployment', 'hereabouts-controller']]) {
      const [container] = podSpec(kind!, name!).containers;
      assert.equal(container?.command[0], '/hereabouts');
      assert.equal(container.image, 'ghcr.io/hereabouts/hereabouts:0.1.0');
    }
  });

  test('the executable accepts the DaemonSet\'s install command, flag for flag', () => {
    const [container] = podSpec('DaemonSet', 'hereabouts-node').containers;
    const out = spawnSync(bin, [...container!.command.slice(1), '--help'], { encoding: 'utf8', env: {} });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /^Usage: hereabouts install/);
  });

  test('an overlay that pins the image by digest, as docs/install.md shows, names it by digest in every pod', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hereabouts-pinned-'));
    try {
      cpSync(deploy, join(dir, 'deploy'), { recursive: true });
      mkdirSync(join(dir, 'pinned'));
      const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
      writeFileSync(
        join(dir, 'pinned', 'kustomization.yaml'),
        `resources:\n  - ../deploy\nimages:\n  - name: ghcr.io/hereabouts/hereabouts\n    digest: ${digest}\n`,
      );
      const pinned = renderedManifests(kubectl, join(dir, 'pinned'));
      const images = pinned.flatMap((o) =>
        ((o.spec as { template?: { spec: PodSpec } } | undefined)?.template?.spec.containers ?? []).map((c) => c.image),
      );
      assert.deepEqual(images, [`ghcr.io/hereabouts/hereabouts@${digest}`, `ghcr.io/hereabouts/hereabouts@${digest}`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the controller's PodDisruptionBudget selects exactly the Deployment's pods, and lets one go at a time", () => {
    const deployment = find('Deployment', 'hereabouts-controller').spec as {
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> } };
    };
    const budget = find('PodDisruptionBudget', 'hereabouts-controller').spec as {
      maxUnavailable?: number;
      minAvailable?: number;
      selector: { matchLabels: Record<string, string> };
    };
    assert.deepEqual(budget.selector, deployment.selector);
    assert.deepEqual(budget.selector.matchLabels, deployment.template.metadata.labels);
    assert.equal(budget.maxUnavailable, 1);
    assert.equal(budget.minAvailable, undefined);
  });

  test('the executable accepts the Deployment\'s controller command, flag for flag', () => {
    const [container] = podSpec('Deployment', 'hereabouts-controller').containers;
    assert.equal(find('Deployment', 'hereabouts-controller').spec['replicas'], 2);
    const out = spawnSync(bin, [...container!.command.slice(1), '--help'], { encoding: 'utf8', env: {} });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /^Usage: hereabouts controller/);
  });

  test('the DaemonSet mounts the host dirs where the installer looks by default and passes NODENAME from spec.nodeName', () => {
    const spec = podSpec('DaemonSet', 'hereabouts-node');
    const [container] = spec.containers;
    const hostPathOf = (mountPath: string): string | undefined => {
      const mount = container?.volumeMounts?.find((m) => m.mountPath === mountPath);
      return spec.volumes?.find((v) => v.name === mount?.name)?.hostPath?.path;
    };
    assert.equal(hostPathOf('/host/opt/cni/bin'), '/opt/cni/bin');
    assert.equal(hostPathOf('/host/etc/cni/net.d'), '/etc/cni/net.d');
    const help = spawnSync(bin, ['install', '--help'], { encoding: 'utf8' }).stdout;
    assert.match(help, /default \/host\/opt\/cni\/bin/);
    assert.match(help, /default \/host\/etc\/cni\/net\.d/);
    assert.deepEqual(container?.env?.find((e) => e.name === 'NODENAME')?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } });
  });

  test('the node agent sees what the host\'s plugin reads and writes at the same paths, and listens where the plugin looks', () => {
    const spec = podSpec('DaemonSet', 'hereabouts-node');
    const [container] = spec.containers;
    for (const path of ['/etc/cni/net.d', '/var/lib/cni', '/run/hereabouts']) {
      const mount = container?.volumeMounts?.find((m) => m.mountPath === path);
      assert.equal(spec.volumes?.find((v) => v.name === mount?.name)?.hostPath?.path, path, `${path} is the host's ${path}`);
    }
    const help = spawnSync(bin, ['install', '--help'], { encoding: 'utf8' }).stdout;
    assert.match(help, /--agent-socket PATH[\s\S]*default \/run\/hereabouts\/agent\.sock/);
  });

  test('every host path in the plugin\'s search order (flat files, nodename files, kubeconfig, data, log, stats, socket) is the host\'s, at the same path, in the agent\'s container', () => {
    assertAgentSeesHostPaths(podSpec('DaemonSet', 'hereabouts-node'));
  });

  test('the DaemonSet rolls by surging: the new installer is up before the old one (whose token the plugin uses) goes', () => {
    const strategy = find('DaemonSet', 'hereabouts-node').spec['updateStrategy'];
    assert.deepEqual(strategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    assert.ok(Number(find('DaemonSet', 'hereabouts-node').spec['minReadySeconds']) >= 5, 'time to write the token before it counts as available');
    // In the host network a declared port is a host port: the scheduler would refuse the surging pod on its node.
    const pod = podSpec('DaemonSet', 'hereabouts-node') as PodSpec & { hostNetwork?: boolean; containers: Array<{ ports?: unknown[] }> };
    assert.equal(pod.hostNetwork, true);
    for (const container of pod.containers) assert.equal(container.ports, undefined, 'no container port: it would block the surge');
  });

  test('the node DaemonSet shares the host\'s pid namespace: its agent and the host\'s plugin processes judge each other\'s locks by pid', () => {
    // Without it, each side sees the other's pids as another namespace's, and a lock holder as one to judge by age.
    const pod = podSpec('DaemonSet', 'hereabouts-node') as PodSpec & { hostPID?: boolean };
    assert.equal(pod.hostPID, true);
  });

  test('the node container requests CPU for an agent that runs the node\'s calls under their pool locks', () => {
    const [container] = podSpec('DaemonSet', 'hereabouts-node').containers as Array<Container & { resources?: { requests?: { cpu?: string } } }>;
    // 10 to 45 ms of agent CPU per ADD (docs/benchmarks.md): a burst of a few ADDs a second needs a tenth of a core.
    assert.equal(container?.resources?.requests?.cpu, '100m');
  });

  test('the platforms the workloads are scheduled on are the ones the release image is built for (scripts/image/multiarch.sh)', () => {
    const script = readFileSync(join(repoRoot, 'scripts', 'image', 'multiarch.sh'), 'utf8');
    const built = [...script.matchAll(/--platform "(\w+)=/g)].map((m) => m[1]).sort();
    assert.deepEqual(built, PLATFORMS.filter((p) => p.image).map((p) => p.arch).sort());
  });

  test('each workload runs as the ServiceAccount its RBAC binds', () => {
    const subjectsOf = (kind: string, name: string): unknown => (find(kind, name) as unknown as { subjects: unknown }).subjects;
    assert.equal(podSpec('DaemonSet', 'hereabouts-node').serviceAccountName, 'hereabouts-node');
    assert.deepEqual(subjectsOf('RoleBinding', 'hereabouts-node'), [{ kind: 'ServiceAccount', name: 'hereabouts-node', namespace: 'kube-system' }]);
    assert.equal(podSpec('Deployment', 'hereabouts-controller').serviceAccountName, 'hereabouts-controller');
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      assert.deepEqual(subjectsOf(kind, 'hereabouts-controller'), [{ kind: 'ServiceAccount', name: 'hereabouts-controller', namespace: 'kube-system' }]);
    }
  });
});
