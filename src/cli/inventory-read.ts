// The reads behind the operator commands: LISTs of the whereabouts objects in the pools' namespace, of pods
// (cluster-wide, a page at a time, only each pod's view kept) and of NetworkAttachmentDefinitions (their network
// names), or a GET of the few pods an address names; and the claims (DESIGN §12) the pools' records name, listed
// (cluster-wide, once the pools are read: a record is written only once its claim exists) or read one by one. A 403
// on pods, NADs or claims is reported, not fatal.
import { IPADDRESSCLAIMS, IPADDRESSES, pathOf, PREFIXCLAIMS, type Resource } from '../controller/claims/objects.ts';
import { podView } from '../controller/orphans/pod-view.ts';
import { networkNamesOf } from '../controller/slices/spec.ts';
import { ApiUnreachableError, statusText, type ApiClient } from '../kube/api.ts';
import { listAll, listEach } from '../kube/list.ts';
import { recordOf } from '../record.ts';
import { objectPath } from '../store/kubernetes/objects.ts';
import type { ClaimHolder } from '../store/claim-record.ts';
import {
  buildInventory,
  claimInfo,
  claimKindsIn,
  ipAddressInfo,
  type ClaimInfo,
  type ClaimKind,
  type Claims,
  type Inventory,
  type PodInfo,
} from './inventory.ts';

export interface ReadOptions {
  /** List every pod (orphans, check, pool); otherwise the pods are read one by one by the caller. */
  readonly pods: boolean;
  /** List the claims of each kind the pools' records name (check, pool); otherwise they are not read. */
  readonly claims?: boolean;
}

const CLAIM_RESOURCES: Record<ClaimKind, Resource> = { IPAddressClaim: IPADDRESSCLAIMS, PrefixClaim: PREFIXCLAIMS };

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
  const inv = buildInventory({
    namespace,
    nowMs: Date.now(),
    ippools,
    reservations,
    nodeSlicePools,
    pods,
    nadNetworkNames,
    nodes,
  });
  if (options.claims !== true) return inv;
  // Read after the pools: a claim's record is written only once the claim exists, so a record listed before is
  // never taken for one of a claim that is gone merely because the claims were listed first.
  const claims: { -readonly [K in ClaimKind]?: ReadonlyMap<string, ClaimInfo> } = {};
  for (const kind of claimKindsIn(inv.pools)) {
    const listed = await listClaims(api, CLAIM_RESOURCES[kind]);
    if (listed !== undefined) claims[kind] = listed;
  }
  return { ...inv, claims };
}

/** Every claim of a kind by "namespace/name" (none when its CRD is not installed); undefined when not allowed. */
async function listClaims(api: ApiClient, resource: Resource): Promise<Map<string, ClaimInfo> | undefined> {
  const claims = new Map<string, ClaimInfo>();
  try {
    await listEach(api, pathOf(resource), (item) => {
      const meta = recordOf(recordOf(item)['metadata']);
      claims.set(`${String(meta['namespace'])}/${String(meta['name'])}`, claimInfo(item));
    });
  } catch (err) {
    if (err instanceof ApiUnreachableError) throw err;
    return undefined;
  }
  return claims;
}

/**
 * The claims the holders name, read live (an IPAddressClaim with the IPAddress of its name). A kind any of whose
 * claims could not be read (no access) is left out: its claims are unknown.
 */
export async function readClaims(api: ApiClient, holders: Iterable<ClaimHolder>): Promise<Claims> {
  const read = new Map<ClaimKind, Map<string, ClaimInfo>>();
  const unreadable = new Set<ClaimKind>();
  for (const holder of holders) {
    if (unreadable.has(holder.kind)) continue;
    const key = `${holder.namespace}/${holder.name}`;
    const known = read.get(holder.kind) ?? new Map<string, ClaimInfo>();
    read.set(holder.kind, known);
    if (known.has(key)) continue;
    const claim = await readObject(api, CLAIM_RESOURCES[holder.kind], holder);
    if (claim === 'forbidden') {
      unreadable.add(holder.kind);
      read.delete(holder.kind);
      continue;
    }
    const info: ClaimInfo = claim === 'gone' ? { deleting: false, gone: true } : claimInfo(claim.object);
    if (holder.kind !== 'IPAddressClaim') {
      known.set(key, info);
      continue;
    }
    // Also when the claim is gone: the controller deletes an IPAddress that outlived its claim before it releases
    // the address.
    const address = await readObject(api, IPADDRESSES, holder);
    if (address === 'forbidden') known.set(key, info);
    else known.set(key, { ...info, ipAddress: address === 'gone' ? null : ipAddressInfo(address.object) });
  }
  return Object.fromEntries(read);
}

/** The object; gone when it does not exist (or its kind is not served); forbidden when it may not be read. */
async function readObject(
  api: ApiClient,
  resource: Resource,
  at: { readonly namespace: string; readonly name: string },
): Promise<{ readonly object: unknown } | 'gone' | 'forbidden'> {
  const res = await api.send({ method: 'GET', path: pathOf(resource, at.namespace, at.name) });
  if (res.status === 404) return 'gone';
  if (res.status === 403) return 'forbidden';
  if (res.status !== 200) throw new Error(`get ${resource.plural} ${at.namespace}/${at.name}: ${statusText(res)}`);
  return { object: res.body };
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
