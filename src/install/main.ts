// `hereabouts install`: the DaemonSet container on every node. Installs this executable into the host's CNI bin dir
// and writes hereabouts.d/ (token, kubeconfig, flat config, nodename), then keeps both as they should be — a rotated
// token or CA, a removed or overwritten file — until SIGTERM. `--once` installs and exits (init-container style).
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '../agent/default-socket.ts';
import { HereaboutsError } from '../errors.ts';
import { jsonLog } from '../log/json-log.ts';
import { messageOf } from '../errors.ts';
import { isDnsSubdomain } from '../config/names.ts';
import { AgentKeeper } from './agent-keeper.ts';
import { RetryLog } from './retry-log.ts';
import { binaryChanged, installBinary, linkBinary, sweepTemps, type InstalledBinary } from './binary.ts';
import { checkFlatConfig, readServiceAccount, syncFiles } from './config-files.ts';
import { parseAddr } from '../controller/runtime/http.ts';
import type { NodeSideOptions } from './node-side.ts';
import { apiServerUrl } from '../kube/in-cluster.ts';
import { desiredFiles, FILES, type DesiredFile, type HostFilesOptions } from './host-files.ts';

/** Where the plugin logs when installed by the DaemonSet (allowed by the default trust policy too). */
export const DEFAULT_LOG_FILE = '/var/log/hereabouts.log';

const usage = `Usage: hereabouts install [flags]
  Runs in the node DaemonSet (deploy/daemonset.yaml), with the host's CNI dirs mounted.
  --cni-bin-dir DIR          host CNI bin dir as mounted here (default /host/opt/cni/bin)
  --cni-conf-dir DIR         host CNI config dir as mounted here (default /host/etc/cni/net.d)
  --host-cni-conf-dir DIR    the same dir as the host sees it, for paths inside the files (default /etc/cni/net.d)
  --service-account-dir DIR  token, ca.crt, namespace (default /var/run/secrets/kubernetes.io/serviceaccount)
  --binary FILE              the executable to install (default: this one)
  --whereabouts-name         also install the executable as "whereabouts" (NADs keeping "type": "whereabouts")
  --whereabouts-kubeconfig   also keep whereabouts.d/whereabouts.kubeconfig (NADs naming it in kubernetes.kubeconfig)
  --log-level LEVEL          log_level in the flat config (debug, verbose, info, warning, error, panic)
  --log-file FILE            log_file in the flat config (absolute path on the host; default /var/log/hereabouts.log,
                             "" for none: the plugin then logs to the runtime's stderr)
  --log-dir DIR              the directory of --log-file as mounted here, where the long-running installer rotates
                             it (default /host/var/log)
  --log-max-bytes N          rotate the log file (rename to .1) when it is larger (default 10485760)
  --metrics-addr ADDR        serve the node's CNI call metrics on /metrics and /healthz (e.g. :9546; default off)
  --stats-dir DIR            the host's /var/lib/hereabouts/stats as mounted here: the plugin's call records,
                             folded into /metrics (default /host/var/lib/hereabouts/stats)
  --stats-max-bytes N        rotate the call-stats file when it is larger (default 4194304)
  --metrics-max-networks N   distinct network label values before the rest count as "_other" (default 100)
  --poll-interval SECONDS    how often to check the token, the CA and the installed files (default 10)
  --agent-socket PATH        serve the node's CNI calls on this unix socket, mounted at the same path as on the host
                             (default /run/hereabouts/agent.sock; "" for none): the plugin forwards to it
  --once                     install, write the files and exit
  Environment: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT (the API server, as every pod gets them),
  NODENAME (spec.nodeName through the downward API; written to hereabouts.d/nodename).
`;

const flags = {
  'cni-bin-dir': { type: 'string', default: '/host/opt/cni/bin' },
  'cni-conf-dir': { type: 'string', default: '/host/etc/cni/net.d' },
  'host-cni-conf-dir': { type: 'string', default: '/etc/cni/net.d' },
  'service-account-dir': { type: 'string', default: '/var/run/secrets/kubernetes.io/serviceaccount' },
  binary: { type: 'string', default: process.execPath },
  'whereabouts-name': { type: 'boolean', default: false },
  'whereabouts-kubeconfig': { type: 'boolean', default: false },
  'log-level': { type: 'string' },
  'log-file': { type: 'string', default: DEFAULT_LOG_FILE },
  'log-dir': { type: 'string', default: '/host/var/log' },
  'log-max-bytes': { type: 'string', default: String(10 * 1024 * 1024) },
  'metrics-addr': { type: 'string', default: '' },
  'stats-dir': { type: 'string', default: '/host/var/lib/hereabouts/stats' },
  'stats-max-bytes': { type: 'string', default: String(4 * 1024 * 1024) },
  'metrics-max-networks': { type: 'string', default: '100' },
  'poll-interval': { type: 'string', default: '10' },
  'agent-socket': { type: 'string', default: DEFAULT_AGENT_SOCKET },
  once: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof flags }>>['values'];

/** What one installer does, decided from flags and the pod's environment. */
interface Plan {
  readonly source: string;
  readonly targets: readonly string[];
  readonly serviceAccountDir: string;
  readonly hostFiles: HostFilesOptions;
  readonly intervalMs: number;
  readonly once: boolean;
  readonly nodeSide: Omit<NodeSideOptions, 'intervalMs' | 'log'>;
}

export async function runInstall(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({ args: [...argv], options: flags });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const logger = jsonLog({ level: 'info', mode: 'install' });
  const log = (msg: string): void => logger.info(msg);
  const plan = planOf(values, process.env, (msg) => logger.warning(msg));
  if (typeof plan === 'string') {
    process.stderr.write(`hereabouts install: ${plan}\n`);
    return 2;
  }
  const desired = (): DesiredFile[] => desiredFiles(readServiceAccount(plan.serviceAccountDir), plan.hostFiles);
  const first = desired(); // before anything is installed: a missing service account fails here
  const flat = first.find((f) => f.path === join(plan.hostFiles.confDir, 'hereabouts.d', FILES.flat));
  try {
    if (flat !== undefined) checkFlatConfig(flat);
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    process.stderr.write(
      `hereabouts install: --log-level/--log-file make a flat config the plugin would reject: ${err.message}\n`,
    );
    return 2;
  }
  const [primary, ...aliases] = plan.targets as [string, ...string[]];
  // Age-based, not by pid: during a rolling update the other installer (another pod, another pid namespace) may be
  // writing its copy into the same directory.
  for (const path of sweepTemps(
    dirname(primary),
    plan.targets.map((t) => basename(t)),
    Date.now(),
  ))
    log(`removed ${path} (left by a killed copy)`);
  const installed: InstalledBinary[] = [
    installBinary(plan.source, primary),
    ...aliases.map((alias) => linkBinary(primary, alias)),
  ];
  log(`installed ${plan.targets.join(', ')}`);
  for (const path of syncFiles(first, plan.hostFiles.confDir)) log(`wrote ${path}`);
  if (plan.once) return 0;

  // Loaded here, not for --once: the metrics library is only for the long-running pod.
  const { startNodeSide } = await import('./node-side.ts');
  const nodeSide = await startNodeSide({
    ...plan.nodeSide,
    intervalMs: plan.intervalMs,
    log: (level, msg) => logger[level](msg),
  });
  const agent = new AgentKeeper(values['agent-socket'], log, nodeSide.metrics);
  await agent.ensure();
  const code = await keep({
    intervalMs: plan.intervalMs,
    log,
    warn: (msg) => logger.warning(msg),
    check: () => {
      void agent.ensure();
      for (const path of syncFiles(desired(), plan.hostFiles.confDir))
        log(`rewrote ${path} (token, CA or file changed)`);
      // The aliases are links to the primary: a new primary means new links (written over in place, it is both).
      const primaryChanged = binaryChanged(installed[0] as InstalledBinary);
      installed.forEach((copy, i) => {
        if (!primaryChanged && !binaryChanged(copy)) return;
        installed[i] = i === 0 ? installBinary(plan.source, copy.path) : linkBinary(primary, copy.path);
        log(`reinstalled ${copy.path} (it was removed or replaced)`);
      });
    },
  });
  await agent.close();
  await nodeSide.stop();
  return code;
}

/** The plan, or what is wrong with the flags or the environment. */
function planOf(values: Flags, env: NodeJS.ProcessEnv, warn: (msg: string) => void): Plan | string {
  const intervalSeconds = Number(values['poll-interval']);
  if (!Number.isFinite(intervalSeconds) || intervalSeconds <= 0) {
    return `--poll-interval ${JSON.stringify(values['poll-interval'])} must be a positive number of seconds`;
  }
  const counts = { 'log-max-bytes': 0, 'stats-max-bytes': 0, 'metrics-max-networks': 0 };
  for (const name of ['log-max-bytes', 'stats-max-bytes', 'metrics-max-networks'] as const) {
    const n = Number(values[name]);
    if (!Number.isSafeInteger(n) || n <= 0)
      return `--${name} ${JSON.stringify(values[name])} must be a positive whole number`;
    counts[name] = n;
  }
  if (values['metrics-addr'] !== '') {
    try {
      parseAddr(values['metrics-addr']);
    } catch (err) {
      return `--metrics-addr: ${messageOf(err)}`;
    }
  }
  const logFile = values['log-file'];
  const apiHost = env['KUBERNETES_SERVICE_HOST'] ?? '';
  if (apiHost === '') return 'KUBERNETES_SERVICE_HOST is not set (run in a pod, or set it)';
  const apiPort = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (!/^\d+$/.test(apiPort)) return `KUBERNETES_SERVICE_PORT ${JSON.stringify(apiPort)} is not a port number`;
  const nodeName = env['NODENAME']?.trim() ?? '';
  // Written to hereabouts.d/nodename and used in object names: it must be a node name, nothing else (no newline).
  if (nodeName !== '' && !isDnsSubdomain(nodeName)) {
    return `NODENAME ${JSON.stringify(nodeName)} is not a Kubernetes node name (lowercase letters, digits, "-" and ".")`;
  }
  if (nodeName === '') warn('NODENAME is not set: no nodename file; the plugin falls back to the host name');
  const names = ['hereabouts', ...(values['whereabouts-name'] ? ['whereabouts'] : [])];
  return {
    source: values.binary,
    targets: names.map((name) => join(values['cni-bin-dir'], name)),
    serviceAccountDir: values['service-account-dir'],
    hostFiles: {
      confDir: values['cni-conf-dir'],
      hostConfDir: values['host-cni-conf-dir'],
      server: apiServerUrl(apiHost, apiPort),
      ...(nodeName === '' ? {} : { nodeName }),
      flatExtra: {
        ...(values['log-level'] === undefined ? {} : { log_level: values['log-level'] }),
        ...(logFile === '' ? {} : { log_file: logFile }),
      },
      whereaboutsKubeconfig: values['whereabouts-kubeconfig'],
    },
    intervalMs: intervalSeconds * 1000,
    once: values.once,
    nodeSide: {
      statsDir: values['stats-dir'],
      statsMaxBytes: counts['stats-max-bytes'],
      ...(values['metrics-addr'] === '' ? {} : { metricsAddr: values['metrics-addr'] }),
      maxNetworks: counts['metrics-max-networks'],
      ...(logFile === '' ? {} : { logFile: join(values['log-dir'], basename(logFile)) }),
      logMaxBytes: counts['log-max-bytes'],
    },
  };
}

/**
 * Runs `check` every interval (never two at once) until SIGTERM or SIGINT; a failing check is retried. Polling, not
 * fs.watch: kubelet updates a projected volume by swapping a symlink (`..data`), which a watch on the files misses,
 * and a few small reads per interval cost nothing.
 */
function keep(options: {
  intervalMs: number;
  log: (msg: string) => void;
  warn: (msg: string) => void;
  check: () => void;
}): Promise<number> {
  return new Promise((resolve) => {
    // A projected volume may be mid-update; the next tick retries.
    const failures = new RetryLog(options.warn);
    let timer: NodeJS.Timeout;
    const tick = (): void => {
      try {
        options.check();
        if (failures.succeeded()) options.log('recovered: files are up to date');
      } catch (err) {
        failures.failed(`cannot bring the files up to date (retrying): ${messageOf(err)}`);
      }
      timer = setTimeout(tick, options.intervalMs);
    };
    timer = setTimeout(tick, options.intervalMs);
    const stop = (signal: NodeJS.Signals): void => {
      clearTimeout(timer);
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      options.log(`${signal}: exiting`);
      resolve(0);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
