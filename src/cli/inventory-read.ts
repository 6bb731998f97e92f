// The reads behind the operator commands: LISTs of the whereabouts objects in the pools' namespace, of pods
// (cluster-wide, a page at a time, only each pod's view kept) and of NetworkAttachmentDefinitions (their network
// names), or a GET of the few pods an address names (and of the nodes its warm records name); and the claims
// (DESIGN §12) the pools' records name, listed (cluster-wide, once the pools are read: a record is written only once
// its claim exists) or read one by one. A 403 on pods, NADs or claims is reported, not fatal. For sticky addresses
// (docs/sticky.md), the StatefulSets, replica pods, VirtualMachines and VirtualMachineInstances their bindings depend
// on, read one by one (a 403: unknown).
import { IPADDRESSCLAIMS, IPADDRESSES, pathOf, PREFIXCLAIMS, type Resource } from '../controller/claims/objects.ts';
import { podView } from '../controller/orphans/pod-view.ts';
import { networkNamesOf } from '../controller/slices/spec.ts';
import { ApiUnreachableError, statusText, type ApiClient } from '../kube/api.ts';
import { listAll, listEach } from '../kube/list.ts';
import { recordOf } from '../record.ts';
import { messageOf } from '../errors.ts';
import { objectPath } from '../store/kubernetes/objects.ts';
import type { ClaimHolder } from '../store/claim-record.ts';
import { statefulSetView, type StatefulSetView } from '../controller/sticky/verdict.ts';
import { eachLimited } from '../controller/runtime/parallel.ts';
import { parseBinding, replicaName } from '../store/sticky-binding.ts';
import { boundRecords, type StickyObjects } from './bindings.ts';
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
  type Pods,
} from './inventory.ts';

export interface ReadOptions {
  /** List every pod (orphans, check, pool); otherwise the pods are read one by one by the caller. */
  readonly pods: boolean;
  /** List the claims of each kind the pools' records name (check, pool); otherwise they are not read. */
  readonly claims?: boolean;
  /** Read the objects the bindings of the pools' sticky records depend on (check, pool); otherwise not read. */
  readonly sticky?: boolean;
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
  const sticky =
    options.sticky === true
      ? await readStickyObjects(
          api,
          boundRecords(inv.pools.flatMap((p) => [...p.view.allocations.values()])).values(),
          inv.pods,
        )
      : undefined;
  if (options.claims !== true) return sticky === undefined ? inv : { ...inv, sticky };
  // Read after the pools: a claim's record is written only once the claim exists, so a record listed before is
  // never taken for one of a claim that is gone merely because the claims were listed first.
  const claims: { -readonly [K in ClaimKind]?: ReadonlyMap<string, ClaimInfo> } = {};
  for (const kind of claimKindsIn(inv.pools)) {
    const listed = await listClaims(api, CLAIM_RESOURCES[kind]);
    if (listed !== undefined) claims[kind] = listed;
  }
  return { ...inv, claims, ...(sticky === undefined ? {} : { sticky }) };
}

/**
 * What the bindings depend on, read now: a StatefulSet binding's set and replica pod (from `pods` when every pod was
 * listed), a VM binding's VirtualMachine and VirtualMachineInstance (a kind the server does not serve: none). What
 * may not be read (403) is left out: unknown.
 */
export async function readStickyObjects(
  api: ApiClient,
  bindings: Iterable<{ readonly namespace: string; readonly binding: string }>,
  pods?: Pods,
): Promise<StickyObjects> {
  const statefulSets = new Map<string, StatefulSetView | null>();
  const replicas = new Map<string, boolean>();
  const virtualMachines = new Map<string, boolean>();
  const virtualMachineInstances = new Map<string, boolean>();
  const reads: Array<() => Promise<void>> = [];
  const seen = new Set<string>();
  const once = (id: string, read: () => Promise<void>): void => {
    if (seen.has(id)) return;
    seen.add(id);
    reads.push(read);
  };
  for (const { namespace, binding } of bindings) {
    const parsed = parseBinding(binding);
    if (parsed === undefined || namespace === '') continue;
    const ns = encodeURIComponent(namespace);
    const name = encodeURIComponent(parsed.name);
    const key = `${namespace}/${parsed.name}`;
    if (parsed.kind === 'VirtualMachine') {
      for (const [plural, into] of [
        ['virtualmachines', virtualMachines],
        ['virtualmachineinstances', virtualMachineInstances],
      ] as const) {
        once(`${plural} ${key}`, async () => {
          const found = await readExisting(api, `/apis/kubevirt.io/v1/namespaces/${ns}/${plural}/${name}`);
          if (found !== 'forbidden') into.set(key, found !== null);
        });
      }
      continue;
    }
    once(`statefulsets ${key}`, async () => {
      const found = await readExisting(api, `/apis/apps/v1/namespaces/${ns}/statefulsets/${name}`);
      if (found === 'forbidden') return;
      const view = found === null ? null : statefulSetView(found.object);
      if (view !== undefined) statefulSets.set(key, view); // one this version cannot read: unknown
    });
    const pod = `${namespace}/${replicaName(parsed)}`;
    if (pods !== undefined) {
      replicas.set(pod, pods.has(pod));
      continue;
    }
    once(`pods ${pod}`, async () => {
      const found = await readExisting(api, `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(replicaName(parsed))}`);
      if (found !== 'forbidden') replicas.set(pod, found !== null);
    });
  }
  await eachLimited(reads, 8, (read) => read());
  return { statefulSets, pods: replicas, virtualMachines, virtualMachineInstances };
}

/** The object at `path`; null when there is none (or its kind is not served); forbidden when it may not be read. */
async function readExisting(api: ApiClient, path: string): Promise<{ readonly object: unknown } | null | 'forbidden'> {
  const res = await api.send({ method: 'GET', path });
  if (res.status === 404) return null;
  if (res.status === 403) return 'forbidden';
  if (res.status !== 200) throw new Error(`get ${path}: ${statusText(res)}`);
  return { object: res.body };
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

/** A node read now (GET): present, gone (404), or unknown with why (no access, another answer, unreachable). */
export type NodeState =
  { readonly state: 'present' } | { readonly state: 'gone' } | { readonly state: 'unknown'; readonly why: string };

export async function readNode(api: ApiClient, name: string): Promise<NodeState> {
  try {
    const res = await api.send({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(name)}` });
    if (res.status === 404) return { state: 'gone' };
    if (res.status === 200) return { state: 'present' };
    return { state: 'unknown', why: statusText(res) };
  } catch (err) {
    if (err instanceof ApiUnreachableError) return { state: 'unknown', why: messageOf(err) };
    throw err;
  }
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
