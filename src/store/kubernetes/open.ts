// Entry point of the Kubernetes store, imported lazily by src/store/open.ts so that local-store verbs never load
// the Kubernetes client.
import type { Logger } from '../../cni/log.ts';
import type { DatastoreConfig, NetworkConfig } from '../../config/types.ts';
import { ApiClient } from './api.ts';
import { loadEndpoint } from './kubeconfig.ts';
import { KubernetesStore, type KubernetesStoreOptions } from './kubernetes-store.ts';
import { resolveNodeName } from './node-name.ts';

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
  // Trust boundary: never through a link; credential plugins only when the operator named the file or allowed them.
  const endpoint = await loadEndpoint(datastore.kubeconfig, { execCredentials: datastore.execCredentials ?? false, followLinks: false });
  options.log.debug(`kubernetes store: ${endpoint.server}, namespace ${endpoint.namespace}, node ${node.name} (from ${node.from})`);
  const { requestTimeoutMs, ...tuning } = options.tuning ?? {};
  const api = new ApiClient(endpoint, { timeoutMs: requestTimeoutMs ?? REQUEST_TIMEOUT_MS });
  return new KubernetesStore({
    ...tuning,
    api,
    node: node.name,
    cacheDir: datastore.cacheDir,
    reservations: config.ipam.enableOverlappingRanges,
    log: options.log,
  });
}
