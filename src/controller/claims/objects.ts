// The objects of DESIGN §12 and their paths: Cluster API's IPAddressClaim, IPAddress and Cluster, and hereabouts'
// own pool kinds and PrefixClaim. Reads and writes of these go straight to the API (they are not IPPools or
// reservations: those go through the store's writer); every write that must not land on a newer version carries
// the resourceVersion it was decided on.
import type { ApiClient, ApiResponse } from '../../kube/api.ts';
import { ApiStatusError } from '../../kube/errors.ts';
import { recordOf } from '../../record.ts';

export const CAPI_IPAM_GROUP = 'ipam.cluster.x-k8s.io';
export const CAPI_IPAM_VERSION = 'v1beta2';
export const CAPI_GROUP = 'cluster.x-k8s.io';
export const CAPI_VERSION = 'v1beta2';
export const GROUP = 'hereabouts.cni.cncf.io';
export const VERSION = 'v1alpha1';

/** On a claim: its address goes back to the pool before the claim may go. */
export const RELEASE_FINALIZER = 'ipam.cluster.x-k8s.io/ReleaseAddress';
/** On an IPAddress: it goes only with its claim. */
export const PROTECT_FINALIZER = 'ipam.cluster.x-k8s.io/ProtectAddress';
/** On a PrefixClaim: its block goes back to the pool before the claim may go. */
export const PREFIX_FINALIZER = 'hereabouts.cni.cncf.io/release-prefix';
/** On a pool: it goes only once no claim holds an address of it. */
export const POOL_FINALIZER = 'hereabouts.cni.cncf.io/protect-pool';
/** Cluster API's pause, on the claim (or its Cluster's spec.paused). */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';
/** On an IPAddress: the IPPool that records its address, so it can be released even once its pool is gone. */
export const IPPOOL_ANNOTATION = 'hereabouts.cni.cncf.io/ippool';

export type PoolKind = 'AddressPool' | 'GlobalAddressPool';
export const POOL_KINDS: readonly PoolKind[] = ['AddressPool', 'GlobalAddressPool'];

export interface Resource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export const IPADDRESSCLAIMS: Resource = {
  group: CAPI_IPAM_GROUP,
  version: CAPI_IPAM_VERSION,
  plural: 'ipaddressclaims',
  namespaced: true,
};
export const IPADDRESSES: Resource = {
  group: CAPI_IPAM_GROUP,
  version: CAPI_IPAM_VERSION,
  plural: 'ipaddresses',
  namespaced: true,
};
export const CLUSTERS: Resource = { group: CAPI_GROUP, version: CAPI_VERSION, plural: 'clusters', namespaced: true };
export const ADDRESSPOOLS: Resource = { group: GROUP, version: VERSION, plural: 'addresspools', namespaced: true };
export const GLOBALADDRESSPOOLS: Resource = {
  group: GROUP,
  version: VERSION,
  plural: 'globaladdresspools',
  namespaced: false,
};
export const PREFIXCLAIMS: Resource = { group: GROUP, version: VERSION, plural: 'prefixclaims', namespaced: true };
export const NADS: Resource = {
  group: 'k8s.cni.cncf.io',
  version: 'v1',
  plural: 'network-attachment-definitions',
  namespaced: true,
};

export function apiVersionOf(r: Resource): string {
  return `${r.group}/${r.version}`;
}

/** The collection (all namespaces when `namespace` is absent) or one object. */
export function pathOf(r: Resource, namespace?: string, name?: string): string {
  const base = `/apis/${r.group}/${r.version}`;
  const ns = r.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${r.plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

export interface Meta {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly generation: number;
  readonly deleting: boolean;
  readonly finalizers: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export function metaOf(object: unknown): Meta {
  const m = recordOf(recordOf(object)['metadata']);
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const strings = (v: unknown): Record<string, string> =>
    Object.fromEntries(Object.entries(recordOf(v)).filter((e): e is [string, string] => typeof e[1] === 'string'));
  return {
    name: str(m['name']),
    namespace: str(m['namespace']),
    uid: str(m['uid']),
    resourceVersion: str(m['resourceVersion']),
    generation: typeof m['generation'] === 'number' ? m['generation'] : 0,
    deleting: typeof m['deletionTimestamp'] === 'string',
    finalizers: Array.isArray(m['finalizers']) ? m['finalizers'].filter((f) => typeof f === 'string') : [],
    labels: strings(m['labels']),
    annotations: strings(m['annotations']),
  };
}

/** The object, or undefined when it does not exist (or its kind is not served). */
export async function getOne(api: ApiClient, r: Resource, namespace: string, name: string): Promise<unknown> {
  const res = await api.send({ method: 'GET', path: pathOf(r, namespace, name) });
  if (res.status === 404) return undefined;
  check(res, `get ${r.plural} ${namespace}/${name}`);
  return res.body;
}

export type WriteResult = 'done' | 'conflict' | 'gone';

/**
 * A merge patch; with `resourceVersion` it lands only on that version. `status`: the status subresource. `written`
 * is told the resourceVersion the patch made.
 */
export async function patchOne(
  api: ApiClient,
  r: Resource,
  target: { readonly namespace: string; readonly name: string },
  patch: Record<string, unknown>,
  options: {
    readonly resourceVersion?: string;
    readonly status?: boolean;
    readonly written?: (resourceVersion: string) => void;
  } = {},
): Promise<WriteResult> {
  const body =
    options.resourceVersion === undefined
      ? patch
      : { ...patch, metadata: { ...recordOf(patch['metadata']), resourceVersion: options.resourceVersion } };
  const res = await api.send({
    method: 'PATCH',
    path: `${pathOf(r, target.namespace, target.name)}${options.status === true ? '/status' : ''}`,
    body,
    contentType: 'application/merge-patch+json',
  });
  if (res.status === 409) return 'conflict';
  if (res.status === 404) return 'gone';
  check(res, `patch ${r.plural} ${target.namespace}/${target.name}`);
  options.written?.(metaOf(res.body).resourceVersion);
  return 'done';
}

/** Creates the object; 'exists' when one of its name exists already (whatever it holds). */
export async function createOne(api: ApiClient, r: Resource, object: unknown): Promise<'created' | 'exists'> {
  const meta = metaOf(object);
  const res = await api.send({ method: 'POST', path: pathOf(r, meta.namespace), body: object });
  if (res.status === 409) return 'exists';
  check(res, `create ${r.plural} ${meta.namespace}/${meta.name}`);
  return 'created';
}

/**
 * Deletes the object in the version given (uid and resourceVersion preconditions). 'lingers': the API answered with
 * the object marked for deletion, another finalizer still holding it.
 */
export async function deleteOne(
  api: ApiClient,
  r: Resource,
  target: Pick<Meta, 'namespace' | 'name' | 'uid' | 'resourceVersion'>,
): Promise<WriteResult | 'lingers'> {
  const res = await api.send({
    method: 'DELETE',
    path: pathOf(r, target.namespace, target.name),
    body: { preconditions: { uid: target.uid, resourceVersion: target.resourceVersion } },
  });
  if (res.status === 409) return 'conflict';
  if (res.status === 404) return 'gone';
  check(res, `delete ${r.plural} ${target.namespace}/${target.name}`);
  const answered = metaOf(res.body);
  return answered.deleting && answered.finalizers.length > 0 ? 'lingers' : 'done';
}

/** Finalizers with `finalizer` added or removed, as a patch conditional on the version they were read at. */
export function finalizerPatch(meta: Meta, finalizer: string, present: boolean): Record<string, unknown> | undefined {
  const has = meta.finalizers.includes(finalizer);
  if (has === present) return undefined;
  const finalizers = present ? [...meta.finalizers, finalizer] : meta.finalizers.filter((f) => f !== finalizer);
  return { metadata: { finalizers } };
}

function check(res: ApiResponse, what: string): void {
  if (res.status < 200 || res.status >= 300) throw new ApiStatusError(what, res);
}
