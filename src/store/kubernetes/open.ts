// Entry point of the Kubernetes store, imported lazily by src/store/open.ts so that local-store verbs never load
// the Kubernetes client.
import type { Logger } from '../../log/logger.ts';
import type { DatastoreConfig, NetworkConfig } from '../../config/types.ts';
import { ApiClient } from '../../kube/api.ts';
import { kubeconfigResolver, loadEndpointCached } from '../../kube/endpoint-cache.ts';
import { KubernetesStore, type KubernetesStoreOptions } from './kubernetes-store.ts';
import { resolveNodeName } from './node-name.ts';
import { mark } from '../../kube/timings.ts';
import { TlsSessionStore } from '../../kube/tls-session.ts';

/** Per-request timeout of the API calls (Whereabouts uses 10 s as well). */
export const REQUEST_TIMEOUT_MS = 10_000;

export interface OpenKubernetesOptions {
  readonly log: Logger;
  /** Overrides for tests and benchmarks (timeouts, lock timing, slice-cache TTL). */
  readonly tuning?: Partial<Omit<KubernetesStoreOptions, 'api' | 'node' | 'cacheDir' | 'reservations' | 'log'>> & {
    readonly requestTimeoutMs?: number;
  };
  /** Defaults to process.env (NODENAME). */
  readonly env?: Readonly<Record<string, string | undefined>>;
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
  // Trust boundary: never through a link; credential plugins only when the operator named the file or allowed them.
  // The resolved connection is cached in the node cache (per trust level): the client is loaded only on a miss.
  const execCredentials = datastore.execCredentials ?? false;
  const resolver = kubeconfigResolver({ execCredentials, followLinks: false });
  const { endpoint, outcome } = await loadEndpointCached(datastore.kubeconfig, datastore.cacheDir, resolver, `exec=${execCredentials}`);
  mark(`kubeconfig (${outcome})`);
  options.log.debug(
    `kubernetes store: ${endpoint.server}, namespace ${endpoint.namespace}, node ${node.name} (from ${node.from}), kubeconfig cache ${outcome}`,
  );
  const { requestTimeoutMs, ...tuning } = options.tuning ?? {};
  const tlsSessions = new TlsSessionStore(datastore.cacheDir, endpoint.server, endpoint.requestOptions);
  const api = new ApiClient(endpoint, { timeoutMs: requestTimeoutMs ?? REQUEST_TIMEOUT_MS, tlsSessions });
  return new KubernetesStore({
    ...tuning,
    api,
    node: node.name,
    cacheDir: datastore.cacheDir,
    reservations: config.ipam.enableOverlappingRanges,
    log: options.log,
  });
}
