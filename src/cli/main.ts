// Entry point of the single executable. The CNI path is chosen first and imports only what a CNI verb needs;
// subcommands load their (heavier) modules on demand.
import { lstatSync } from 'node:fs';
import { DEFAULT_AGENT_SOCKET } from '../agent/default-socket.ts';
import { buildInfo } from '../build-info.ts';

async function main(argv: readonly string[]): Promise<number> {
  if (process.env['CNI_COMMAND'] !== undefined && argv.length === 0) {
    // A node agent serves the call when its socket is there (src/agent/client.ts); VERSION needs no store.
    const socket = process.env['CNI_COMMAND'] === 'VERSION' ? undefined : agentSocket(process.env);
    let stdin: (() => Buffer) | undefined;
    if (socket !== undefined) {
      const { callAgent } = await import('../agent/client.ts');
      const answered = await callAgent(socket, process.env);
      if (typeof answered === 'number') return answered;
      stdin = answered.stdin;
    }
    const { runPlugin } = await import('../cni/plugin.ts');
    if (process.env['CNI_COMMAND'] === 'DEL') return runDel(runPlugin, stdin);
    return runPlugin(stdin === undefined ? {} : { stdin });
  }
  const [command, ...rest] = argv;
  switch (command) {
    case 'version':
    case '--version': {
      const { runSubcommand } = await import('./command.ts');
      return runSubcommand({ name: 'version', usage: VERSION_USAGE, flags: {} }, rest, () => {
        process.stdout.write(
          `hereabouts ${buildInfo.version} (commit ${buildInfo.commit}, node ${process.versions.node})\n`,
        );
        return 0;
      });
    }
    case 'controller': {
      const { runControllerCommand } = await import('./controller.ts');
      return runControllerCommand(rest);
    }
    case 'agent': {
      const { runAgentCommand } = await import('./agent.ts');
      return runAgentCommand(rest);
    }
    case 'install': {
      const { runInstallCommand } = await import('./install.ts');
      return runInstallCommand(rest);
    }
    case 'status': {
      const { runStatus } = await import('./status.ts');
      return runStatus(rest);
    }
    case 'ip': {
      const { runIp } = await import('./ip.ts');
      return runIp(rest);
    }
    case 'pool': {
      const { runPool } = await import('./pool.ts');
      return runPool(rest);
    }
    case 'orphans': {
      const { runOrphans } = await import('./orphans.ts');
      return runOrphans(rest);
    }
    case 'release': {
      const { runRelease } = await import('./release.ts');
      return runRelease(rest);
    }
    case 'check': {
      const { runCheck } = await import('./check.ts');
      return runCheck(rest);
    }
    case 'preflight': {
      const { runPreflight } = await import('./preflight.ts');
      return runPreflight(rest);
    }
    case '__load-k8s': {
      // Hidden (tests and bench:startup): loads the Kubernetes client as the store does, sends no request.
      const { loadEndpoint } = await import('../kube/kubeconfig.ts');
      const endpoint = await loadEndpoint(rest[0] ?? '');
      endpoint.agent.destroy();
      process.stdout.write(`${endpoint.server}\n`);
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage());
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(
        command.startsWith('-')
          ? `hereabouts: unknown flag ${command.split('=')[0] ?? command} (see hereabouts --help)\n`
          : `hereabouts: unknown command ${JSON.stringify(command)} (see hereabouts --help)\n`,
      );
      return 2;
  }
}

/** A DEL run in-process: the hand-outs a node agent's journal holds for its container are settled first. */
async function runDel(
  runPlugin: typeof import('../cni/plugin.ts').runPlugin,
  stdin: (() => Buffer) | undefined,
): Promise<number> {
  const path = process.env['HEREABOUTS_AGENT_SOCKET'] ?? DEFAULT_AGENT_SOCKET;
  if (path === '') return runPlugin(stdin === undefined ? {} : { stdin });
  const { delHost } = await import('../agent/settle-del.ts');
  const del = await delHost(path, process.env);
  if (del.kind === 'plain') return runPlugin(stdin === undefined ? {} : { stdin });
  const { readStdinFd } = await import('../cni/stdin-fd.ts');
  const bytes = stdin === undefined ? readStdinFd() : stdin();
  if (del.kind === 'busy') {
    process.stdout.write(del.answer(bytes));
    return 1;
  }
  try {
    return await runPlugin({ stdin: bytes }, del.host);
  } finally {
    await del.close();
  }
}

/** The agent socket (from the runtime's environment, never the network config) when one exists at the configured path (no socket: in-process, without loading node:net). */
function agentSocket(env: NodeJS.ProcessEnv): string | undefined {
  const path = env['HEREABOUTS_AGENT_SOCKET'] ?? DEFAULT_AGENT_SOCKET;
  if (path === '') return undefined; // explicitly off
  try {
    return lstatSync(path).isSocket() ? path : undefined;
  } catch {
    return undefined;
  }
}

const VERSION_USAGE = `Usage: hereabouts version
  Prints the version, the commit it was built from and the embedded Node version.
`;

function usage(): string {
  return `Usage:
  hereabouts                 CNI plugin (with CNI_COMMAND set, request on stdin)
  hereabouts controller      leader-elected cleanup of orphaned allocations and reservations, metrics (--help)
  hereabouts agent           node agent: serves CNI calls on a unix socket (--help for flags)
  hereabouts install         DaemonSet entry: install the plugin and its config on the node (--help for flags)
  hereabouts status          pools at a glance: range, capacity, used, free, orphans (--help for flags)
  hereabouts ip ADDRESS      who holds an address: pool, pod, node, container, since when, reservation
  hereabouts pool NAME       every allocation of an IPPool: pod, node, age, reservation, orphan verdict
  hereabouts orphans         what the controller would release and why, and what a grace period holds back
  hereabouts release ADDRESS --network NAME [--force]
                             release an address safely (refuses a live pod's unless forced)
  hereabouts check           consistency of pools, reservations, pods and node slices (exit 1 on a problem)
  hereabouts preflight       every NAD with whereabouts/hereabouts IPAM: served as Whereabouts did, what is ignored,
                             what is refused and how to fix it (exit 1 when one would be refused)
  hereabouts version         print version, commit and embedded Node version
  hereabouts --help          this text

The operator commands (status, ip, pool, orphans, release, check, preflight) take --kubeconfig, --context,
-n/--namespace and -o table|json (with -o json, errors are a JSON object too); the controller takes the same
connection flags, the installer -n/--namespace. Every command takes --help. A boolean flag is --flag, --flag=true|false or --flag true|false.

Exit status, for every command: 0 all well, 1 a problem found (or nothing found) or a failure, 2 a wrong command
line (an unknown flag, a bad value, a missing argument).
`;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`hereabouts: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
