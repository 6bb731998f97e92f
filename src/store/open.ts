// Chooses the store the config asks for. The Kubernetes store (and with it the Kubernetes client) is imported
// only when the datastore is "kubernetes", so local-store verbs never load it.
import type { NetworkConfig } from '../config/types.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from './store.ts';
import type { StoreHost } from './kubernetes/open.ts';

export type { StoreHost } from './kubernetes/open.ts';

export interface OpenStoreOptions {
  readonly log: Logger;
  /** The request's environment (NODENAME); default process.env. A node agent serves many, each with its own. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** What the host keeps across the calls it serves (the node agent); absent in a plugin process. */
  readonly host?: StoreHost;
}

export async function openStore(config: NetworkConfig, options: OpenStoreOptions): Promise<Store> {
  const datastore = config.ipam.datastore;
  if (datastore.kind === 'local') {
    // Lazy even here: VERSION and config errors must not pay for the store.
    const { LocalStore } = await import('./local/local-store.ts');
    return new LocalStore(datastore.dataDir, { log: options.log, reservations: config.ipam.enableOverlappingRanges });
  }
  const { openKubernetesStore } = await import('./kubernetes/open.ts');
  return openKubernetesStore(config, datastore, options);
}
