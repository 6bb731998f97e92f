// The resolved API connection of a kubeconfig, cached in the node cache so that an ADD does not load the Kubernetes
// client (and its YAML parser) on every pod start: kubeconfig.ts resolves it on a miss, endpoint-recipe.ts records
// where each piece came from (a file path, inline data, a token file), and a hit rebuilds the same endpoint from that
// recipe, reading the referenced files (token, CA, client certificate) again so rotated ones take effect.
//
// An entry is used only while the kubeconfig file is the same file (device, inode), of the same size and mtime, and
// of the same content (SHA-256). Exec plugins, auth providers, basic auth, impersonation and proxies are never
// cached: such kubeconfigs always go through kubeconfig.ts. Entries are 0600 files in a 0700 directory of the cache
// (they may hold an inline token or key, as the kubeconfig itself does); one not owned by us or readable by others
// is ignored.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions, type RequestOptions } from 'node:https';
import { join, resolve } from 'node:path';
import { ConnectionPool, IDLE_SOCKET_MS } from './connection-pool.ts';
import type { ApiEndpoint } from './kubeconfig.ts';
import { writeFileAtomic } from '../fs/atomic-write.ts';

export const ENTRY_FORMAT = 1;
/** A kubeconfig (or a file it names) larger than this is not cached: kubeconfig.ts decides about it. */
const MAX_KUBECONFIG_BYTES = 1 << 20;
export const CONNECTION_DIR = '.connection';

/** Inline data (base64) or a file read on every use. */
export type Material = { readonly data: string } | { readonly file: string };

/** How to rebuild an endpoint without the Kubernetes client. */
export interface Recipe {
  readonly server: string;
  readonly namespace: string;
  readonly ca?: Material;
  readonly cert?: Material;
  readonly key?: Material;
  readonly insecure?: true;
  readonly servername?: string;
  readonly auth?: { readonly token: string } | { readonly tokenFile: string };
}

interface Identity {
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly sha256: string;
}

export type CacheOutcome = 'hit' | 'miss' | 'uncacheable';

export interface CachedEndpoint {
  readonly endpoint: ApiEndpoint;
  readonly outcome: CacheOutcome;
}

/** The slow path: resolves a kubeconfig through the Kubernetes client (kubeconfig.ts and endpoint-recipe.ts). */
export interface Resolver {
  /** The endpoint, its agent from `connections`. */
  load(path: string, connections: ConnectionPool): Promise<ApiEndpoint>;
  recipe(text: string, path: string, endpoint: ApiEndpoint): Promise<Recipe | undefined>;
}

/** The slow path: the kubeconfig through the client, under the trust options of the config that named it. */
export function kubeconfigResolver(options: {
  readonly execCredentials: boolean;
  readonly followLinks: boolean;
}): Resolver {
  return {
    async load(path, connections) {
      const { loadEndpoint } = await import('./kubeconfig.ts');
      return loadEndpoint(path, { ...options, connections });
    },
    recipe: (text, path, endpoint) => defaultResolver.recipe(text, path, endpoint),
  };
}

const defaultResolver: Resolver = {
  async load(path, connections) {
    const { loadEndpoint } = await import('./kubeconfig.ts');
    return loadEndpoint(path, { connections });
  },
  async recipe(text, path, endpoint) {
    const { recipeOf } = await import('./endpoint-recipe.ts');
    return recipeOf(text, path, endpoint);
  },
};

export interface CachedEndpointOptions {
  /**
   * Names whatever else the slow path's answer depends on (e.g. how far the config that named this kubeconfig is
   * trusted): entries of different scopes never stand in for each other.
   */
  readonly scope?: string;
  /** Where the endpoint's agent comes from (default: a pool that keeps none, so the agent is the endpoint's own). */
  readonly connections?: ConnectionPool;
}

/** The endpoint of `kubeconfig`, from the node cache under `cacheDir` when it is still valid. */
export async function loadEndpointCached(
  kubeconfig: string,
  cacheDir: string,
  resolver: Resolver = defaultResolver,
  options: CachedEndpointOptions = {},
): Promise<CachedEndpoint> {
  const scope = options.scope ?? '';
  const connections = options.connections ?? new ConnectionPool({ keep: false });
  const read = readKubeconfig(kubeconfig);
  if (read === undefined) return { endpoint: await resolver.load(kubeconfig, connections), outcome: 'uncacheable' };
  const entryFile = join(cacheDir, CONNECTION_DIR, `${sha256(`${scope}\0${resolve(kubeconfig)}`).slice(0, 32)}.json`);
  const cached = readEntry(entryFile, read.identity);
  if (cached !== undefined) {
    const endpoint = endpointOf(cached, connections);
    if (endpoint !== undefined) return { endpoint, outcome: 'hit' };
  }
  const endpoint = await resolver.load(kubeconfig, connections);
  const recipe = await resolver.recipe(read.text, kubeconfig, endpoint);
  // Cached only when the recipe rebuilds exactly what the client resolved.
  const rebuilt = recipe === undefined ? undefined : endpointOf(recipe, connections);
  if (recipe === undefined || rebuilt === undefined || !sameEndpoint(rebuilt, endpoint)) {
    if (rebuilt !== undefined) connections.release(rebuilt.agent);
    return { endpoint, outcome: 'uncacheable' };
  }
  connections.release(rebuilt.agent);
  writeEntry(entryFile, { format: ENTRY_FORMAT, kubeconfig: resolve(kubeconfig), ...read.identity, recipe });
  return { endpoint, outcome: 'miss' };
}

function readKubeconfig(path: string): { text: string; identity: Identity } | undefined {
  let fd: number;
  try {
    // Never through a link, never blocking on a FIFO (the trust boundary of docs/security.md).
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined; // kubeconfig.ts reports it
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile() || st.size > BigInt(MAX_KUBECONFIG_BYTES)) return undefined;
    const buffer = Buffer.alloc(Number(st.size) + 1);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length !== Number(st.size)) return undefined; // changing under us
    const text = buffer.subarray(0, length).toString('utf8');
    const identity = {
      dev: String(st.dev),
      ino: String(st.ino),
      size: String(st.size),
      mtimeNs: String(st.mtimeNs),
      sha256: sha256(text),
    };
    return { text, identity };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readEntry(file: string, identity: Identity): Recipe | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    // Only our own, private entries: another user's file (or a widened mode) is not trusted.
    if (!st.isFile() || (st.mode & 0o077) !== 0 || st.uid !== process.getuid?.()) return undefined;
    const doc = JSON.parse(readFileSync(fd, 'utf8')) as Record<string, unknown>;
    if (doc['format'] !== ENTRY_FORMAT) return undefined;
    for (const key of ['dev', 'ino', 'size', 'mtimeNs', 'sha256'] as const)
      if (doc[key] !== identity[key]) return undefined;
    return doc['recipe'] as Recipe;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function writeEntry(file: string, doc: Record<string, unknown>): void {
  try {
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
    writeFileAtomic(file, JSON.stringify(doc), { mode: 0o600, durable: false });
  } catch {
    // A cache that cannot be written costs speed, not correctness.
  }
}

/**
 * The endpoint a recipe describes, its agent from `connections`; undefined when a file it names cannot be read (the
 * slow path reports why).
 */
export function endpointOf(recipe: Recipe, connections: ConnectionPool): ApiEndpoint | undefined {
  try {
    const options: RequestOptions = { headers: {} };
    const material = (m: Material | undefined): Buffer | undefined =>
      m === undefined ? undefined : 'file' in m ? readBounded(m.file) : Buffer.from(m.data, 'base64');
    const ca = material(recipe.ca);
    const cert = material(recipe.cert);
    const key = material(recipe.key);
    if (ca !== undefined) options.ca = ca;
    if (cert !== undefined) options.cert = cert;
    if (key !== undefined) options.key = key;
    if (recipe.insecure === true) options.rejectUnauthorized = false;
    if (recipe.servername !== undefined) options.servername = recipe.servername;
    const auth = recipe.auth;
    if (auth !== undefined) {
      const token = 'token' in auth ? auth.token : readBounded(auth.tokenFile).toString('utf8');
      (options.headers as Record<string, string>)['Authorization'] = `Bearer ${token}`.trim();
    }
    const tls = tlsOf(options);
    const agent = connections.agentFor(recipe.server, tls, () =>
      recipe.server.startsWith('http:')
        ? new HttpAgent({ keepAlive: true, maxSockets: 4, timeout: IDLE_SOCKET_MS })
        : new HttpsAgent({ keepAlive: true, maxSockets: 4, timeout: IDLE_SOCKET_MS, ...tls }),
    );
    return { server: recipe.server, namespace: recipe.namespace, requestOptions: { ...options, agent }, agent };
  } catch {
    return undefined;
  }
}

/** A regular file of at most MAX_KUBECONFIG_BYTES; anything else throws (and the slow path reports on it). */
function readBounded(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_KUBECONFIG_BYTES)
      throw new RangeError(`${file}: not a regular file of at most 1 MiB`);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function tlsOf(o: RequestOptions): AgentOptions {
  const { ca, cert, key, rejectUnauthorized, servername } = o;
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(rejectUnauthorized === undefined ? {} : { rejectUnauthorized }),
    ...(servername === undefined ? {} : { servername }),
  };
}

/** Same server, namespace, TLS material and headers; nothing else set that a recipe cannot express. */
export function sameEndpoint(a: ApiEndpoint, b: ApiEndpoint): boolean {
  if (a.server !== b.server || a.namespace !== b.namespace) return false;
  const x = a.requestOptions;
  const y = b.requestOptions;
  const bytes = (v: unknown): string | undefined =>
    v === undefined || v === null
      ? undefined
      : Buffer.isBuffer(v) || typeof v === 'string'
        ? Buffer.from(v).toString('base64')
        : JSON.stringify(v);
  for (const k of ['ca', 'cert', 'key'] as const) if (bytes(x[k]) !== bytes(y[k])) return false;
  if ((x.rejectUnauthorized ?? true) !== (y.rejectUnauthorized ?? true) || x.servername !== y.servername) return false;
  for (const k of ['pfx', 'passphrase', 'auth', 'socketPath', 'lookup'] as const)
    if (x[k] !== undefined || y[k] !== undefined) return false;
  const headers = (h: unknown): string =>
    JSON.stringify(Object.entries((h ?? {}) as Record<string, unknown>).sort(([p], [q]) => p.localeCompare(q)));
  return headers(x.headers) === headers(y.headers);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
