// Shared set-up of the Kubernetes store suites: networks configured for the kubernetes datastore, stores opened as
// simulated nodes (own NODENAME, own cache dir), and views of what the API server holds.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../src/log/logger.ts';
import type { NetworkConfig, RangeConfig } from '../../../src/config/types.ts';
import { formatIP, type Family } from '../../../src/ip/address.ts';
import { networkOf, parseCidr } from '../../../src/ip/cidr.ts';
import { openKubernetesStore, type OpenKubernetesOptions } from '../../../src/store/kubernetes/open.ts';
import type { KubernetesStore } from '../../../src/store/kubernetes/kubernetes-store.ts';
import type { CniCall } from '../../support/cni.ts';
import { createCached, type Namespace } from '../../support/control-plane.ts';
import { testNetwork, type TestNetworkOptions } from '../../support/memory-store.ts';

export interface KubeNetworkOptions extends TestNetworkOptions {
  readonly enableOverlappingRanges?: boolean;
  readonly nodeSliceSize?: number;
  readonly kubeconfig?: string;
}

/** A network on the kubernetes datastore of `ns` (the cache dir is per node, given when the store is opened). */
export function kubeNetwork(
  ns: Namespace,
  ranges: readonly RangeConfig[],
  options: KubeNetworkOptions = {},
): NetworkConfig {
  const base = testNetwork(ranges, options);
  return {
    ...base,
    ipam: {
      ...base.ipam,
      enableOverlappingRanges: options.enableOverlappingRanges ?? true,
      gcGraceSeconds: 0,
      ...(options.nodeSliceSize === undefined ? {} : { nodeSliceSize: options.nodeSliceSize }),
      datastore: {
        kind: 'kubernetes',
        kubeconfig: options.kubeconfig ?? ns.kubeconfig,
        cacheDir: join(ns.dir, 'unused'),
      },
    },
  };
}

/** Collects log lines instead of printing them (tests assert on warnings). */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (msg: string) => void lines.push(`[${level}] ${msg}`);
  return { lines, debug: push('debug'), info: push('info'), warning: push('warning'), error: push('error') };
}

export interface NodeOptions {
  readonly tuning?: OpenKubernetesOptions['tuning'];
  readonly log?: Logger;
}

/** The store as node `node` opens it: NODENAME=node and a cache dir of its own under the namespace's scratch dir. */
export async function openNode(
  ns: Namespace,
  config: NetworkConfig,
  node: string,
  options: NodeOptions = {},
): Promise<KubernetesStore> {
  const cacheDir = join(ns.dir, 'nodes', node);
  mkdirSync(cacheDir, { recursive: true });
  const datastore = config.ipam.datastore;
  if (datastore.kind !== 'kubernetes') throw new TypeError('openNode needs a kubernetes network');
  return openKubernetesStore(
    config,
    { ...datastore, cacheDir },
    {
      log: options.log ?? memoryLogger(),
      env: { NODENAME: node },
      ...(options.tuning === undefined ? {} : { tuning: options.tuning }),
    },
  );
}

export interface PoolView {
  readonly resourceVersion: string;
  readonly range: string;
  /** address text -> raw allocation entry */
  readonly allocations: Map<string, Record<string, unknown>>;
}

/** An IPPool as the API server holds it, keyed by address text; undefined when it does not exist. */
export async function poolView(ns: Namespace, name: string): Promise<PoolView | undefined> {
  const object = await ns.get('ippools', name);
  if (object === undefined) return undefined;
  const spec = object['spec'] as { range: string; allocations?: Record<string, Record<string, unknown>> };
  const metadata = object['metadata'] as { resourceVersion: string };
  const cidr = parseCidr(spec.range);
  const base = networkOf(cidr);
  const allocations = new Map<string, Record<string, unknown>>();
  for (const [offset, entry] of Object.entries(spec.allocations ?? {})) {
    allocations.set(formatIP({ family: cidr.family, value: base + BigInt(offset) }), entry);
  }
  return { resourceVersion: metadata.resourceVersion, range: spec.range, allocations };
}

/** Names of the OverlappingRangeIPReservations in the namespace, sorted. */
export async function reservationNames(ns: Namespace): Promise<string[]> {
  const items = await ns.list('overlappingrangeipreservations');
  return items.map((i) => (i['metadata'] as { name: string }).name).sort();
}

export function text(family: Family, value: bigint): string {
  return formatIP({ family, value });
}

// --- Process level: the packaged executable, as kubelet (through a meta-plugin) runs it.

export interface ConfOptions {
  readonly name: string;
  readonly range: string;
  readonly networkName?: string;
  readonly nodeSliceSize?: string;
  readonly enableOverlappingRanges?: boolean;
  readonly kubeconfig?: string;
}

/** The CNI request body (a network config delegating IPAM to us), with the cache dir of `node`. */
/** The call a runtime makes for pod `containerId`'s eth0 (the sandbox named as its pod, in namespace default). */
export function podCall(command: string, containerId: string): CniCall {
  return {
    command,
    path: '/opt/cni/bin',
    containerId,
    netns: `/var/run/netns/${containerId}`,
    ifname: 'eth0',
    args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${containerId}`,
  };
}

export function cniConf(ns: Namespace, node: string, options: ConfOptions): Record<string, unknown> {
  return {
    cniVersion: '1.1.0',
    name: options.name,
    type: 'bridge',
    ipam: {
      type: 'hereabouts',
      range: options.range,
      ...(options.networkName === undefined ? {} : { network_name: options.networkName }),
      ...(options.nodeSliceSize === undefined ? {} : { node_slice_size: options.nodeSliceSize }),
      ...(options.enableOverlappingRanges === undefined
        ? {}
        : { enable_overlapping_ranges: options.enableOverlappingRanges }),
      kubernetes: { kubeconfig: options.kubeconfig ?? ns.kubeconfig },
      cache_dir: join(ns.dir, 'nodes', node),
      log_file: join(ns.dir, 'nodes', `${node}.log`),
      log_level: 'debug',
    },
  };
}

/** A NodeSlicePool as the controller would leave it: `range` cut into `/sliceSize` slices, one per node in order. */
export async function createNodeSlicePool(
  ns: Namespace,
  name: string,
  range: string,
  slicePrefix: number,
  nodes: readonly string[],
): Promise<Map<string, string>> {
  const cidr = parseCidr(range);
  const size = 1n << BigInt((cidr.family === 4 ? 32 : 128) - slicePrefix);
  const count = Number(1n << BigInt(slicePrefix - cidr.prefix));
  const base = networkOf(cidr);
  const slices = new Map<string, string>();
  const allocations = Array.from({ length: count }, (_, i) => {
    const sliceRange = `${formatIP({ family: cidr.family, value: base + BigInt(i) * size })}/${slicePrefix}`;
    const nodeName = nodes[i] ?? '';
    if (nodeName !== '') slices.set(nodeName, sliceRange);
    return { nodeName, sliceRange };
  });
  await createCached(ns, 'nodeslicepools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'NodeSlicePool',
    metadata: { name },
    spec: { range, sliceSize: `/${slicePrefix}` },
    status: { allocations },
  });
  return slices;
}

/** Runs `tasks` with at most `limit` in flight; resolves to their results in order. */
export async function limited<T>(limit: number, tasks: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      const task = tasks[i];
      if (task !== undefined) results[i] = await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return results;
}
