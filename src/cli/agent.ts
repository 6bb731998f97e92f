// `hereabouts agent`: its command line, read into the node agent's options. It takes none of the connection flags:
// each call's network configuration names the kubeconfig and so the cluster and namespace.
import { DEFAULT_AGENT_SOCKET } from '../agent/default-socket.ts';
import { runSubcommand } from './command.ts';
import { UsageError } from './flags.ts';
import { WARM_FLAGS, WARM_HELP, warmSettingOf } from './warm-flags.ts';

const usage = `Usage: hereabouts agent [flags]
  Serves CNI calls of this node on a unix socket; the plugin forwards to it when the socket exists (else it runs
  the call itself). Run as the user the plugin runs as (root).
  --socket PATH          the socket (default ${DEFAULT_AGENT_SOCKET}; its directory is created 0700)
  --max-concurrent N     calls served at once (default 16)
  --deadline-seconds N   a call not finished by then is answered with CNI code 11 (default 110)
${WARM_HELP}  -h, --help             this text
  No --kubeconfig, --context or --namespace: each call's network configuration names its kubeconfig.
`;

const FLAGS = {
  socket: { type: 'string', default: DEFAULT_AGENT_SOCKET },
  'max-concurrent': { type: 'string', default: '16' },
  'deadline-seconds': { type: 'string', default: '110' },
  ...WARM_FLAGS,
} as const;

export function runAgentCommand(argv: readonly string[]): Promise<number> {
  return runSubcommand({ name: 'agent', usage, flags: FLAGS }, argv, async ({ values }) => {
    const maxConcurrent = Number(values['max-concurrent']);
    const deadlineSeconds = Number(values['deadline-seconds']);
    if (!Number.isInteger(maxConcurrent) || maxConcurrent <= 0)
      throw new UsageError(`--max-concurrent ${JSON.stringify(values['max-concurrent'])} must be a positive integer`);
    if (!Number.isFinite(deadlineSeconds) || deadlineSeconds <= 0)
      throw new UsageError(
        `--deadline-seconds ${JSON.stringify(values['deadline-seconds'])} must be a positive number`,
      );
    const warm = warmSettingOf(values);
    const { runAgent } = await import('../agent/main.ts');
    return runAgent({ socketPath: values.socket, maxConcurrent, deadlineMs: deadlineSeconds * 1000, warm });
  });
}
