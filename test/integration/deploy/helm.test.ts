// The Helm chart (deploy/helm/hereabouts): lint, package, the same objects as `kubectl kustomize deploy/` with
// default values, every value rendering what it says (commands checked against the executable's own flag parser),
// and the rendered chart accepted by the real API server (server-side dry run).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { controlPlane, createNamespace, type ControlPlane, type Namespace } from '../../support/control-plane.ts';
import { repoRoot, requireBinary } from '../../support/paths.ts';
import { chartDir, helm, helmBinary, HELM_LABELS, keyOf, template, templateYaml, withoutHelmLabels } from './helm.ts';
import { kubectlOf, renderedManifests, type Manifest } from './kubectl.ts';
import { assertAgentSeesHostPaths, type NodePodSpec } from './host-paths.ts';
import { admits, platformLabels, PLATFORMS, type Placement } from './scheduling.ts';

const bin = requireBinary();

interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  command: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  livenessProbe?: unknown;
  readinessProbe?: unknown;
  resources?: unknown;
  securityContext?: Record<string, unknown>;
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: Container[];
    tolerations?: unknown;
    nodeSelector?: unknown;
    affinity?: unknown;
    priorityClassName?: string;
    imagePullSecrets?: unknown;
    volumes?: Array<{ name: string; hostPath?: { path: string } }>;
  };
}

const find = (objects: Manifest[], kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found !== undefined, `${kind}/${name} is rendered`);
  return found;
};
const podOf = (objects: Manifest[], kind: string, name: string): PodTemplate => (find(objects, kind, name).spec as { template: PodTemplate }).template;
const nodePod = (objects: Manifest[]): PodTemplate => podOf(objects, 'DaemonSet', 'hereabouts-node');
const controllerPod = (objects: Manifest[]): PodTemplate => podOf(objects, 'Deployment', 'hereabouts-controller');
const commandOf = (pod: PodTemplate): string[] => pod.spec.containers[0]!.command;

/** The executable's own parser accepts the command (flag names and, for the controller, values read with --help last). */
function assertAccepted(command: string[]): void {
  assert.equal(command[0], '/hereabouts');
  const out = spawnSync(bin, [...command.slice(1), '--help'], { encoding: 'utf8', env: {} });
  assert.equal(out.status, 0, `${command.join(' ')}: ${out.stderr}`);
}

describe('Helm chart deploy/helm/hereabouts', () => {
  let helmBin: string;
  let kubectl: string;
  let cp: ControlPlane;
  let defaults: Manifest[];
  before(async () => {
    helmBin = helmBinary();
    cp = await controlPlane();
    kubectl = kubectlOf(cp);
    defaults = template(helmBin);
  });

  test('helm lint --strict passes, with default values and with every toggle on', () => {
    for (const args of [[], ['--set', 'monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true,monitoring.prometheusRule.enabled=true,migration.enabled=false,sticky.enabled=true']]) {
      const out = helm(helmBin, 'lint', '--strict', chartDir, ...args);
      assert.equal(out.status, 0, out.stdout + out.stderr);
      assert.match(out.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  test('helm package makes an OCI-ready chart archive (apiVersion v2, version, appVersion)', () => {
    const chart = load(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    assert.equal(chart['apiVersion'], 'v2');
    assert.match(chart['version']!, /^\d+\.\d+\.\d+/);
    assert.equal(chart['appVersion'], (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version);
    const dir = mkdtempSync(join(tmpdir(), 'hereabouts-helm-package-'));
    try {
      const out = helm(helmBin, 'package', chartDir, '--destination', dir);
      assert.equal(out.status, 0, out.stderr);
      const archive = join(dir, `hereabouts-${chart['version']}.tgz`);
      assert.deepEqual(readdirSync(dir), [`hereabouts-${chart['version']}.tgz`]);
      const listing = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n');
      for (const file of ['Chart.yaml', 'values.yaml', 'templates/controller.yaml', 'crds/whereabouts.cni.cncf.io_ippools.yaml', 'files/alerts.yaml']) {
        assert.ok(listing.includes(`hereabouts/${file}`), `${file} in ${listing.join(' ')}`);
      }
      // The packaged chart renders exactly what the directory does.
      const fromArchive = helm(helmBin, 'template', 'hereabouts', archive, '--include-crds');
      assert.equal(fromArchive.status, 0, fromArchive.stderr);
      assert.equal(fromArchive.stdout, templateYaml(helmBin).replaceAll(chartDir, archive));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('default values render the same objects as kubectl kustomize deploy/ (Helm\'s bookkeeping labels aside)', () => {
    const kustomized = renderedManifests(kubectl, join(repoRoot, 'deploy'));
    const byKey = (list: Manifest[]): Map<string, Manifest> => new Map(list.map((o) => [keyOf(o), o]));
    const fromHelm = byKey(defaults.map(withoutHelmLabels));
    const fromKustomize = byKey(kustomized);
    assert.deepEqual([...fromHelm.keys()].sort(), [...fromKustomize.keys()].sort());
    for (const [key, object] of fromKustomize) assert.deepEqual(fromHelm.get(key), object, key);
    // ...and the labels set aside are only Helm's, on object metadata.
    for (const o of defaults) {
      const labels = (o.metadata as { labels?: Record<string, string> }).labels ?? {};
      const extra = Object.keys(labels).filter((k) => !(k in ((fromKustomize.get(keyOf(o))?.metadata as { labels?: object }).labels ?? {})));
      if (o.kind !== 'CustomResourceDefinition') assert.deepEqual(extra.sort(), [...HELM_LABELS].sort(), keyOf(o));
    }
  });

  test('the chart\'s CRDs are deploy/crds/, byte for byte, and only in crds/ (never templated, so never deleted by helm uninstall)', () => {
    const withoutCrds = helm(helmBin, 'template', 'hereabouts', chartDir);
    assert.equal(withoutCrds.status, 0, withoutCrds.stderr);
    assert.doesNotMatch(withoutCrds.stdout, /kind: CustomResourceDefinition/);
    // Whereabouts' three and hereabouts' own pool kinds and PrefixClaim (the NAD CRD in deploy/crds/ is Multus', for tests).
    const ours = readdirSync(join(repoRoot, 'deploy', 'crds')).filter((f) => f.startsWith('whereabouts.') || f.startsWith('hereabouts.'));
    assert.equal(defaults.filter((o) => o.kind === 'CustomResourceDefinition').length, 6);
    for (const file of ours) {
      assert.equal(readFileSync(join(chartDir, 'crds', file), 'utf8'), readFileSync(join(repoRoot, 'deploy', 'crds', file), 'utf8'), file);
    }
    assert.deepEqual(readdirSync(join(chartDir, 'crds')).sort(), ours.sort());
  });

  test('image: repository, tag, digest, pull policy and pull secrets reach both workloads', () => {
    const tagged = template(helmBin, { image: { repository: 'registry.example/ipam/hereabouts', tag: '9.9.9', pullPolicy: 'Always', pullSecrets: [{ name: 'regcred' }] } });
    const pinned = template(helmBin, { image: { digest: `sha256:${'a'.repeat(64)}` } });
    for (const pod of [nodePod(tagged), controllerPod(tagged)]) {
      assert.equal(pod.spec.containers[0]!.image, 'registry.example/ipam/hereabouts:9.9.9');
      assert.equal(pod.spec.containers[0]!.imagePullPolicy, 'Always');
      assert.deepEqual(pod.spec.imagePullSecrets, [{ name: 'regcred' }]);
    }
    for (const pod of [nodePod(pinned), controllerPod(pinned)]) assert.equal(pod.spec.containers[0]!.image, `ghcr.io/hereabouts/hereabouts@sha256:${'a'.repeat(64)}`);
    for (const pod of [nodePod(defaults), controllerPod(defaults)]) assert.equal(pod.spec.containers[0]!.imagePullPolicy, undefined);
  });

  test('namespace: every namespaced object and every binding subject moves; empty means the release namespace', () => {
    // sticky.enabled: its ClusterRoleBinding's subject moves too.
    for (const [values, args, want] of [[{ namespace: 'ipam', sticky: { enabled: true } }, [], 'ipam'], [{ namespace: '', sticky: { enabled: true } }, ['--namespace', 'rel-ns'], 'rel-ns']] as const) {
      const objects = template(helmBin, values, ...args);
      for (const o of objects) {
        const clusterScoped = o.kind === 'CustomResourceDefinition' || o.kind.startsWith('Cluster') || o.kind.startsWith('ValidatingAdmissionPolicy');
        assert.equal(o.metadata.namespace, clusterScoped ? undefined : want, keyOf(o));
        for (const s of (o as unknown as { subjects?: Array<{ namespace: string }> }).subjects ?? []) assert.equal(s.namespace, want, keyOf(o));
      }
    }
  });

  test('controller.flags holds every flag of `hereabouts controller --help`, and null leaves a flag out', () => {
    const usage = spawnSync(bin, ['controller', '--help'], { encoding: 'utf8' }).stdout;
    const flags = [...usage.matchAll(/^\s+(?:-\w, )?--([a-z-]+)/gm)].map((m) => m[1]!).filter((f) => f !== 'help');
    assert.ok(flags.length >= 18, usage);
    const values = load(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as { controller: { flags: Record<string, unknown> } };
    assert.deepEqual(Object.keys(values.controller.flags).sort(), [...flags].sort());
    // Defaults: exactly the four flags deploy/controller.yaml passes.
    assert.deepEqual(commandOf(controllerPod(defaults)).slice(2), ['--leader-elect-namespace=$(POD_NAMESPACE)', '--identity=$(POD_NAME)', '--metrics-addr=:9090', '--health-addr=:8080']);
  });

  test('every controller flag set in values is passed, and the executable accepts the command', () => {
    const set: Record<string, unknown> = {
      kubeconfig: '/etc/hereabouts/kubeconfig', namespace: 'ipam', 'leader-elect-namespace': 'ipam', 'leader-elect-name': 'ipam-lease',
      'lease-duration': '30s', 'renew-deadline': '20s', 'retry-period': '4s', identity: 'one', 'reconcile-interval': '1m',
      'cleanup-terminating': true, 'cleanup-disrupted': false, 'verify-network-status': false, 'pending-grace': '10m',
      'reservation-grace': '2m', 'sticky-grace': '10m', 'pool-status': false, claims: 'ipam,machines', 'metrics-addr': ':9191', 'health-addr': ':8181', 'log-level': 'debug', once: true,
    };
    const objects = template(helmBin, { controller: { flags: set, extraArgs: ['--log-level=warning'] } });
    const command = commandOf(controllerPod(objects));
    for (const [flag, value] of Object.entries(set)) {
      assert.ok(command.includes(flag === 'once' ? '--once' : `--${flag}=${String(value)}`), `--${flag} in ${command.join(' ')}`);
    }
    assert.equal(command.at(-1), '--log-level=warning');
    assertAccepted(command);
    // The ports, probes and scrape annotations follow the address flags; the Role's Lease rule follows the name.
    const pod = controllerPod(objects);
    assert.deepEqual(pod.spec.containers[0]!.ports, [{ name: 'metrics', containerPort: 9191 }, { name: 'health', containerPort: 8181 }]);
    assert.equal(pod.metadata.annotations?.['prometheus.io/port'], '9191');
    const rules = (find(objects, 'Role', 'hereabouts-controller') as unknown as { rules: Array<{ resources: string[]; resourceNames?: string[] }> }).rules;
    assert.deepEqual(rules.find((r) => r.resources.includes('leases') && r.resourceNames !== undefined)?.resourceNames, ['ipam-lease']);
  });

  test('sticky.enabled renders deploy/sticky/\'s ClusterRole and binding (the node may read pods); off by default', () => {
    const names = (objects: Manifest[]): string[] => objects.filter((o) => o.metadata.name === 'hereabouts-node-pods').map(keyOf);
    assert.deepEqual(names(defaults), []);
    assert.deepEqual(names(template(helmBin, { sticky: { enabled: false } })), []);
    const on = template(helmBin, { sticky: { enabled: true } });
    const fromKustomize = renderedManifests(kubectl, join(repoRoot, 'deploy', 'sticky'));
    assert.deepEqual(fromKustomize.map(keyOf).sort(), ['ClusterRole//hereabouts-node-pods', 'ClusterRoleBinding//hereabouts-node-pods']);
    for (const object of fromKustomize) assert.deepEqual(withoutHelmLabels(find(on, object.kind, object.metadata.name)), object, keyOf(object));
    // Nothing else changes.
    assert.deepEqual(on.filter((o) => o.metadata.name !== 'hereabouts-node-pods'), defaults);
    assert.throws(() => template(helmBin, { sticky: { enabled: 'yes' } }), /\/sticky\/enabled/);
  });

  test('a controller.flags key that is no flag of the executable fails the rendering, naming it (schema, and the template without it)', () => {
    const typo = { controller: { flags: { 'reconcile-intervall': '1m' } } };
    assert.throws(() => template(helmBin, typo), /additional properties 'reconcile-intervall' not allowed/);
    assert.throws(() => template(helmBin, typo, '--skip-schema-validation'), /controller\.flags\.reconcile-intervall is not a flag of hereabouts controller/);
  });

  test('values.schema.json refuses values of the wrong type or unknown keys, naming them', () => {
    for (const [values, message] of [
      [{ image: { pullPolicy: 'Sometimes' } }, /\/image\/pullPolicy/],
      [{ controller: { replicas: 'two' } }, /\/controller\/replicas/],
      [{ controller: { flags: { 'cleanup-terminating': 'yes' } } }, /\/controller\/flags\/cleanup-terminating/],
      [{ controller: { flags: { 'log-level': 'verbose' } } }, /\/controller\/flags\/log-level/],
      [{ node: { hostPaths: { cniBinDir: 'opt/cni/bin' } } }, /\/node\/hostPaths\/cniBinDir/],
      [{ monitoring: { serviceMonitr: { enabled: true } } }, /serviceMonitr/],
    ] as const) {
      assert.throws(() => template(helmBin, values), message, JSON.stringify(values));
    }
    // Durations may be numbers (bare seconds), as `--set controller.flags.lease-duration=30` makes them.
    assert.ok(commandOf(controllerPod(template(helmBin, { controller: { flags: { 'lease-duration': 30 } } }))).includes('--lease-duration=30'));
  });

  test('replicas, update strategy, grace period and SELinux options', () => {
    const objects = template(helmBin, {
      controller: { replicas: 3 },
      node: { updateStrategy: { type: 'OnDelete' }, terminationGracePeriodSeconds: 30, seLinuxOptions: { type: 'spc_t' } },
    });
    assert.equal(find(objects, 'Deployment', 'hereabouts-controller').spec['replicas'], 3);
    assert.deepEqual(find(objects, 'DaemonSet', 'hereabouts-node').spec['updateStrategy'], { type: 'OnDelete' });
    const pod = nodePod(objects) as PodTemplate & { spec: { terminationGracePeriodSeconds?: number } };
    assert.equal(pod.spec.terminationGracePeriodSeconds, 30);
    assert.deepEqual(pod.spec.containers[0]!.securityContext?.['seLinuxOptions'], { type: 'spc_t' });
    assert.equal(nodePod(defaults).spec.containers[0]!.securityContext?.['seLinuxOptions'], undefined);
  });

  test('empty metrics-addr and health-addr drop the ports, the scrape annotations and the probes; a ServiceMonitor then refuses', () => {
    const objects = template(helmBin, { controller: { flags: { 'metrics-addr': '', 'health-addr': '' } } });
    const pod = controllerPod(objects);
    const container = pod.spec.containers[0]!;
    assert.equal(container.ports, undefined);
    assert.equal(container.livenessProbe, undefined);
    assert.equal(container.readinessProbe, undefined);
    assert.equal(pod.metadata.annotations, undefined);
    assert.ok(commandOf(pod).includes('--metrics-addr='));
    assertAccepted(commandOf(pod));
    assert.throws(() => template(helmBin, { controller: { flags: { 'metrics-addr': '' } }, monitoring: { serviceMonitor: { enabled: true } } }), /needs controller\.flags\.metrics-addr/);
  });

  test('by default both workloads are scheduled on linux nodes of the image\'s architectures (amd64, arm64), and on no other', () => {
    for (const pod of [nodePod(defaults), controllerPod(defaults)]) {
      for (const { os, arch, image } of PLATFORMS) assert.equal(admits(pod.spec as Placement, platformLabels(os, arch)), image, `${os}/${arch}`);
    }
  });

  test('the architecture rule is overridable: nodeAffinity null drops it, other terms replace it, a podAntiAffinity replaces the spread', () => {
    const anyArch = template(helmBin, { node: { affinity: { nodeAffinity: null } }, controller: { affinity: { nodeAffinity: null } } });
    for (const pod of [nodePod(anyArch), controllerPod(anyArch)]) {
      for (const { os, arch } of PLATFORMS) assert.equal(admits(pod.spec as Placement, platformLabels(os, arch)), os === 'linux', `${os}/${arch}`);
    }
    assert.ok((controllerPod(anyArch).spec.affinity as Record<string, unknown>)['podAntiAffinity'] !== undefined, 'replicas still spread');
    const arm = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }] }] } } };
    const own = { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'controller' } } }] } };
    const armOnly = template(helmBin, { node: { affinity: arm }, controller: { affinity: { ...arm, ...own } } });
    for (const pod of [nodePod(armOnly), controllerPod(armOnly)]) {
      for (const { os, arch } of PLATFORMS) assert.equal(admits(pod.spec as Placement, platformLabels(os, arch)), os === 'linux' && arch === 'arm64', `${os}/${arch}`);
    }
    assert.deepEqual(controllerPod(armOnly).spec.affinity, { ...arm, ...own });
  });

  test('resources, tolerations, nodeSelector, affinity, priority class and pod annotations of each workload', () => {
    const shape = { resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '2Gi' } }, tolerations: [{ key: 'ipam', operator: 'Exists', effect: 'NoSchedule' }], nodeSelector: { 'example.com/ipam': 'yes' }, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'ipam', operator: 'In', values: ['yes'] }] }] } } }, priorityClassName: 'high', podAnnotations: { team: 'net' } };
    const objects = template(helmBin, { node: shape, controller: shape });
    for (const pod of [nodePod(objects), controllerPod(objects)]) {
      assert.deepEqual(pod.spec.containers[0]!.resources, shape.resources);
      assert.deepEqual(pod.spec.tolerations, shape.tolerations);
      // Helm merges a given map into the default one: the platform selector stays unless set to null.
      assert.deepEqual(pod.spec.nodeSelector, { 'kubernetes.io/os': 'linux', ...shape.nodeSelector });
      assert.equal(pod.spec.priorityClassName, 'high');
      assert.equal(pod.metadata.annotations?.['team'], 'net');
    }
    // Given nodeSelectorTerms replace the default ones (a list); the controller still spreads its replicas.
    assert.deepEqual(nodePod(objects).spec.affinity, shape.affinity);
    assert.deepEqual(controllerPod(objects).spec.affinity, { ...shape.affinity, podAntiAffinity: (controllerPod(defaults).spec.affinity as { podAntiAffinity: unknown }).podAntiAffinity });
    assert.equal(controllerPod(objects).metadata.annotations?.['prometheus.io/scrape'], 'true');
    // Cleared lists leave the keys out rather than rendering empty ones.
    const cleared = template(helmBin, { node: { tolerations: [], priorityClassName: '' } });
    assert.equal(nodePod(cleared).spec.tolerations, undefined);
    assert.equal(nodePod(cleared).spec.priorityClassName, undefined);
  });

  test('migration.enabled (default) keeps Whereabouts\' names on the nodes; false installs only hereabouts\'', () => {
    assert.deepEqual(commandOf(nodePod(defaults)), ['/hereabouts', 'install', '--whereabouts-name', '--whereabouts-kubeconfig', '--metrics-addr=:9546']);
    const fresh = commandOf(nodePod(template(helmBin, { migration: { enabled: false }, node: { extraArgs: ['--log-level=debug'] } })));
    assert.deepEqual(fresh, ['/hereabouts', 'install', '--metrics-addr=:9546', '--log-level=debug']);
    assertAccepted(fresh);
    assertAccepted(commandOf(nodePod(defaults)));
    const help = spawnSync(bin, ['install', '--help'], { encoding: 'utf8' }).stdout;
    assert.match(help, /--whereabouts-name\s+also install the executable as "whereabouts"/);
    assert.match(help, /--whereabouts-kubeconfig\s+also keep whereabouts\.d\/whereabouts\.kubeconfig/);
  });

  test('admissionPolicy: on by default (deploy/admission-policy.yaml\'s objects), validationActions reach the binding, false renders neither', () => {
    const policy = find(defaults, 'ValidatingAdmissionPolicy', 'hereabouts-ipam-config');
    assert.equal((policy.spec as { failurePolicy: string }).failurePolicy, 'Ignore');
    assert.deepEqual(find(defaults, 'ValidatingAdmissionPolicyBinding', 'hereabouts-ipam-config').spec, { policyName: 'hereabouts-ipam-config', validationActions: ['Deny'] });
    const warn = template(helmBin, { admissionPolicy: { validationActions: ['Warn', 'Audit'] } });
    assert.deepEqual(find(warn, 'ValidatingAdmissionPolicyBinding', 'hereabouts-ipam-config').spec['validationActions'], ['Warn', 'Audit']);
    const off = template(helmBin, { admissionPolicy: { enabled: false } });
    assert.deepEqual(off.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy')), []);
    assert.throws(() => template(helmBin, { admissionPolicy: { validationActions: ['Reject'] } }), /\/admissionPolicy\/validationActions/);
  });

  test('admissionPolicy on a cluster older than 1.31 fails the rendering, naming the value that turns it off', () => {
    assert.throws(() => template(helmBin, {}, '--kube-version', '1.30.4'), /admissionPolicy\.enabled needs Kubernetes 1\.31 or later .*not v1\.30\.4: set admissionPolicy\.enabled=false/);
    assert.ok(!template(helmBin, { admissionPolicy: { enabled: false } }, '--kube-version', '1.30.4').some((o) => o.kind.startsWith('ValidatingAdmissionPolicy')));
    assert.ok(template(helmBin, {}, '--kube-version', '1.31.0').some((o) => o.kind === 'ValidatingAdmissionPolicy'));
  });

  test('node.hostPaths move the host dirs and tell the installer the host\'s view of the conf dir', () => {
    const pod = nodePod(template(helmBin, { node: { hostPaths: { cniBinDir: '/var/lib/cni/bin', cniConfDir: '/var/lib/cni/net.d' } } }));
    // Both standard CNI config dirs stay mounted read-only: the plugin on the host searches them whatever the conf dir.
    assert.deepEqual(pod.spec.volumes?.map((v) => v.hostPath?.path), ['/var/lib/cni/bin', '/var/lib/cni/net.d', '/var/lib/hereabouts/stats', '/var/log', '/var/lib/cni', '/run/hereabouts', '/etc/kubernetes/cni/net.d', '/etc/cni/net.d']);
    // The node agent reads the conf dir where the host's plugin does.
    const mounts = (pod.spec.containers[0] as unknown as { volumeMounts: Array<{ name: string; mountPath: string }> }).volumeMounts;
    const confVolume = pod.spec.volumes.find((v) => v.hostPath?.path === '/var/lib/cni/net.d')?.name;
    assert.ok(mounts.some((m) => m.name === confVolume && m.mountPath === '/var/lib/cni/net.d'));
    assert.ok(commandOf(pod).includes('--host-cni-conf-dir=/var/lib/cni/net.d'));
    assertAccepted(commandOf(pod));
  });

  test('the node DaemonSet shares the host\'s pid namespace whatever the values (no value turns it off)', () => {
    const changed = template(helmBin, { node: { hostPaths: { cniConfDir: '/etc/kubernetes/cni/net.d' }, resources: { requests: { cpu: '1' } }, podAnnotations: { a: 'b' } }, migration: { enabled: false } });
    for (const objects of [defaults, changed]) assert.equal((nodePod(objects).spec as { hostPID?: boolean }).hostPID, true);
    assert.deepEqual((nodePod(defaults).spec.containers[0]!.resources as { requests: unknown }).requests, { cpu: '100m', memory: '32Mi' });
  });

  test('the node agent sees every host path of the plugin\'s search order at the same path, wherever node.hostPaths.cniConfDir is', () => {
    for (const cniConfDir of [undefined, '/etc/kubernetes/cni/net.d', '/var/lib/cni/net.d']) {
      const objects = cniConfDir === undefined ? defaults : template(helmBin, { node: { hostPaths: { cniConfDir } } });
      assertAgentSeesHostPaths(nodePod(objects).spec as unknown as NodePodSpec);
    }
  });

  test('monitoring.serviceMonitor renders a headless Service and a ServiceMonitor that find the controller\'s metrics port', () => {
    assert.ok(!defaults.some((o) => o.kind === 'ServiceMonitor' || o.kind === 'Service' || o.kind === 'PrometheusRule'));
    const objects = template(helmBin, { monitoring: { serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'kps' } } } });
    const service = find(objects, 'Service', 'hereabouts-controller-metrics').spec as { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string }> };
    const pod = controllerPod(objects);
    assert.deepEqual(service.selector, pod.metadata.labels);
    assert.deepEqual(service.ports, [{ name: 'metrics', port: 9090, targetPort: 'metrics' }]);
    assert.ok(pod.spec.containers[0]!.ports?.some((p) => p.name === 'metrics' && p.containerPort === 9090));
    const monitor = find(objects, 'ServiceMonitor', 'hereabouts-controller') as unknown as { metadata: { labels: Record<string, string> }; spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; interval: string }>; namespaceSelector: { matchNames: string[] } } };
    assert.equal(monitor.metadata.labels['release'], 'kps');
    assert.deepEqual(monitor.spec.selector.matchLabels, pod.metadata.labels);
    assert.deepEqual(monitor.spec.endpoints, [{ port: 'metrics', path: '/metrics', interval: '15s' }]);
    assert.deepEqual(monitor.spec.namespaceSelector.matchNames, ['kube-system']);
  });

  test('the node DaemonSet serves its CNI metrics (node.metricsAddr), and monitoring.podMonitor scrapes that port', () => {
    const container = nodePod(defaults).spec.containers[0]!;
    assert.ok(container.command.includes('--metrics-addr=:9546'), container.command.join(' '));
    assertAccepted(container.command);
    assert.equal(container.ports, undefined, 'no container port: in the host network it would block the surging pod');
    // The plugin's stats directory and the host's /var/log (for the log file's rotation) are mounted.
    const volumes = nodePod(defaults).spec.volumes ?? [];
    assert.ok(volumes.some((v) => v.hostPath?.path === '/var/lib/hereabouts/stats'));
    assert.ok(volumes.some((v) => v.hostPath?.path === '/var/log'));
    assert.ok(!defaults.some((o) => o.kind === 'PodMonitor'));
    const objects = template(helmBin, { node: { metricsAddr: ':9600' }, monitoring: { podMonitor: { enabled: true, interval: '15s', labels: { release: 'kps' } } } });
    const pod = nodePod(objects);
    // No ports entry: in the host network it is a host port, and the surge update's new pod could not be scheduled.
    assert.equal(pod.spec.containers[0]!.ports, undefined);
    assert.ok(pod.spec.containers[0]!.command.includes('--metrics-addr=:9600'));
    const monitor = find(objects, 'PodMonitor', 'hereabouts-node') as unknown as { metadata: { labels: Record<string, string> }; spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Array<{ portNumber: number; path: string; interval: string }> } };
    assert.equal(monitor.metadata.labels['release'], 'kps');
    assert.deepEqual(monitor.spec.selector.matchLabels, pod.metadata.labels);
    assert.deepEqual(monitor.spec.podMetricsEndpoints, [{ portNumber: 9600, path: '/metrics', interval: '15s' }]);
    // Off: no flag, no port, and a PodMonitor would have nothing to scrape.
    const off = nodePod(template(helmBin, { node: { metricsAddr: '' } })).spec.containers[0]!;
    assert.ok(!off.command.some((a) => a.startsWith('--metrics-addr')));
    assert.equal(off.ports, undefined);
    assert.throws(() => template(helmBin, { node: { metricsAddr: '' }, monitoring: { podMonitor: { enabled: true } } }), /podMonitor\.enabled needs node\.metricsAddr/);
  });

  test('monitoring.prometheusRule renders deploy/monitoring/prometheusrule.yaml\'s rules, unchanged by templating', () => {
    const objects = template(helmBin, { monitoring: { prometheusRule: { enabled: true, labels: { release: 'kps' } } } });
    const rendered = find(objects, 'PrometheusRule', 'hereabouts') as unknown as { metadata: { labels: Record<string, string> }; spec: unknown };
    const shipped = load(readFileSync(join(repoRoot, 'deploy', 'monitoring', 'prometheusrule.yaml'), 'utf8')) as { spec: unknown };
    assert.deepEqual(rendered.spec, shipped.spec);
    assert.equal(rendered.metadata.labels['release'], 'kps');
    assert.match(JSON.stringify(rendered.spec), /\{\{ \$labels\.pool \}\}/, 'alert templates reach Prometheus, not Helm');
  });

  describe('on the real API server', () => {
    let ns: Namespace;
    const kube = (input: string, ...args: string[]): string =>
      execFileSync(kubectl, ['--kubeconfig', cp.kubeconfig, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    const dryRun = (yaml: string): void => {
      const out = kube(yaml, 'apply', '--dry-run=server', '-f', '-');
      const lines = out.trim().split('\n');
      assert.ok(lines.length > 0 && lines.every((l) => l.endsWith('(server dry run)')), out);
    };
    before(async () => {
      ns = await createNamespace(cp, 'helm');
    });
    after(async () => {
      await ns.cleanup();
    });

    test('the default rendering applies with a server-side dry run, object for object', () => {
      const yaml = templateYaml(helmBin);
      const out = kube(yaml, 'apply', '--dry-run=server', '-f', '-');
      for (const o of defaults) {
        const pattern = new RegExp(`^${o.kind.toLowerCase()}(\\.[a-z0-9.]+)?/${o.metadata.name.replaceAll('.', '\\.')} `, 'm');
        assert.match(out, pattern, `${keyOf(o)} in:\n${out}`);
      }
      assert.ok(out.trim().split('\n').every((l) => l.endsWith('(server dry run)')), out);
    });

    test('a rendering with every non-monitoring value changed applies too (in a test namespace)', () => {
      const yaml = templateYaml(helmBin, {
        namespace: ns.name,
        image: { repository: 'registry.example/hereabouts', tag: '1.2.3', pullPolicy: 'Always', pullSecrets: [{ name: 'regcred' }] },
        migration: { enabled: false },
        node: { tolerations: [{ key: 'ipam', operator: 'Exists' }], nodeSelector: { 'kubernetes.io/os': 'linux' }, priorityClassName: '', seLinuxOptions: { type: 'spc_t' }, updateStrategy: { type: 'OnDelete' } },
        controller: { replicas: 3, priorityClassName: '', flags: { 'leader-elect-name': 'ipam', 'log-level': 'debug', 'health-addr': '', 'sticky-grace': '10m' } },
        sticky: { enabled: true },
      }, '--skip-crds');
      dryRun(yaml);
    });

    test('the ServiceMonitor and the PrometheusRule pass the Prometheus Operator\'s own CRD schemas (server-side dry run)', () => {
      // The Operator's CRDs from its published Go module, applied for real (cluster-scoped, harmless to other tests).
      const crds = execFileSync('bash', [join(repoRoot, 'scripts', 'tools', 'prometheus-operator-crds.sh')], { encoding: 'utf8' }).trim();
      for (const kind of ['servicemonitors', 'podmonitors', 'prometheusrules']) {
        kube('', 'apply', '--server-side', '--force-conflicts', '-f', join(crds, `monitoring.coreos.com_${kind}.yaml`));
      }
      // Polled rather than `kubectl wait`, which fails at once on a CRD whose status has no conditions yet.
      for (const kind of ['servicemonitors', 'podmonitors', 'prometheusrules']) {
        const established = (): boolean => kube('', 'get', `crd/${kind}.monitoring.coreos.com`, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}') === 'True';
        const deadline = Date.now() + 60_000;
        while (!established()) {
          assert.ok(Date.now() < deadline, `crd/${kind}.monitoring.coreos.com not Established within 60 s`);
          execFileSync('sleep', ['0.1']);
        }
      }
      const yaml = templateYaml(helmBin, { namespace: ns.name, monitoring: { serviceMonitor: { enabled: true, labels: { release: 'kps' } }, podMonitor: { enabled: true }, prometheusRule: { enabled: true } } }, '--skip-crds');
      const out = kube(yaml, 'apply', '--dry-run=server', '-f', '-');
      for (const object of ['service/hereabouts-controller-metrics', 'servicemonitor.monitoring.coreos.com/hereabouts-controller', 'podmonitor.monitoring.coreos.com/hereabouts-node', 'prometheusrule.monitoring.coreos.com/hereabouts']) {
        assert.match(out, new RegExp(`^${object.replaceAll('.', '\\.')} created \\(server dry run\\)$`, 'm'), out);
      }
      // The schema is really enforced: a rule without expr is refused.
      const broken = yaml.replace(/^(\s+)expr: /m, '$1exprr: ');
      assert.throws(() => kube(broken, 'apply', '--dry-run=server', '-f', '-'), /expr|unknown field/);
    });
  });
});

