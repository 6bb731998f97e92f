// What every operator command shares: the common flags, the exit codes, and the API connection. The kubeconfig is
// found as kubectl finds it (--kubeconfig, $KUBECONFIG, ~/.kube/config), else the pod's ServiceAccount in a
// cluster. Errors name the CLI flag or the variable that led to the file, never a CNI configuration key.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { HereaboutsError } from '../errors.ts';
import { inClusterEndpoint } from '../kube/in-cluster.ts';
import { ApiClient } from '../kube/api.ts';
import { loadEndpoint, NoSuchContextError, type ApiEndpoint } from '../kube/kubeconfig.ts';

/** 0: all well. 1: a problem found, a thing not found, a refusal, or an API failure. 2: the command line is wrong. */
export const EXIT = { ok: 0, problem: 1, usage: 2 } as const;

/** The command line cannot be run as given: exit 2, the message names the flag or argument. */
export class UsageError extends Error {}

export type Output = 'table' | 'json';

export interface CommonFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
  readonly output: Output;
}

type Options = NonNullable<ParseArgsConfig['options']>;

const COMMON: Options = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o', default: 'table' },
  help: { type: 'boolean', short: 'h', default: false },
};

export const COMMON_HELP = `  --kubeconfig FILE   default: $KUBECONFIG (its first file), else ~/.kube/config, else the pod's ServiceAccount
                      when run in a cluster
  --context NAME      a context of the kubeconfig other than its current one
  -n, --namespace NS  where the pools live; default: the context's namespace (in a cluster: the pod's), else
                      kube-system
  -o, --output FMT    table (default) or json (numbers are JSON numbers; a count above 2^53 is a decimal string)
  -h, --help          this text
`;

export interface Parsed {
  readonly flags: CommonFlags;
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  readonly help: boolean;
}

/** The command's flags; throws UsageError naming what is wrong (an unknown flag, a missing argument, -o yaml). */
export function parseCommand(
  command: string,
  argv: readonly string[],
  options: Options,
  positionals: readonly string[],
): Parsed {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const help = values['help'] === true;
  if (!help && parsed.positionals.length !== positionals.length) {
    const expected = positionals.length === 0 ? 'no arguments' : positionals.join(' ');
    throw new UsageError(
      `${command} takes ${expected}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.map((p) => JSON.stringify(p)).join(' ')}`,
    );
  }
  const output = values['output'];
  if (output !== 'table' && output !== 'json')
    throw new UsageError(`-o ${JSON.stringify(output)} must be table or json`);
  for (const flag of ['kubeconfig', 'context', 'namespace']) {
    if (values[flag] === '') throw new UsageError(`--${flag} may not be empty`);
  }
  const text = (key: string): string | undefined => (typeof values[key] === 'string' ? values[key] : undefined);
  const kubeconfig = text('kubeconfig');
  const context = text('context');
  const namespace = text('namespace');
  const flags: CommonFlags = {
    output,
    ...(kubeconfig === undefined ? {} : { kubeconfig }),
    ...(context === undefined ? {} : { context }),
    ...(namespace === undefined ? {} : { namespace }),
  };
  return { flags, values, positionals: parsed.positionals, help };
}

/** The API client, in the pools' namespace (--namespace, else the context's). */
export async function connect(flags: CommonFlags, env: NodeJS.ProcessEnv = process.env): Promise<ApiClient> {
  const endpoint = await endpointOf(flags, env);
  const namespace = flags.namespace ?? endpoint.namespace;
  return new ApiClient({ ...endpoint, namespace }, { timeoutMs: 30_000 });
}

async function endpointOf(flags: CommonFlags, env: NodeJS.ProcessEnv): Promise<ApiEndpoint> {
  const context = flags.context === undefined ? {} : { context: flags.context };
  const fromEnv = env['KUBECONFIG']?.split(':').find((p) => p !== '');
  const home = join(env['HOME'] ?? homedir(), '.kube', 'config');
  try {
    if (flags.kubeconfig !== undefined)
      return await loadEndpoint(flags.kubeconfig, { label: '--kubeconfig', ...context });
    if (fromEnv !== undefined) return await loadEndpoint(fromEnv, { label: '$KUBECONFIG', ...context });
    if (existsSync(home)) return await loadEndpoint(home, { label: 'kubeconfig', ...context });
    if ((env['KUBERNETES_SERVICE_HOST'] ?? '') === '') {
      throw new Error(
        `no kubeconfig: no --kubeconfig, no $KUBECONFIG, no ${home}, and not in a cluster (KUBERNETES_SERVICE_HOST is unset)`,
      );
    }
  } catch (err) {
    if (err instanceof NoSuchContextError) throw new UsageError(`--context: ${err.message}`);
    throw err;
  }
  if (flags.context !== undefined)
    throw new UsageError(
      '--context needs a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config); in a cluster there is none',
    );
  return inClusterEndpoint({ label: '' });
}

/** Runs a command body with the exit-code convention: UsageError -> 2, other failures -> 1. */
export async function runCommand(name: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `hereabouts ${name}: ${err.message}\n(hereabouts ${name} --help lists the arguments and flags)\n`,
      );
      return EXIT.usage;
    }
    const details = err instanceof HereaboutsError && err.details !== '' ? ` (${err.details})` : '';
    process.stderr.write(`hereabouts ${name}: ${err instanceof Error ? err.message : String(err)}${details}\n`);
    return EXIT.problem;
  }
}

/** JSON where a bigint is a number up to 2^53 and a decimal string above (JSON numbers lose precision there). */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? exactNumber(v) : v), 2)}\n`;
}

export function exactNumber(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}
