// `hereabouts install`: its command line and the pod's environment, read into the installer's plan. Of the
// connection flags it takes -n/--namespace (the namespace of the kubeconfig it writes); it writes that kubeconfig
// from its ServiceAccount and never connects to the API server itself, so --kubeconfig and --context mean nothing to it.
import { basename, join } from 'node:path';
import { DEFAULT_AGENT_SOCKET } from '../agent/default-socket.ts';
import { WARM_FLAGS, WARM_HELP, warmSettingOf } from './warm-flags.ts';
import { isDnsSubdomain } from '../config/names.ts';
import { HereaboutsError, messageOf } from '../errors.ts';
import { checkFlatConfig } from '../install/config-files.ts';
import { FILES, renderFlatConfig } from '../install/host-files.ts';
import { DEFAULT_LOG_FILE, type Plan } from '../install/main.ts';
import { parseAddr } from '../controller/runtime/http.ts';
import { apiServerUrl } from '../kube/in-cluster.ts';
import { runSubcommand } from './command.ts';
import { UsageError, type FlagValues } from './flags.ts';

const usage = `Usage: hereabouts install [flags]
  Runs in the node DaemonSet (deploy/daemonset.yaml), with the host's CNI dirs mounted.
  --cni-bin-dir DIR          host CNI bin dir as mounted here (default /host/opt/cni/bin)
  --cni-conf-dir DIR         host CNI config dir as mounted here (default /host/etc/cni/net.d)
  --host-cni-conf-dir DIR    the same dir as the host sees it, for paths inside the files (default /etc/cni/net.d)
  --service-account-dir DIR  token, ca.crt, namespace (default /var/run/secrets/kubernetes.io/serviceaccount)
  -n, --namespace NS         where the plugin keeps its pools: the namespace of the kubeconfig it writes (default:
                             the pod's, from the service account; the node's ServiceAccount needs its Role there)
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
${WARM_HELP}  --once                     install, write the files and exit
  -h, --help                 this text
  A flag without a value (--once, --whereabouts-name) means true; --flag=false and --flag false turn it off.
  No --kubeconfig or --context: the installer writes the plugin's kubeconfig from its ServiceAccount.
  Environment: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT (the API server, as every pod gets them),
  NODENAME (spec.nodeName through the downward API; written to hereabouts.d/nodename).
`;

export const INSTALL_FLAGS = {
  'cni-bin-dir': { type: 'string', default: '/host/opt/cni/bin' },
  'cni-conf-dir': { type: 'string', default: '/host/etc/cni/net.d' },
  'host-cni-conf-dir': { type: 'string', default: '/etc/cni/net.d' },
  'service-account-dir': { type: 'string', default: '/var/run/secrets/kubernetes.io/serviceaccount' },
  namespace: { type: 'string', short: 'n' },
  binary: { type: 'string', default: process.execPath },
  'whereabouts-name': { type: 'boolean' },
  'whereabouts-kubeconfig': { type: 'boolean' },
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
  ...WARM_FLAGS,
  once: { type: 'boolean' },
} as const;

type Values = FlagValues<typeof INSTALL_FLAGS>;

/** A namespace name: an RFC 1123 label. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function runInstallCommand(argv: readonly string[]): Promise<number> {
  return runSubcommand({ name: 'install', usage, flags: INSTALL_FLAGS }, argv, async ({ values }) => {
    const plan = planOf(values, process.env);
    const { runInstall } = await import('../install/main.ts');
    return runInstall(plan);
  });
}

/** The plan; a UsageError names the flag or the variable that is wrong. */
function planOf(values: Values, env: NodeJS.ProcessEnv): Plan {
  const intervalSeconds = Number(values['poll-interval']);
  if (!Number.isFinite(intervalSeconds) || intervalSeconds <= 0) {
    throw new UsageError(
      `--poll-interval ${JSON.stringify(values['poll-interval'])} must be a positive number of seconds`,
    );
  }
  const count = (name: 'log-max-bytes' | 'stats-max-bytes' | 'metrics-max-networks'): number => {
    const n = Number(values[name]);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new UsageError(`--${name} ${JSON.stringify(values[name])} must be a positive whole number`);
    return n;
  };
  if (values['metrics-addr'] !== '') {
    try {
      parseAddr(values['metrics-addr']);
    } catch (err) {
      throw new UsageError(`--metrics-addr: ${messageOf(err)}`);
    }
  }
  const namespace = values.namespace;
  if (namespace !== undefined && !NAMESPACE.test(namespace))
    throw new UsageError(`--namespace ${JSON.stringify(namespace)} is not a namespace name (a DNS label)`);
  const apiHost = env['KUBERNETES_SERVICE_HOST'] ?? '';
  if (apiHost === '') throw new UsageError('KUBERNETES_SERVICE_HOST is not set (run in a pod, or set it)');
  const apiPort = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (!/^\d+$/.test(apiPort))
    throw new UsageError(`KUBERNETES_SERVICE_PORT ${JSON.stringify(apiPort)} is not a port number`);
  const nodeName = env['NODENAME']?.trim() ?? '';
  // Written to hereabouts.d/nodename and used in object names: it must be a node name, nothing else (no newline).
  if (nodeName !== '' && !isDnsSubdomain(nodeName)) {
    throw new UsageError(
      `NODENAME ${JSON.stringify(nodeName)} is not a Kubernetes node name (lowercase letters, digits, "-" and ".")`,
    );
  }
  const logFile = values['log-file'];
  const flatExtra = {
    ...(values['log-level'] === undefined ? {} : { log_level: values['log-level'] }),
    ...(logFile === '' ? {} : { log_file: logFile }),
  };
  checkFlags(flatExtra, values['host-cni-conf-dir']);
  const bin = (name: string): string => join(values['cni-bin-dir'], name);
  return {
    source: values.binary,
    targets: values['whereabouts-name'] ? [bin('hereabouts'), bin('whereabouts')] : [bin('hereabouts')],
    serviceAccountDir: values['service-account-dir'],
    hostFiles: {
      confDir: values['cni-conf-dir'],
      hostConfDir: values['host-cni-conf-dir'],
      server: apiServerUrl(apiHost, apiPort),
      ...(nodeName === '' ? {} : { nodeName }),
      ...(namespace === undefined ? {} : { namespace }),
      flatExtra,
      whereaboutsKubeconfig: values['whereabouts-kubeconfig'],
    },
    intervalMs: intervalSeconds * 1000,
    once: values.once,
    agentSocket: values['agent-socket'],
    warm: warmSettingOf(values),
    warnings: nodeName === '' ? ['NODENAME is not set: no nodename file; the plugin falls back to the host name'] : [],
    nodeSide: {
      statsDir: values['stats-dir'],
      statsMaxBytes: count('stats-max-bytes'),
      ...(values['metrics-addr'] === '' ? {} : { metricsAddr: values['metrics-addr'] }),
      maxNetworks: count('metrics-max-networks'),
      ...(logFile === '' ? {} : { logFile: join(values['log-dir'], basename(logFile)) }),
      logMaxBytes: count('log-max-bytes'),
    },
  };
}

/** The flat config --log-level and --log-file make, read by the plugin's own parser: its error in the flags' names. */
function checkFlags(flatExtra: Readonly<Record<string, string>>, hostConfDir: string): void {
  const kubeconfig = join(hostConfDir, 'hereabouts.d', FILES.kubeconfig);
  try {
    checkFlatConfig({
      path: join(hostConfDir, 'hereabouts.d', FILES.flat),
      content: renderFlatConfig(kubeconfig, flatExtra),
    });
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    throw new UsageError(
      err.message.replace(/\bipam\.log_level\b/g, '--log-level').replace(/\bipam\.log_file\b/g, '--log-file'),
    );
  }
}
