// `hereabouts controller`: leader-elected orphan and reservation cleanup and node-slice assignment with a periodic
// full pass, Prometheus metrics and health endpoints; clean shutdown (lease handed back) on SIGTERM.
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { apiServerUrl } from '../install/host-files.ts';
import { ApiClient } from '../store/kubernetes/api.ts';
import { endpointFromText, loadEndpoint, type ApiEndpoint } from '../store/kubernetes/kubeconfig.ts';
import { fullPass } from './full-pass.ts';
import { LeaderElector } from './lease.ts';
import { reconcileSlices } from './node-slices.ts';
import { watchPodDeletions } from './pod-watch.ts';
import { ControllerMetrics, serve } from './metrics.ts';

const usage = `Usage: hereabouts controller [flags]
  --kubeconfig FILE            else the pod's service account (in-cluster)
  --namespace NS               where the pools live (default: the kubeconfig's, in-cluster: the pod's)
  --leader-elect-namespace NS  Lease namespace (default: the pools' namespace)
  --leader-elect-name NAME     Lease name (default hereabouts-controller)
  --lease-duration D --renew-deadline D --retry-period D   (default 15s, 10s, 2s)
  --reconcile-interval D       full pass period (default 30s)
  --cleanup-terminating BOOL   release allocations of terminating pods (default false)
  --cleanup-disrupted BOOL     release allocations of pods with DisruptionTarget=True (default true)
  --verify-network-status BOOL release addresses missing from a running pod's network-status (default true)
  --pending-grace D            never touch Pending pods younger than this (default 5m)
  --reservation-grace D        never delete reservations younger than this (default 60s)
  --metrics-addr ADDR          Prometheus metrics (default :9090, "" disables)
  --health-addr ADDR           /healthz and /readyz (default :8080, "" disables)
  --once                       one full pass (if leading) and exit
  Durations: 500ms, 15s, 5m, or seconds.
`;

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export async function runController(argv: readonly string[]): Promise<number> {
  const { values: v } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect-namespace': { type: 'string' },
      'leader-elect-name': { type: 'string', default: 'hereabouts-controller' },
      'lease-duration': { type: 'string', default: '15s' },
      'renew-deadline': { type: 'string', default: '10s' },
      'retry-period': { type: 'string', default: '2s' },
      'reconcile-interval': { type: 'string', default: '30s' },
      'cleanup-terminating': { type: 'string', default: 'false' },
      'cleanup-disrupted': { type: 'string', default: 'true' },
      'verify-network-status': { type: 'string', default: 'true' },
      'pending-grace': { type: 'string', default: '5m' },
      'reservation-grace': { type: 'string', default: '60s' },
      'metrics-addr': { type: 'string', default: ':9090' },
      'health-addr': { type: 'string', default: ':8080' },
      identity: { type: 'string', default: `${hostname()}-${process.pid}` },
      once: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (v.help) {
    process.stdout.write(usage);
    return 0;
  }
  const log = (msg: string): void => void process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), msg })}\n`);
  const endpoint = await (v.kubeconfig !== undefined ? loadEndpoint(v.kubeconfig) : inClusterEndpoint());
  const namespace = v.namespace ?? endpoint.namespace;
  const api = new ApiClient({ ...endpoint, namespace }, { timeoutMs: 30_000 });
  const policy = {
    cleanupTerminating: bool(v['cleanup-terminating'], 'cleanup-terminating'),
    cleanupDisrupted: bool(v['cleanup-disrupted'], 'cleanup-disrupted'),
    verifyNetworkStatus: bool(v['verify-network-status'], 'verify-network-status'),
    pendingGraceMs: duration(v['pending-grace'], 'pending-grace'),
  };
  const elector = new LeaderElector(api, {
    namespace: v['leader-elect-namespace'] ?? namespace,
    name: v['leader-elect-name'],
    identity: v.identity,
    leaseDurationMs: duration(v['lease-duration'], 'lease-duration'),
    renewDeadlineMs: duration(v['renew-deadline'], 'renew-deadline'),
    retryPeriodMs: duration(v['retry-period'], 'retry-period'),
    log,
  });
  const metrics = new ControllerMetrics();
  let reachedApi = false;
  const servers = await Promise.all([
    v['metrics-addr'] === '' ? undefined : serve(v['metrics-addr'], { metrics }),
    v['health-addr'] === '' ? undefined : serve(v['health-addr'], { ready: () => reachedApi }),
  ]);
  const intervalMs = duration(v['reconcile-interval'], 'reconcile-interval');
  const reservationGraceMs = duration(v['reservation-grace'], 'reservation-grace');
  let stopping = false;
  const pass = async (): Promise<void> => {
    metrics.leader(elector.leading);
    if (!elector.leading) return;
    const started = process.hrtime.bigint();
    try {
      const result = await fullPass(api, { policy, leading: () => elector.leading && !stopping, reservationGraceMs, log });
      await reconcileSlices(api, { leading: () => elector.leading && !stopping, log });
      reachedApi = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.recordPass(result, seconds);
      log(`full pass: ${result.pools.length} pools, ${result.pods} pods, released ${result.released.length}, reservations deleted ${result.reservationsDeleted.length}, deferred ${result.deferred.length}, ${seconds.toFixed(2)} s, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
    } catch (err) {
      metrics.passFailed();
      log(`full pass failed: ${(err as Error).message}`);
    }
  };
  elector.start();
  const waitForLease = async (): Promise<void> => {
    for (let i = 0; i < 50 && !elector.leading; i++) await new Promise((r) => setTimeout(r, 100));
  };
  if (v.once) {
    await waitForLease();
    await pass();
    await elector.stop();
    for (const s of servers) s?.close();
    api.close();
    return 0;
  }
  return new Promise((resolve) => {
    let running: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      running = running.then(pass);
    }, intervalMs);
    running = waitForLease().then(pass);
    // A deleted pod triggers a pass a moment later (deletions come in bursts: one pass for the lot).
    let soon: NodeJS.Timeout | undefined;
    const podWatch = watchPodDeletions(endpoint, () => {
      soon ??= setTimeout(() => {
        soon = undefined;
        running = running.then(pass);
      }, 1000);
    }, log);
    process.once('SIGTERM', () => {
      stopping = true;
      clearInterval(timer);
      podWatch.stop();
      if (soon !== undefined) clearTimeout(soon);
      log('SIGTERM: stopping');
      void running
        .then(() => elector.stop())
        .finally(() => {
          for (const s of servers) s?.close();
          api.close();
          resolve(0);
        });
    });
  });
}

async function inClusterEndpoint(): Promise<ApiEndpoint> {
  const host = process.env['KUBERNETES_SERVICE_HOST'];
  if (host === undefined || host === '') throw new Error('no --kubeconfig and not in a cluster (KUBERNETES_SERVICE_HOST unset)');
  const namespace = readFileSync(`${SA_DIR}/namespace`, 'utf8').trim();
  const server = apiServerUrl(host, process.env['KUBERNETES_SERVICE_PORT'] ?? '443');
  const text = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'in-cluster', cluster: { server, 'certificate-authority': `${SA_DIR}/ca.crt` } }],
    users: [{ name: 'sa', user: { tokenFile: `${SA_DIR}/token` } }],
    contexts: [{ name: 'in-cluster', context: { cluster: 'in-cluster', user: 'sa', namespace } }],
    'current-context': 'in-cluster',
  });
  return endpointFromText(text, SA_DIR, 'in-cluster service account');
}

export function duration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new TypeError(`--${flag} ${JSON.stringify(text)} is not a duration (500ms, 15s, 5m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

function bool(text: string, flag: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new TypeError(`--${flag} ${JSON.stringify(text)} must be true or false`);
}
