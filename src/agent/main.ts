// `hereabouts agent --socket PATH`: the node agent on its own (tests, benchmarks, or a node that runs it outside the
// installer). `hereabouts install` runs the same agent in the DaemonSet (its --agent-socket flag).
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from './default-socket.ts';
import { startAgent, type RunningAgent } from './server.ts';

const usage = `Usage: hereabouts agent [flags]
  Serves CNI calls of this node on a unix socket; the plugin forwards to it when the socket exists (else it runs
  the call itself). Run as the user the plugin runs as (root).
  --socket PATH          the socket (default ${DEFAULT_AGENT_SOCKET}; its directory is created 0700)
  --max-concurrent N     calls served at once (default 16)
  --deadline-seconds N   a call not finished by then is answered with CNI code 11 (default 110)
`;

const flags = {
  socket: { type: 'string', default: DEFAULT_AGENT_SOCKET },
  'max-concurrent': { type: 'string', default: '16' },
  'deadline-seconds': { type: 'string', default: '110' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export async function runAgent(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({ args: [...argv], options: flags });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const maxConcurrent = Number(values['max-concurrent']);
  const deadlineSeconds = Number(values['deadline-seconds']);
  if (!Number.isInteger(maxConcurrent) || maxConcurrent <= 0)
    return fail(`--max-concurrent ${JSON.stringify(values['max-concurrent'])} must be a positive integer`);
  if (!Number.isFinite(deadlineSeconds) || deadlineSeconds <= 0)
    return fail(`--deadline-seconds ${JSON.stringify(values['deadline-seconds'])} must be a positive number`);
  const log = (msg: string): void => void process.stderr.write(`${new Date().toISOString()} agent: ${msg}\n`);
  let agent: RunningAgent;
  try {
    agent = await serveNodeAgent({ socketPath: values.socket, maxConcurrent, deadlineMs: deadlineSeconds * 1000, log });
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
  await untilSignal(log);
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

function fail(msg: string): number {
  process.stderr.write(`hereabouts agent: ${msg}\n`);
  return 2;
}
