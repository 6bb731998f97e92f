// The connection flags (--kubeconfig, --context, -n/--namespace) the operator commands and the controller share,
// -o of the operator commands, and the API connection. The kubeconfig is found as kubectl finds it (--kubeconfig,
// $KUBECONFIG, ~/.kube/config), and in a cluster the pod's ServiceAccount. Errors name the CLI flag or the variable
// that led to the file, never a CNI configuration key.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { inClusterEndpoint } from '../kube/in-cluster.ts';
import { ApiClient } from '../kube/api.ts';
import { loadEndpoint, NoSuchContextError, type ApiEndpoint } from '../kube/kubeconfig.ts';
import { UsageError, type FlagValues } from './flags.ts';

export type Output = 'table' | 'json';

export const CONNECTION_FLAGS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
} as const;

/** The flags of every operator command: the connection, and -o. */
export const COMMON_FLAGS = { ...CONNECTION_FLAGS, output: { type: 'string', short: 'o', default: 'table' } } as const;

export interface Connection {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
}

export interface CommonFlags extends Connection {
  readonly output: Output;
}

const CONNECTION_HELP = `  --kubeconfig FILE   default: $KUBECONFIG (its first file), else ~/.kube/config, else the pod's ServiceAccount
                      when run in a cluster
  --context NAME      a context of the kubeconfig other than its current one
  -n, --namespace NS  where the pools live; default: the context's namespace (in a cluster: the pod's), else
                      kube-system
`;

export const COMMON_HELP = `${CONNECTION_HELP}  -o, --output FMT    table (default) or json (numbers are JSON numbers; a count above 2^53 is a decimal string;
                      errors are JSON too: {"error": "...", "exitCode": N} on stdout)
  -h, --help          this text
`;

/** The connection flags, checked: none may be empty. */
export function connectionOf(values: FlagValues<typeof CONNECTION_FLAGS>): Connection {
  const connection: Record<string, string> = {};
  for (const flag of ['kubeconfig', 'context', 'namespace'] as const) {
    const value = values[flag];
    if (value === '') throw new UsageError(`--${flag} may not be empty`);
    if (value !== undefined) connection[flag] = value;
  }
  return connection;
}

/** The operator commands' flags, checked: -o is table or json. */
export function commonFlagsOf(values: FlagValues<typeof COMMON_FLAGS>): CommonFlags {
  const output = values.output;
  if (output !== 'table' && output !== 'json')
    throw new UsageError(`-o ${JSON.stringify(output)} must be table or json`);
  return { ...connectionOf(values), output };
}

/** The API client, in the pools' namespace (--namespace, else the context's). */
export async function connect(connection: Connection, env: NodeJS.ProcessEnv = process.env): Promise<ApiClient> {
  const endpoint = await endpointLoader(connection, { env })();
  const namespace = connection.namespace ?? endpoint.namespace;
  return new ApiClient({ ...endpoint, namespace }, { timeoutMs: 30_000 });
}

export interface LoaderOptions {
  readonly env?: NodeJS.ProcessEnv;
  /**
   * In a cluster, the pod's ServiceAccount comes right after --kubeconfig (the controller: a $KUBECONFIG or a
   * ~/.kube/config in its image does not override it). Default: after ~/.kube/config, as kubectl.
   */
  readonly inClusterFirst?: boolean;
}

/**
 * Finds the kubeconfig now (throws when there is none) and returns what loads the endpoint from it, again whenever
 * called (rotated tokens, an exec plugin's fresh token).
 */
export function endpointLoader(connection: Connection, options: LoaderOptions = {}): () => Promise<ApiEndpoint> {
  const env = options.env ?? process.env;
  const source = sourceOf(connection, env, options.inClusterFirst ?? false);
  const context = connection.context === undefined ? {} : { context: connection.context };
  if (source === 'in-cluster') {
    if (connection.context !== undefined)
      throw new UsageError(
        '--context needs a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config); in a cluster there is none',
      );
    return () => inClusterEndpoint({ label: '' }, env);
  }
  return async () => {
    try {
      return await loadEndpoint(source.file, { label: source.label, ...context });
    } catch (err) {
      if (err instanceof NoSuchContextError) throw new UsageError(`--context: ${err.message}`);
      throw err;
    }
  };
}

type Source = { readonly file: string; readonly label: string } | 'in-cluster';

function sourceOf(connection: Connection, env: NodeJS.ProcessEnv, inClusterFirst: boolean): Source {
  if (connection.kubeconfig !== undefined) return { file: connection.kubeconfig, label: '--kubeconfig' };
  const inCluster = (env['KUBERNETES_SERVICE_HOST'] ?? '') !== '';
  if (inCluster && inClusterFirst) return 'in-cluster';
  const fromEnv = env['KUBECONFIG']?.split(':').find((p) => p !== '');
  if (fromEnv !== undefined) return { file: fromEnv, label: '$KUBECONFIG' };
  const home = join(env['HOME'] ?? homedir(), '.kube', 'config');
  if (existsSync(home)) return { file: home, label: 'kubeconfig' };
  if (inCluster) return 'in-cluster';
  throw new Error(
    `no kubeconfig: no --kubeconfig, no $KUBECONFIG, no ${home}, and not in a cluster (KUBERNETES_SERVICE_HOST is unset)`,
  );
}

/** JSON where a bigint is a number up to 2^53 and a decimal string above (JSON numbers lose precision there). */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? exactNumber(v) : v), 2)}\n`;
}

export function exactNumber(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}
