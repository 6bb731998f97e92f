// `hereabouts install`: the DaemonSet container on every node. Installs this executable into the host's CNI bin dir
// and writes hereabouts.d/ (token, kubeconfig, flat config, nodename), then keeps both as they should be — a rotated
// token or CA, a removed or overwritten file — until SIGTERM. `--once` installs and exits (init-container style).
import { basename, dirname } from 'node:path';
import { jsonLog } from '../log/json-log.ts';
import { messageOf } from '../errors.ts';
import { AgentKeeper } from './agent-keeper.ts';
import type { WarmSetting } from '../agent/warm-setting.ts';
import { RetryLog } from './retry-log.ts';
import { binaryChanged, installBinary, linkBinary, sweepTemps, type InstalledBinary } from './binary.ts';
import { readServiceAccount, syncFiles } from './config-files.ts';
import type { NodeSideOptions } from './node-side.ts';
import { desiredFiles, type DesiredFile, type HostFilesOptions } from './host-files.ts';

/** Where the plugin logs when installed by the DaemonSet (allowed by the default trust policy too). */
export const DEFAULT_LOG_FILE = '/var/log/hereabouts.log';

/** What one installer does, decided from its command line and the pod's environment (src/cli/install.ts). */
export interface Plan {
  /** The executable to install. */
  readonly source: string;
  /** Where: the first is a copy, the others links to it. */
  readonly targets: readonly [string, ...string[]];
  readonly serviceAccountDir: string;
  readonly hostFiles: HostFilesOptions;
  readonly intervalMs: number;
  readonly once: boolean;
  /** The node agent's socket; "" for none. */
  readonly agentSocket: string;
  /** The node agent's warm sets. */
  readonly warm: WarmSetting;
  /** Said once at start (a missing NODENAME). */
  readonly warnings: readonly string[];
  readonly nodeSide: Omit<NodeSideOptions, 'intervalMs' | 'log'>;
}

export async function runInstall(plan: Plan): Promise<number> {
  const logger = jsonLog({ level: 'info', mode: 'install' });
  const log = (msg: string): void => logger.info(msg);
  for (const warning of plan.warnings) logger.warning(warning);
  const desired = (): DesiredFile[] => desiredFiles(readServiceAccount(plan.serviceAccountDir), plan.hostFiles);
  const first = desired(); // before anything is installed: a missing service account fails here
  const [primary, ...aliases] = plan.targets;
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
  const agent = new AgentKeeper(plan.agentSocket, log, nodeSide.metrics, plan.warm);
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
