// deploy/monitoring/: the PrometheusRule and the Grafana dashboard use only metrics (and labels) that a real
// controller serves on /metrics, scraped from `hereabouts controller` running against the real API server, or that
// a real node DaemonSet process serves (`hereabouts install --metrics-addr`, folding real plugin calls); the rules
// pass `promtool check rules` and the alert unit tests of test/monitoring/alerts.test.yaml (Debian's promtool, which
// scripts/setup.sh test installs), and a structural check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { freePort } from '../../support/free-port.ts';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { repoRoot } from '../../support/paths.ts';
import { allocation, createNad, createPod, createPool, createReservation, deleteAllPods, eventually, startController, type Running } from '../controller/harness.ts';
import { exposition, labelNames, metricNames } from './promql.ts';
import { mkdirSync, rmSync } from 'node:fs';
import { runCni } from '../../support/cni.ts';
import { requireBinary } from '../../support/paths.ts';
import { fakeNode, installArgs, startInstaller, waitFor, type FakeNode, type RunningInstaller } from '../install/host.ts';

/** A node DaemonSet process folding the calls of real plugin processes: what it serves on /metrics. */
async function nodeExposition(): Promise<{ text: string; stop: () => void }> {
  const node: FakeNode = fakeNode({ token: 't', ca: 'not a real CA', namespace: 'kube-system' });
  const statsDir = join(node.root, 'stats');
  mkdirSync(statsDir);
  const port = await freePort();
  const installer: RunningInstaller = startInstaller(
    installArgs(node, { extra: ['--poll-interval', '0.2', '--metrics-addr', `127.0.0.1:${port}`, '--stats-dir', statsDir, '--log-file', ''] }),
    { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', NODENAME: 'node-mon' },
  );
  const stop = (): void => {
    installer.child.kill('SIGKILL');
    rmSync(node.root, { recursive: true, force: true });
  };
  await waitFor(() => installer.stderr().includes('serving /metrics'), 'the node process serves /metrics', installer);
  // An ADD that succeeds, one that fails (a bad range) and a DEL: every label value the rules select on.
  const ipam = (range: string): Record<string, unknown> => ({ type: 'hereabouts', datastore: 'local', data_dir: join(node.root, 'data'), range });
  const call = (command: string, range: string): Promise<unknown> =>
    runCni(requireBinary(), { command, containerId: 'mon-1', netns: '/var/run/netns/x', ifname: 'eth0', path: '/usr/lib/cni', args: 'K8S_POD_NAMESPACE=m;K8S_POD_NAME=p' }, { cniVersion: '1.0.0', name: 'monnet', type: 'bridge', ipam: ipam(range) }, { extraEnv: { HEREABOUTS_STATS_DIR: statsDir } });
  await call('ADD', '10.79.0.0/24');
  await call('ADD', '10.79.0.0/33');
  await call('DEL', '10.79.0.0/24');
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return { text, stop };
}

const monitoring = join(repoRoot, 'deploy', 'monitoring');
/** Labels Prometheus adds to every scraped series from the target (ServiceMonitor/pod discovery). */
const TARGET_LABELS = new Set(['pod', 'namespace', 'job', 'instance', 'service', 'container', 'endpoint', 'le']);

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface Group { name: string; rules: Rule[] }
const rules = (): Group[] => (load(readFileSync(join(monitoring, 'prometheusrule.yaml'), 'utf8')) as { spec: { groups: Group[] } }).spec.groups;

interface Panel { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; targets?: Array<{ expr: string; refId: string }> }
interface Dashboard { uid: string; title: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string; query?: string }> } }
const dashboard = (): Dashboard => JSON.parse(readFileSync(join(monitoring, 'grafana-dashboard.json'), 'utf8')) as Dashboard;

/** Every PromQL expression of the dashboard: panel targets and label_values() of template variables. */
function dashboardExprs(d: Dashboard): string[] {
  const exprs = d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  for (const v of d.templating.list) {
    const m = /^label_values\((.+),\s*\w+\)$/.exec(v.query ?? '');
    if (m !== null) exprs.push(m[1]!);
  }
  // Grafana's variables are not PromQL: $__rate_interval sits in a range, $pool in a matcher value.
  return exprs.map((e) => e.replaceAll('$__rate_interval', '5m'));
}

/** Debian's promtool (package prometheus, installed by scripts/setup.sh test), or $HEREABOUTS_PROMTOOL. */
function promtool(): string | undefined {
  const explicit = process.env['HEREABOUTS_PROMTOOL'];
  if (explicit !== undefined) return explicit;
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

test('the PromQL reader finds metric and label names (so the checks below can fail)', () => {
  const expr = 'histogram_quantile(0.99, sum by (kind, le) (rate(a_seconds_bucket{x="y z", w=~"$v"}[5m]))) / on(pod) b_total offset 5m or absent(c)';
  assert.deepEqual(metricNames(expr).sort(), ['a_seconds_bucket', 'b_total', 'c']);
  assert.deepEqual(labelNames(expr).sort(), ['kind', 'le', 'pod', 'w', 'x']);
  assert.deepEqual(metricNames('max by (pool) (p) > 0.9 and q == 0').sort(), ['p', 'q']);
});

test('the rules are well formed: unique alert names, durations, severity, summary and description', () => {
  const names: string[] = [];
  for (const group of rules()) {
    assert.match(group.name, /^hereabouts-/);
    for (const rule of group.rules) {
      assert.ok(rule.alert !== undefined, JSON.stringify(rule));
      names.push(rule.alert);
      assert.match(rule.alert, /^Hereabouts[A-Z]\w+$/);
      assert.ok(rule.expr.trim() !== '' && metricNames(rule.expr).length > 0, rule.alert);
      assert.match(rule.for ?? '', /^\d+[smh]$/, rule.alert);
      assert.ok(['warning', 'critical'].includes(rule.labels?.['severity'] ?? ''), rule.alert);
      assert.ok(rule.annotations?.['summary'] && rule.annotations['description'], rule.alert);
    }
  }
  assert.equal(new Set(names).size, names.length, names.join(' '));
  for (const wanted of ['HereaboutsPoolNearlyFull', 'HereaboutsPoolExhausted', 'HereaboutsOrphansGrowing', 'HereaboutsNoControllerLeader', 'HereaboutsCachesUnsynced', 'HereaboutsCniAddErrors', 'HereaboutsCniAddSlow', 'HereaboutsNodeAgentDown', 'HereaboutsNodeWarmJournalOff', 'HereaboutsNodeWarmAddressLost', 'HereaboutsNodeCniAddErrors']) {
    assert.ok(names.includes(wanted), wanted);
  }
});

test('the dashboard is well formed: unique panel ids, a Prometheus data source variable, panels inside 24 columns', () => {
  const d = dashboard();
  assert.equal(d.uid, 'hereabouts');
  const ids = d.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length);
  assert.ok(d.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus'));
  for (const p of d.panels) {
    assert.ok(p.gridPos.x + p.gridPos.w <= 24, p.title);
    if (p.type !== 'row') assert.ok((p.targets ?? []).length > 0 && p.targets!.every((t) => t.expr.trim() !== ''), p.title);
  }
});

test('promtool check rules and the alert unit tests pass', { skip: promtool() === undefined ? 'no promtool: scripts/setup.sh test installs Debian\'s prometheus package' : false }, () => {
  const bin = promtool()!;
  const rulesFile = join(repoRoot, 'deploy', 'helm', 'hereabouts', 'files', 'alerts.yaml');
  const check = spawnSync(bin, ['check', 'rules', rulesFile], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.match(check.stdout, /SUCCESS: \d+ rules found/);
  const unit = spawnSync(bin, ['test', 'rules', join(repoRoot, 'test', 'monitoring', 'alerts.test.yaml')], { encoding: 'utf8' });
  assert.equal(unit.status, 0, unit.stdout + unit.stderr);
});

describe('against what a running controller serves on /metrics', () => {
  let ns: Namespace;
  let controller: Running;
  let served: Map<string, Set<string>>;
  let stopNode = (): void => undefined;
  // Three nodes for a network of two slices: one node is left without a slice.
  const nodes = (): string[] => ['a', 'b', 'c'].map((n) => `${ns.name}-${n}`);
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'mon');
    const port = await freePort();
    // Data behind every labelled series: a pool with an orphan, an orphaned reservation, a node-slice network with
    // more nodes than slices.
    for (const name of nodes()) await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await createNad(ns, 'monnet', { type: 'hereabouts', range: '10.77.0.0/24', node_slice_size: '/25', network_name: `${ns.name}-net` });
    const uid = await createPod(ns, 'alive', { phase: 'Running' });
    await createPool(ns, '10.77.255.0-30', '10.77.255.0/30', { '1': allocation(ns, 'alive', uid), '2': allocation(ns, 'ghost') });
    await createReservation(ns, '10.78.0.1', `${ns.name}/gone`);
    const nodeSide = await nodeExposition();
    stopNode = nodeSide.stop;
    controller = startController(ns, '--metrics-addr', `127.0.0.1:${port}`, '--retry-period', '300ms', '--reconcile-interval', '1s', '--reservation-grace', '0s');
    await controller.waitForLine((l) => / pass done/.test(l.msg) && l['released'] === 1, 15_000);
    let text = '';
    const complete = await eventually(async () => {
      text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      served = exposition(text);
      for (const [name, labels] of exposition(nodeSide.text)) served.set(name, new Set([...(served.get(name) ?? []), ...labels]));
      const labelled = ['hereabouts_node_slices', 'hereabouts_nodes_without_slice', 'hereabouts_orphans_cleaned_total', 'hereabouts_reservations_cleaned_total', 'hereabouts_cni_requests_total', 'hereabouts_cni_request_duration_seconds_bucket'];
      return labelled.every((name) => (served.get(name)?.size ?? 0) > 0);
    }, 10_000);
    assert.ok(complete, text);
  });
  after(async () => {
    stopNode();
    await controller.stop();
    for (const name of nodes()) await apiRequest(ns.cp, 'DELETE', `/api/v1/nodes/${name}`);
    await apiRequest(ns.cp, 'DELETE', `/apis/k8s.cni.cncf.io/v1/namespaces/${ns.name}/network-attachment-definitions`);
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  const check = (what: string, exprs: string[]): void => {
    const missing: string[] = [];
    for (const expr of exprs) {
      for (const name of metricNames(expr)) {
        const labels = served.get(name);
        if (labels === undefined) {
          missing.push(`${what}: metric ${name} (in ${expr.trim()})`);
          continue;
        }
        for (const label of labelNames(expr)) {
          if (!labels.has(label) && !TARGET_LABELS.has(label)) missing.push(`${what}: label ${label} of ${name}`);
        }
      }
    }
    assert.deepEqual(missing, [], `served: ${[...served.keys()].filter((n) => n.startsWith('hereabouts_')).join(' ')}`);
  };

  test('every metric and label the alert rules use is served', () => {
    check('rule', rules().flatMap((g) => g.rules.map((r) => r.expr)));
  });

  test('every metric and label the dashboard uses is served', () => {
    check('dashboard', dashboardExprs(dashboard()));
  });

  test('the node process serves the CNI metrics with the labels the rules select on', () => {
    assert.deepEqual([...(served.get('hereabouts_cni_requests_total') ?? [])].sort(), ['code', 'network', 'verb']);
    assert.deepEqual([...(served.get('hereabouts_cni_request_duration_seconds_bucket') ?? [])].sort(), ['le', 'network', 'verb']);
  });

  test('the check catches a metric that is not served', () => {
    assert.equal(served.get('hereabouts_cni_calls_total'), undefined);
    assert.throws(() => check('probe', ['sum(rate(hereabouts_cni_calls_total[5m]))']), /hereabouts_cni_calls_total/);
    assert.throws(() => check('probe', ['max by (nosuchlabel) (hereabouts_pool_free)']), /label nosuchlabel/);
  });
});
