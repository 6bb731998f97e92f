// The API endpoint and credentials of `kubernetes.kubeconfig`, through @kubernetes/client-node's KubeConfig (auth
// providers, exec plugins, client certificates, proxies). KubeConfig is the only name src/ takes from the client:
// the executable's client bundle keeps just what it needs (build/bundle.mjs), and the requests themselves go
// through node:https (api.ts). This module is reached only through the lazy import in src/store/open.ts.
// Trust boundary (docs/security.md): every file it reads (the kubeconfig, token files, CA and client certificates) is
// read bounded (a regular file, at most 1 MiB, never a FIFO or a device); errors name the file and what was wrong,
// never its content; and a kubeconfig that a tenant's config named may not run an exec credential plugin or an auth
// provider unless the operator allowed it.
import { KubeConfig } from '@kubernetes/client-node';
import type { Agent } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ErrorKind, HereaboutsError } from '../errors.ts';
import { readBounded } from '../fs/read-bounded.ts';
import { UnsafeFileError } from '../fs/unsafe-file.ts';
import { messageOf } from '../errors.ts';
import { ConnectionPool, IDLE_SOCKET_MS } from './connection-pool.ts';

/** Whereabouts' default when the current context names no namespace. */
export const DEFAULT_NAMESPACE = 'kube-system';

export interface ApiEndpoint {
  /** Base URL of the API server, without a trailing slash. */
  readonly server: string;
  /** The current context's namespace: where the IPPools, reservations and NodeSlicePools live. */
  readonly namespace: string;
  /** TLS material and the Authorization header, computed once per process (token files are read now). */
  readonly requestOptions: RequestOptions;
  /** The agent the requests go through; close() destroys it so the process can exit at once. */
  readonly agent: Agent;
}

export interface KubeconfigOptions {
  /**
   * May the current user run an exec credential plugin or an auth provider? Default true: the operator's own tools
   * (controller, status). The CNI plugin passes false for a kubeconfig named by a tenant's network configuration.
   */
  readonly execCredentials?: boolean;
  /** Follow a symbolic link at the kubeconfig's own path (default true; the plugin passes false). */
  readonly followLinks?: boolean;
  /** What names the file in messages (default the CNI key, kubernetes.kubeconfig; the ops CLI names its flag; '': none). */
  readonly label?: string;
  /** Use this context instead of the current one (the ops CLI's --context). */
  readonly context?: string;
  /** Where the endpoint's agent comes from (default: a pool that keeps none, so the agent is the endpoint's own). */
  readonly connections?: ConnectionPool;
}

/** The kubeconfig has no context of the name asked for. */
export class NoSuchContextError extends HereaboutsError {}

/** Reads the kubeconfig; every failure is a HereaboutsError that names the file. */
export async function loadEndpoint(path: string, options: KubeconfigOptions = {}): Promise<ApiEndpoint> {
  const text = readKubeFile(path, options.label ?? 'kubernetes.kubeconfig', options.followLinks ?? true).toString(
    'utf8',
  );
  return endpointFromText(text, dirname(resolve(path)), path, options);
}

/** The same from kubeconfig text; relative paths in it are taken from `baseDir`, errors name `label`. */
export async function endpointFromText(
  text: string,
  baseDir: string,
  label: string,
  options: KubeconfigOptions = {},
): Promise<ApiEndpoint> {
  const path = [options.label ?? 'kubernetes.kubeconfig', label].filter((part) => part !== '').join(' ');
  const kc = new KubeConfig();
  let withTokens: string;
  try {
    withTokens = withTokenFiles(text, baseDir);
  } catch (err) {
    throw new HereaboutsError(ErrorKind.InvalidConfig, `${path} has an invalid tokenFile entry`, { cause: err });
  }
  // client-node reads token files while loading: check them first (a FIFO would block, /dev/zero would exhaust memory).
  for (const tokenFile of tokenFilesOf(withTokens)) readKubeFile(tokenFile, `${path}: token file`, true);
  try {
    kc.loadFromString(withTokens);
    kc.makePathsAbsolute(baseDir);
  } catch (err) {
    throw new HereaboutsError(ErrorKind.InvalidConfig, `${path} is not a valid kubeconfig${whereInvalid(err)}`, {
      cause: err,
    });
  }
  if (options.context !== undefined) {
    if (kc.getContextObject(options.context) === null) {
      const known = kc.getContexts().map((c) => c.name);
      throw new NoSuchContextError(
        ErrorKind.InvalidConfig,
        `${path} has no context ${JSON.stringify(options.context)} (it has ${known.length === 0 ? 'none' : known.map((n) => JSON.stringify(n)).join(', ')})`,
      );
    }
    kc.setCurrentContext(options.context);
  }
  const user = kc.getCurrentUser();
  if (
    options.execCredentials === false &&
    user !== null &&
    (user.exec !== undefined || user.authProvider !== undefined)
  ) {
    throw new HereaboutsError(
      ErrorKind.InvalidConfig,
      `${path}: user ${JSON.stringify(user.name)} runs ${user.exec !== undefined ? 'an exec credential plugin' : 'an auth provider'}, ` +
        'which a kubeconfig named by the network configuration may not do',
      { details: 'the node operator may allow it with "allow_exec_credentials": true in the flat file' },
    );
  }
  // client-node reads these when it builds the TLS options: the same bounds apply.
  const cluster = kc.getCurrentCluster();
  for (const [file, what] of [
    [cluster?.caFile, 'certificate-authority'],
    [user?.certFile, 'client-certificate'],
    [user?.keyFile, 'client-key'],
  ] as const) {
    // Parsed YAML: a path may be null whatever the client's types say.
    const named: unknown = file;
    if (typeof named === 'string' && named !== '') readKubeFile(named, `${path}: ${what}`, true);
  }
  if (cluster === null || typeof cluster.server !== 'string' || cluster.server === '') {
    throw new HereaboutsError(
      ErrorKind.InvalidConfig,
      `${path}: current context ${JSON.stringify((kc.currentContext as string | undefined) ?? '')} names no cluster with a server`,
    );
  }
  const context = kc.getContextObject(kc.currentContext);
  const namespace =
    context?.namespace !== undefined && context.namespace !== '' ? context.namespace : DEFAULT_NAMESPACE;
  const requestOptions: RequestOptions = { headers: {} };
  try {
    await kc.applyToHTTPSOptions(requestOptions);
  } catch (err) {
    throw new HereaboutsError(ErrorKind.InvalidConfig, `${path}: cannot load credentials: ${messageOf(err)}`, {
      cause: err,
    });
  }
  // Token files usually end in a newline; client-go trims it, client-node does not.
  const headers = requestOptions.headers as Record<string, unknown>;
  if (typeof headers['Authorization'] === 'string') headers['Authorization'] = headers['Authorization'].trim();
  const server = cluster.server.replace(/\/+$/, '');
  const connections = options.connections ?? new ConnectionPool({ keep: false });
  const agent = keepAliveAgent(server, requestOptions, {
    plainHttp: server.startsWith('http:'),
    proxied: Boolean(cluster.proxyUrl),
    connections,
  });
  return { server, namespace, requestOptions: { ...requestOptions, agent }, agent };
}

/**
 * client-go spells a user's token file `tokenFile`; client-node 1.4 only reads `token-file`, and relative to the
 * working directory. Rewriting the key (with the path made absolute against the kubeconfig's directory, as
 * client-go does) makes rotated service-account tokens work either way: the file is read on every run.
 */
export function withTokenFiles(text: string, baseDir: string): string {
  const key = /(["']?)(tokenFile|token-file)\1(\s*:\s*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,}#]+)/g;
  return text.replace(key, (_match, quote: string, _name: string, colon: string, value: string) => {
    const raw = value.startsWith('"') ? String(JSON.parse(value)) : value.startsWith("'") ? value.slice(1, -1) : value;
    const absolute = isAbsolute(raw) ? raw : resolve(baseDir, raw);
    return `${quote}token-file${quote}${colon}${JSON.stringify(absolute)}`;
  });
}

/** The token-file paths of withTokenFiles' output (absolute, JSON-quoted). */
function tokenFilesOf(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(["']?)token-file\1\s*:\s*("(?:[^"\\\n]|\\.)*")/g))
    found.push(String(JSON.parse(m[2] as string)));
  return found;
}

/** A file a kubeconfig needs, read bounded; failures are code 7 naming the key and the path. */
function readKubeFile(path: string, what: string, followLinks: boolean): Buffer {
  try {
    return readBounded(path, { followLinks });
  } catch (err) {
    const why = err instanceof UnsafeFileError ? err.reason : 'cannot be read';
    throw new HereaboutsError(ErrorKind.InvalidConfig, `${what} ${JSON.stringify(path)} ${why}`, { cause: err });
  }
}

/** Where a kubeconfig failed to parse, without quoting it: the YAML parser's line, or client-node's structural message. */
function whereInvalid(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'mark' in err) {
    const mark = (err as { mark?: { line?: unknown; column?: unknown } }).mark;
    if (typeof mark?.line === 'number')
      return ` (YAML error at line ${mark.line + 1}, column ${Number(mark.column) + 1})`;
  }
  const msg = messageOf(err);
  // client-node's own checks say which entry lacks what ("clusters[0].cluster.[server] is missing").
  return /^(clusters|users|contexts)[\w.[\]]* is missing$/.test(msg) ? `: ${msg}` : '';
}

/**
 * One keep-alive agent per call (kept across calls by the node agent's pool, connection-pool.ts): an ADD with reservations makes two requests, and the second one then skips the
 * TLS handshake. Proxied and plain-HTTP clusters keep the agent client-node built for them.
 */
function keepAliveAgent(
  server: string,
  options: RequestOptions,
  how: { plainHttp: boolean; proxied: boolean; connections: ConnectionPool },
): Agent {
  if ((how.plainHttp || how.proxied) && typeof options.agent === 'object') return options.agent;
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
  return how.connections.agentFor(
    server,
    options,
    () =>
      new HttpsAgent({
        keepAlive: true,
        maxSockets: 4,
        timeout: IDLE_SOCKET_MS,
        ...(ca === undefined ? {} : { ca }),
        ...(cert === undefined ? {} : { cert }),
        ...(key === undefined ? {} : { key }),
        ...(pfx === undefined ? {} : { pfx }),
        ...(passphrase === undefined ? {} : { passphrase }),
        ...(rejectUnauthorized === undefined ? {} : { rejectUnauthorized }),
        ...(servername === undefined ? {} : { servername }),
      }),
  );
}
