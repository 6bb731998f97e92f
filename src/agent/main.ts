// `hereabouts agent --socket PATH`: the node agent on its own (tests, benchmarks, or a node that runs it outside the
// installer). `hereabouts install` runs the same agent in the DaemonSet (its --agent-socket flag).
import { startAgent, type RunningAgent } from './server.ts';
import { warmOptions, type WarmSetting } from './warm-setting.ts';

export interface AgentRun {
  readonly socketPath: string;
  readonly maxConcurrent: number;
  readonly deadlineMs: number;
  readonly warm: WarmSetting;
}

/** Serves until SIGTERM or SIGINT (exit 0); throws when it cannot serve the socket. */
export async function runAgent(options: AgentRun): Promise<number> {
  const log = (msg: string): void => void process.stderr.write(`${new Date().toISOString()} agent: ${msg}\n`);
  const { warm, ...rest } = options;
  const warmed = warmOptions(warm, log);
  const agent = await serveNodeAgent({ ...rest, log, ...(warmed === undefined ? {} : { warm: warmed }) });
  // SIGUSR1: one line of the warm sets' counters (what the DaemonSet's /metrics shows; benchmarks read it), and one of
  // how sticky ADDs learned their pod (the node's pod watch, or a read).
  const report = (): void => {
    log(`warm stats ${JSON.stringify(agent.warmStats() ?? null)}`);
    log(`pod watch stats ${JSON.stringify(agent.podStats() ?? null)}`);
  };
  process.on('SIGUSR1', report);
  await untilSignal(log);
  process.off('SIGUSR1', report);
  await agent.close();
  return 0;
}

/** Starts the agent the way both entry points do. */
export function serveNodeAgent(options: Parameters<typeof startAgent>[0]): Promise<RunningAgent> {
  // The per-process timing report (HEREABOUTS_TIMINGS) would collect every call's marks for the agent's lifetime;
  // the agent reports each call's wall and CPU time in its answer instead.
  delete process.env['HEREABOUTS_TIMINGS'];
  return startAgent(options);
}

function untilSignal(log: (msg: string) => void): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      log(`${signal}: exiting`);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
