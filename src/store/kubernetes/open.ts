// Entry point of the Kubernetes store, imported lazily by src/store/open.ts so that local-store verbs never load
// the Kubernetes client.
import type { Logger } from '../../log/logger.ts';
import type { DatastoreConfig, NetworkConfig } from '../../config/types.ts';
import { ApiClient } from '../../kube/api.ts';
import { ConnectionPool } from '../../kube/connection-pool.ts';
import { kubeconfigResolver, loadEndpointCached } from '../../kube/endpoint-cache.ts';
import { WHEREABOUTS_LEADER_TIMING } from '../../config/leader-timing.ts';
import { WriteMemory } from './contention.ts';
import { KubernetesStore, type KubernetesStoreOptions } from './kubernetes-store.ts';
import { resolveNodeName } from './node-name.ts';
import { mark } from '../../kube/timings.ts';
import { TlsSessionStore } from '../../kube/tls-session.ts';
import type { WarmOptions, WarmSets } from './warm/warm-sets.ts';
import type { NodePods } from './node-pods.ts';

export type { WarmSets, WarmOptions, WarmPolicy, WarmStats } from './warm/warm-sets.ts';
export type { NodePodsStats } from './node-pods.ts';
export { readPending as readJournalPending } from './warm/journal.ts';
export type { HandOut as JournalHandOut } from './warm/journal.ts';

/** Per-request timeout of the API calls (Whereabouts uses 10 s as well). */
export const REQUEST_TIMEOUT_MS = 10_000;

/**
 * What a long-lived host (the node agent) keeps for its life and hands to every store it opens. A plugin process
 * has none: its one store opens with a pool that keeps no connection and an empty memory (which takes in what the
 * node cache kept of earlier processes' contention).
 */
export interface StoreHost {
  /** API connections kept across calls (src/kube/connection-pool.ts). */
  readonly connections: ConnectionPool;
  /** What the host's commits saw of other writers on shared pools (contention.ts). */
  readonly memory: WriteMemory;
  /** The node agent's warm sets (DESIGN §11); absent: every call runs the synchronous path. */
  readonly warm?: WarmSets;
  /** The node agent's watch of its node's pods, for sticky networks (pod-facts.ts); absent: one read per ADD. */
  readonly pods?: NodePods;
}

/**
 * The host of a process that serves many calls (the node agent): connections kept, one memory, and the warm sets when
 * asked for, for its life. Resolves to its maker, which the agent calls once its socket is its own: the warm-set
 * modules load only here, never in a plugin process's store.
 */
export async function longLivedHost(warm?: WarmOptions): Promise<() => StoreHost> {
  const Warm = warm === undefined ? undefined : (await import('./warm/warm-sets.ts')).WarmSets;
  const { NodePods } = await import('./node-pods.ts');
  const log = warm?.log ?? ((): void => undefined);
  return () => ({
    connections: new ConnectionPool({ keep: true }),
    memory: new WriteMemory(),
    pods: new NodePods({ debug: () => undefined, info: log, warning: log, error: log }),
    ...(Warm === undefined || warm === undefined ? {} : { warm: new Warm(warm) }),
  });
}

export interface OpenKubernetesOptions {
  readonly log: Logger;
  /** Overrides for tests and benchmarks (timeouts, lock timing, slice-cache TTL). */
  readonly tuning?: Partial<
    Omit<
      KubernetesStoreOptions,
      'api' | 'node' | 'cacheDir' | 'reservations' | 'log' | 'memory' | 'whereaboutsLease' | 'warm'
    >
  > & {
    readonly requestTimeoutMs?: number;
  };
  /** Defaults to process.env (NODENAME). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The host's connections and memory; absent (a plugin process): fresh ones for this store. */
  readonly host?: StoreHost;
}

export async function openKubernetesStore(
  config: NetworkConfig,
  datastore: Extract<DatastoreConfig, { kind: 'kubernetes' }>,
  options: OpenKubernetesOptions,
): Promise<KubernetesStore> {
  const node = resolveNodeName({
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(config.ipam.configurationPath === undefined ? {} : { configurationPath: config.ipam.configurationPath }),
  });
  mark('process start, config');
  const host = options.host ?? { connections: new ConnectionPool({ keep: false }), memory: new WriteMemory() };
  // Trust boundary: never through a link; credential plugins only when the operator named the file or allowed them.
  // The resolved connection is cached in the node cache (per trust level): the client is loaded only on a miss.
  const execCredentials = datastore.execCredentials ?? false;
  const resolver = kubeconfigResolver({ execCredentials, followLinks: false });
  const { endpoint, outcome } = await loadEndpointCached(datastore.kubeconfig, datastore.cacheDir, resolver, {
    scope: `exec=${execCredentials}`,
    connections: host.connections,
  });
  mark(`kubeconfig (${outcome})`);
  options.log.debug(
    `kubernetes store: ${endpoint.server}, namespace ${endpoint.namespace}, node ${node.name} (from ${node.from}), kubeconfig cache ${outcome}`,
  );
  const { requestTimeoutMs, ...tuning } = options.tuning ?? {};
  const tlsSessions = new TlsSessionStore(datastore.cacheDir, endpoint.server, endpoint.requestOptions);
  const api = new ApiClient(endpoint, {
    timeoutMs: requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    tlsSessions,
    connections: host.connections,
  });
  return new KubernetesStore({
    ...tuning,
    api,
    node: node.name,
    cacheDir: datastore.cacheDir,
    reservations: config.ipam.enableOverlappingRanges,
    log: options.log,
    memory: host.memory,
    ...(host.warm === undefined ? {} : { warm: host.warm }),
    ...(host.pods === undefined ? {} : { pods: host.pods }),
    whereaboutsLease: config.ipam.leaderTiming ?? WHEREABOUTS_LEADER_TIMING,
  });
}
