// The reads behind the operator commands: LISTs of the whereabouts objects in the pools' namespace, of pods
// (cluster-wide, a page at a time, only each pod's view kept) and of NetworkAttachmentDefinitions (their network
// names), or a GET of the few pods an address names. A 403 on pods or NADs is reported, not fatal.
import { podView } from '../controller/orphans/pod-view.ts';
import { networkNamesOf } from '../controller/slices/spec.ts';
import { ApiUnreachableError, statusText, type ApiClient } from '../kube/api.ts';
import { listAll, listEach } from '../kube/list.ts';
import { recordOf } from '../record.ts';
import { objectPath } from '../store/kubernetes/objects.ts';
import { buildInventory, type Inventory, type PodInfo } from './inventory.ts';

export interface ReadOptions {
  /** List every pod (orphans, check, pool); otherwise the pods are read one by one by the caller. */
  readonly pods: boolean;
}

export async function readInventory(api: ApiClient, options: ReadOptions): Promise<Inventory> {
  const namespace = api.namespace;
  const [ippools, reservations, nodeSlicePools, pods, nadNetworkNames, nodes] = await Promise.all([
    listAll(api, objectPath(namespace, 'ippools')),
    listAll(api, objectPath(namespace, 'overlappingrangeipreservations')),
    listAll(api, objectPath(namespace, 'nodeslicepools')),
    options.pods ? listPods(api) : Promise.resolve(undefined),
    nadNames(api),
    options.pods ? nodeNames(api) : Promise.resolve(undefined),
  ]);
  return buildInventory({
    namespace,
    nowMs: Date.now(),
    ippools,
    reservations,
    nodeSlicePools,
    pods,
    nadNetworkNames,
    nodes,
  });
}

export function podInfo(item: unknown): PodInfo | undefined {
  const view = podView(item);
  if (view === undefined) return undefined;
  const node = (item as { spec?: { nodeName?: unknown } }).spec?.nodeName;
  return typeof node === 'string' && node !== '' ? { view, node } : { view };
}

/** Every pod by "namespace/name", page by page; undefined when the user may not list pods. */
export async function listPods(api: ApiClient): Promise<Map<string, PodInfo> | undefined> {
  const pods = new Map<string, PodInfo>();
  let token = '';
  do {
    const res = await api.send({
      method: 'GET',
      path: `/api/v1/pods?limit=500${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`,
    });
    if (res.status === 403) return undefined;
    if (res.status !== 200) throw new Error(`list pods: ${statusText(res)}`);
    const body = res.body as { items?: unknown[]; metadata?: { continue?: string } };
    for (const item of body.items ?? []) {
      const meta = (item as { metadata?: { namespace?: string; name?: string } }).metadata ?? {};
      const info = podInfo(item);
      if (info !== undefined) pods.set(`${meta.namespace ?? ''}/${meta.name ?? ''}`, info);
    }
    token = body.metadata?.continue ?? '';
  } while (token !== '');
  return pods;
}

/** The pod named by a podRef now: null when it does not exist. Throws when it cannot be read. */
export async function readPod(api: ApiClient, podRef: string): Promise<PodInfo | null> {
  const [namespace, name] = podRef.split('/', 2) as [string, string | undefined];
  if (name === undefined || name === '' || namespace === '') return null;
  const res = await api.send({
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
  });
  if (res.status === 404) return null;
  if (res.status !== 200) throw new Error(`get pod ${podRef}: ${statusText(res)}`);
  return podInfo(res.body) ?? null;
}

/** The names of the cluster's nodes; undefined when they cannot be listed (no access). */
async function nodeNames(api: ApiClient): Promise<string[] | undefined> {
  const names: string[] = [];
  try {
    await listEach(api, '/api/v1/nodes', (item) => {
      const name = recordOf(recordOf(item)['metadata'])['name'];
      if (typeof name === 'string') names.push(name);
    });
  } catch (err) {
    if (err instanceof ApiUnreachableError) throw err;
    return undefined;
  }
  return names;
}

/** The network names the NADs of the cluster declare; none when they cannot be listed (no CRD, no access). */
async function nadNames(api: ApiClient): Promise<string[]> {
  const res = await api.send({
    method: 'GET',
    path: '/apis/k8s.cni.cncf.io/v1/network-attachment-definitions?limit=500',
  });
  if (res.status !== 200) return [];
  const items = (res.body as { items?: unknown[] }).items ?? [];
  return items.flatMap((item) => networkNamesOf(item));
}
