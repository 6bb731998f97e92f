// `hereabouts install`: the DaemonSet container on every node. Installs this executable into the host's CNI bin dir
// and writes hereabouts.d/ (token, kubeconfig, flat config, nodename), then keeps both as they should be — a rotated
// token or CA, a removed or overwritten file — until SIGTERM. `--once` installs and exits (init-container style).
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '../agent/default-socket.ts';
import type { RunningAgent } from '../agent/server.ts';
import { CniError } from '../cni/errors.ts';
import { messageOf } from '../store/local/fs-errors.ts';
import { isDnsSubdomain } from '../store/names.ts';
import { binaryChanged, installBinary, linkBinary, sweepTemps, type InstalledBinary } from './binary.ts';
import { checkFlatConfig, readServiceAccount, syncFiles } from './config-files.ts';
import { apiServerUrl, desiredFiles, FILES, type DesiredFile, type HostFilesOptions } from './host-files.ts';

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
  --log-file FILE            log_file in the flat config (absolute path on the host)
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
  'log-file': { type: 'string' },
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
}

export async function runInstall(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({ args: [...argv], options: flags });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const log = (msg: string): void => void process.stderr.write(`${new Date().toISOString()} install: ${msg}\n`);
  const plan = planOf(values, process.env, log);
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
    if (!(err instanceof CniError)) throw err;
    process.stderr.write(`hereabouts install: --log-level/--log-file make a flat config the plugin would reject: ${err.message}\n`);
    return 2;
  }
  const [primary, ...aliases] = plan.targets as [string, ...string[]];
  // Age-based, not by pid: during a rolling update the other installer (another pod, another pid namespace) may be
  // writing its copy into the same directory.
  for (const path of sweepTemps(dirname(primary), plan.targets.map((t) => basename(t)), Date.now())) log(`removed ${path} (left by a killed copy)`);
  const installed: InstalledBinary[] = [installBinary(plan.source, primary), ...aliases.map((alias) => linkBinary(primary, alias))];
  log(`installed ${plan.targets.join(', ')}`);
  for (const path of syncFiles(first, plan.hostFiles.confDir)) log(`wrote ${path}`);
  if (plan.once) return 0;

  const agent = new AgentKeeper(values['agent-socket'], log);
  await agent.ensure();
  const code = await keep({
    intervalMs: plan.intervalMs,
    log,
    check: () => {
      void agent.ensure();
      for (const path of syncFiles(desired(), plan.hostFiles.confDir)) log(`rewrote ${path} (token, CA or file changed)`);
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
  return code;
}

/**
 * The node agent, unless disabled (--agent-socket ""). Until it runs, the plugin runs each call itself; a start that
 * fails (during a rolling update the old pod's agent still serves the socket) is retried at every check.
 */
class AgentKeeper {
  readonly #socketPath: string;
  readonly #log: (msg: string) => void;
  #agent: RunningAgent | undefined;
  #starting = false;
  #lastError = '';

  constructor(socketPath: string, log: (msg: string) => void) {
    this.#socketPath = socketPath;
    this.#log = log;
  }

  async ensure(): Promise<void> {
    if (this.#socketPath === '' || this.#agent !== undefined || this.#starting) return;
    this.#starting = true;
    try {
      const { serveNodeAgent } = await import('../agent/main.ts');
      this.#agent = await serveNodeAgent({ socketPath: this.#socketPath, log: (msg) => this.#log(`agent: ${msg}`) });
      this.#lastError = '';
    } catch (err) {
      const message = messageOf(err);
      if (message !== this.#lastError) this.#log(`no node agent yet (the plugin runs each call itself; retrying): ${message}`);
      this.#lastError = message;
    } finally {
      this.#starting = false;
    }
  }

  async close(): Promise<void> {
    await this.#agent?.close();
  }
}

/** The plan, or what is wrong with the flags or the environment. */
function planOf(values: Flags, env: NodeJS.ProcessEnv, log: (msg: string) => void): Plan | string {
  const intervalSeconds = Number(values['poll-interval']);
  if (!Number.isFinite(intervalSeconds) || intervalSeconds <= 0) {
    return `--poll-interval ${JSON.stringify(values['poll-interval'])} must be a positive number of seconds`;
  }
  const apiHost = env['KUBERNETES_SERVICE_HOST'] ?? '';
  if (apiHost === '') return 'KUBERNETES_SERVICE_HOST is not set (run in a pod, or set it)';
  const apiPort = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (!/^\d+$/.test(apiPort)) return `KUBERNETES_SERVICE_PORT ${JSON.stringify(apiPort)} is not a port number`;
  const nodeName = env['NODENAME']?.trim() ?? '';
  // Written to hereabouts.d/nodename and used in object names: it must be a node name, nothing else (no newline).
  if (nodeName !== '' && !isDnsSubdomain(nodeName)) {
    return `NODENAME ${JSON.stringify(nodeName)} is not a Kubernetes node name (lowercase letters, digits, "-" and ".")`;
  }
  if (nodeName === '') log('warning: NODENAME is not set: no nodename file; the plugin falls back to the host name');
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
        ...(values['log-file'] === undefined ? {} : { log_file: values['log-file'] }),
      },
      whereaboutsKubeconfig: values['whereabouts-kubeconfig'],
    },
    intervalMs: intervalSeconds * 1000,
    once: values.once,
  };
}

/**
 * Runs `check` every interval (never two at once) until SIGTERM or SIGINT; a failing check is retried. Polling, not
 * fs.watch: kubelet updates a projected volume by swapping a symlink (`..data`), which a watch on the files misses,
 * and a few small reads per interval cost nothing.
 */
function keep(options: { intervalMs: number; log: (msg: string) => void; check: () => void }): Promise<number> {
  return new Promise((resolve) => {
    let lastError = '';
    let timer: NodeJS.Timeout;
    const tick = (): void => {
      try {
        options.check();
        if (lastError !== '') options.log('recovered: files are up to date');
        lastError = '';
      } catch (err) {
        // A projected volume may be mid-update; the next tick retries. Each distinct failure is logged once.
        const message = messageOf(err);
        if (message !== lastError) options.log(`cannot bring the files up to date (retrying): ${message}`);
        lastError = message;
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
