// What the long-running installer does besides keeping the files: folds the node's call-stats file into /metrics
// (and /healthz) and rotates the plugin's log file by size. Each tick and each scrape folds; one pod per node folds
// (fold.lock), so a rolling update's two pods never count a call twice.
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { serve } from '../controller/runtime/http.ts';
import { messageOf } from '../errors.ts';
import { FoldLock } from './fold-lock.ts';
import { rotateBySize } from './log-rotate.ts';
import { NodeMetrics } from './node-metrics.ts';
import { RetryLog } from './retry-log.ts';
import { StatsFolder } from './stats-fold.ts';

export interface NodeSideOptions {
  /** The host's call-stats directory as mounted here; nothing is folded while it does not exist. */
  readonly statsDir: string;
  readonly statsMaxBytes: number;
  /** ":9546" and the like; undefined: no HTTP server (the stats file is still folded and rotated). */
  readonly metricsAddr?: string;
  readonly maxNetworks: number;
  /** The plugin's log file as mounted here, rotated when larger than logMaxBytes. */
  readonly logFile?: string;
  readonly logMaxBytes: number;
  readonly intervalMs: number;
  readonly log: (level: 'info' | 'warning', msg: string) => void;
}

export interface NodeSide {
  /** Where the node agent reports (its gauge and call counts on /metrics). */
  readonly metrics: NodeMetrics;
  stop(): Promise<void>;
}

export async function startNodeSide(options: NodeSideOptions): Promise<NodeSide> {
  const metrics = new NodeMetrics({ maxNetworks: options.maxNetworks });
  const folder = new StatsFolder(
    { dir: options.statsDir, maxBytes: options.statsMaxBytes, drainMs: Math.max(2 * options.intervalMs, 5000) },
    (r) => metrics.record(r),
  );
  const lock = new FoldLock(join(options.statsDir, 'fold.lock'), {
    staleMs: Math.max(6 * options.intervalMs, 30_000),
  });
  const foldFailures = new RetryLog((msg) => options.log('warning', msg));
  let holding = false;
  const step = (): void => {
    try {
      if (existsSync(options.statsDir)) {
        const held = lock.hold();
        if (held !== holding)
          options.log(
            'info',
            held ? `folding ${options.statsDir}` : `${options.statsDir} is folded by another pod; waiting`,
          );
        holding = held;
        if (held) {
          const result = folder.fold();
          metrics.skipped(result.skipped);
          if (result.rotated) metrics.rotated('stats');
        }
      }
      if (options.logFile !== undefined && rotateBySize(options.logFile, options.logMaxBytes)) {
        metrics.rotated('log');
        options.log('info', `rotated ${options.logFile} to ${options.logFile}.1`);
      }
      foldFailures.succeeded();
    } catch (err) {
      foldFailures.failed(`cannot fold the call stats or rotate the log (retrying): ${messageOf(err)}`);
    }
  };
  let server: Server | undefined;
  let listening: Promise<void> | undefined;
  const listenFailures = new RetryLog((msg) => options.log('warning', msg));
  /**
   * The pod runs in the host's network: during a surge rolling update the old pod still holds the port, so a failed
   * listen is retried at every interval (the old pod goes once this one runs) instead of failing the pod.
   */
  const listen = (addr: string): Promise<void> =>
    serve(addr, { metrics: metrics.registry, beforeMetrics: step, notReady: () => undefined }).then(
      (started) => {
        server = started;
        listenFailures.succeeded();
        options.log('info', `serving /metrics and /healthz on ${addr}`);
      },
      (err: unknown) => listenFailures.failed(`not serving /metrics yet (retrying): ${messageOf(err)}`),
    );
  const tick = (): void => {
    step();
    if (options.metricsAddr !== undefined && server === undefined && listening === undefined) {
      listening = listen(options.metricsAddr).finally(() => (listening = undefined));
    }
  };
  tick();
  await listening;
  const timer = setInterval(tick, options.intervalMs);
  return {
    metrics,
    async stop() {
      clearInterval(timer);
      await listening;
      step(); // what was recorded until now is in this pod's last scrape-able state and in the saved offset
      lock.release();
      await new Promise<void>((resolve) => {
        if (server === undefined) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
