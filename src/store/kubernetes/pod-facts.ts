// What a sticky network asks of the pod an ADD is for (store.ts PodFacts; docs/sticky.md): the node agent's watch
// keeps these facts of its node's pods (node-pods.ts), a plugin process without an agent reads the one pod.
//
// A pod's ownerReferences are the pod creator's word: the API server checks neither that the object a reference
// names exists nor that it has the uid the reference gives. A tenant who may create pods in a namespace could name a
// running VirtualMachineInstance, or a StatefulSet under a replica's name, as the controller of a bare pod, and take
// that VM's or replica's sticky address. So a controller that would bind an address (the kinds src/ipam/sticky.ts
// bindingOf binds) is read live first, and kept only when it exists under the uid the reference names (verifyOwner).
import { ErrorKind, HereaboutsError, messageOf } from '../../errors.ts';
import { monotonicMs } from '../../clock.ts';
import { statusText, type ApiClient, type ApiResponse } from '../../kube/api.ts';
import { isRecord, recordOf } from '../../record.ts';
import { STICKY_ANNOTATION } from '../sticky-binding.ts';
import type { PodFacts } from '../store.ts';

const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

type Owner = NonNullable<PodFacts['owner']>;

/** PodFacts as the pod object has them: the controller reference with the uid it names (absent: it names none). */
export interface ObservedPodFacts extends PodFacts {
  readonly owner?: Owner & { readonly uid?: string };
}

/** The facts of a pod object (undefined: not a pod with a uid). */
export function podFactsOf(object: unknown): ObservedPodFacts | undefined {
  const metadata = recordOf(recordOf(object)['metadata']);
  const uid = metadata['uid'];
  if (typeof uid !== 'string' || uid === '') return undefined;
  const refs = Array.isArray(metadata['ownerReferences']) ? metadata['ownerReferences'] : [];
  const controller = refs.map(recordOf).find((ref) => ref['controller'] === true);
  const { apiVersion, kind, name, uid: ownerUid } = controller ?? {};
  const owner =
    typeof apiVersion === 'string' && typeof kind === 'string' && typeof name === 'string'
      ? { apiVersion, kind, name, ...(typeof ownerUid === 'string' && ownerUid !== '' ? { uid: ownerUid } : {}) }
      : undefined;
  const podIndex = recordOf(metadata['labels'])[POD_INDEX_LABEL];
  const sticky = recordOf(metadata['annotations'])[STICKY_ANNOTATION];
  return {
    uid,
    ...(owner === undefined ? {} : { owner }),
    ...(typeof podIndex === 'string' ? { podIndex } : {}),
    ...(typeof sticky === 'string' ? { sticky } : {}),
  };
}

/** How long a host takes an owner it read under the claimed uid as verified (OwnerChecks). */
export const OWNER_CHECK_TTL_MS = 60_000;
/** Owners an OwnerChecks keeps at most; the oldest go first. */
export const OWNER_CHECK_MAX = 1_024;

/**
 * The owners a long-lived host (the node agent's NodePods) read lately under the uid a pod claimed, keyed by API
 * server, kind, namespace, name and uid: the interfaces of one pod, its retried ADDs and the replicas of one set on this node read
 * their owner once a minute at most. Only matches are kept: a claim that did not hold is read again every time. An
 * entry outlives its owner for the TTL at most, and only a pod naming that very uid can use it.
 */
export class OwnerChecks {
  readonly #verified = new Map<string, number>();
  readonly #now: () => number;
  readonly #ttlMs: number;

  constructor(options: { now?: () => number; ttlMs?: number } = {}) {
    this.#now = options.now ?? monotonicMs;
    this.#ttlMs = options.ttlMs ?? OWNER_CHECK_TTL_MS;
  }

  get size(): number {
    return this.#verified.size;
  }

  has(key: string): boolean {
    const until = this.#verified.get(key);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#verified.delete(key);
    return false;
  }

  add(key: string): void {
    this.#verified.delete(key); // re-inserted last: the Map's order is the order of expiry
    this.#verified.set(key, this.#now() + this.#ttlMs);
    for (const oldest of this.#verified.keys()) {
      if (this.#verified.size <= OWNER_CHECK_MAX) break;
      this.#verified.delete(oldest);
    }
  }
}

export interface OwnerCheckOptions {
  /** Where a pod that claims an owner it does not have is reported (a warning). */
  readonly log?: { warning(msg: string): void };
  /** The host's owners verified lately (absent: every check reads). */
  readonly checks?: OwnerChecks;
}

/**
 * The owner kinds that bind an address (src/ipam/sticky.ts bindingOf: a StatefulSet of the apps group, a
 * VirtualMachineInstance of kubevirt.io, any version), with where the live object is read and who may read it.
 */
function bindingOwner(
  namespace: string,
  owner: Owner,
): { readonly path: string; readonly what: string; readonly resource: string; readonly rule: string } | undefined {
  const group = owner.apiVersion.split('/')[0];
  const at = (groupVersion: string, plural: string): string =>
    `/apis/${groupVersion}/namespaces/${encodeURIComponent(namespace)}/${plural}/${encodeURIComponent(owner.name)}`;
  if (owner.kind === 'StatefulSet' && group === 'apps') {
    return {
      path: at('apps/v1', 'statefulsets'),
      what: `StatefulSet ${namespace}/${owner.name}`,
      resource: 'statefulsets.apps',
      rule: 'get on statefulsets (group apps)',
    };
  }
  if (owner.kind === 'VirtualMachineInstance' && group === 'kubevirt.io') {
    return {
      path: at('kubevirt.io/v1', 'virtualmachineinstances'),
      what: `VirtualMachineInstance ${namespace}/${owner.name}`,
      resource: 'virtualmachineinstances.kubevirt.io',
      rule: 'get on virtualmachineinstances (group kubevirt.io)',
    };
  }
  return undefined;
}

/** A 404 about the object itself (a NotFound Status naming it), not about its kind. */
function isObjectNotFound(res: ApiResponse, name: string): boolean {
  const body = recordOf(res.body);
  return body['reason'] === 'NotFound' && recordOf(body['details'])['name'] === name;
}

function withoutOwner(facts: ObservedPodFacts): ObservedPodFacts {
  return {
    uid: facts.uid,
    ...(facts.podIndex === undefined ? {} : { podIndex: facts.podIndex }),
    ...(facts.sticky === undefined ? {} : { sticky: facts.sticky }),
  };
}

/**
 * The facts of pod `namespace/name` with its controller kept only when the cluster agrees with it: a controller
 * that would bind an address is read (GET), and must exist under the uid the reference names. When it does not (no
 * such object, another uid, a reference without one), the pod is an ordinary pod: its facts come back without an
 * owner, and a warning names the pod and the owner it claimed. A 404 that is not about the object (its kind is not
 * served) is no answer: Unavailable. A pod opted out (annotation "false"), or whose
 * controller binds nothing, is not read for. Throws Unavailable when the owner cannot be read now (kubelet retries
 * the ADD; a binding is never granted unchecked) and Forbidden when the node's credentials may not read it.
 */
export async function verifyOwner(
  api: ApiClient,
  namespace: string,
  name: string,
  facts: ObservedPodFacts,
  options: OwnerCheckOptions = {},
): Promise<ObservedPodFacts> {
  const owner = facts.owner;
  if (owner === undefined || facts.sticky === 'false') return facts;
  const target = bindingOwner(namespace, owner);
  if (target === undefined) return facts;
  const pod = `pod ${namespace}/${name} (uid ${facts.uid})`;
  const claimed = `${target.what}${owner.uid === undefined ? '' : ` (uid ${owner.uid})`}`;
  const refuse = (why: string): ObservedPodFacts => {
    options.log?.warning(
      `sticky: ${pod} names ${claimed} as its controller, but ${why}: the pod gets no sticky binding (an ordinary attachment)`,
    );
    return withoutOwner(facts);
  };
  if (owner.uid === undefined) return refuse('the reference names no uid');
  const key = `${api.endpoint.server}|${target.path}|${owner.uid}`;
  if (options.checks?.has(key) === true) return facts;
  let res: ApiResponse;
  try {
    res = await api.send({ method: 'GET', path: target.path });
  } catch (err) {
    throw new HereaboutsError(
      ErrorKind.Unavailable,
      `reading ${target.what}, the controller of ${pod}: ${messageOf(err)}`,
      { details: 'a sticky binding is granted only once its owner is read: the ADD is tried again', cause: err },
    );
  }
  if (res.status === 404) {
    if (isObjectNotFound(res, owner.name)) return refuse('the API server has no such object');
    // The kind itself is not served (KubeVirt not installed, or an API server still starting): no answer about the
    // object, and a VM's own pod must not lose its address to a passing state.
    throw new HereaboutsError(
      ErrorKind.Unavailable,
      `reading ${target.what}, the controller of ${pod}: ${statusText(res)}`,
      { details: `the API server does not serve ${target.resource} now: the ADD is tried again` },
    );
  }
  if (res.status === 401 || res.status === 403) {
    throw new HereaboutsError(
      ErrorKind.Forbidden,
      `reading ${target.what}, the controller of ${pod}: ${statusText(res)}`,
      {
        details: `a sticky network reads the owner a pod names before binding its address: the node's credentials need ${target.rule}`,
      },
    );
  }
  if (res.status !== 200 || !isRecord(res.body)) {
    throw new HereaboutsError(
      ErrorKind.Unavailable,
      `reading ${target.what}, the controller of ${pod}: ${statusText(res)}`,
      { details: 'a sticky binding is granted only once its owner is read: the ADD is tried again' },
    );
  }
  const live = recordOf(res.body['metadata'])['uid'];
  if (live !== owner.uid) {
    return refuse(typeof live === 'string' ? `the object there has uid ${live}` : 'the object there has no uid');
  }
  options.checks?.add(key);
  return facts;
}

/**
 * One read of the pod; undefined when it does not exist or has another UID. Its controller is kept only once
 * verified (verifyOwner).
 */
export async function readPodFacts(
  api: ApiClient,
  namespace: string,
  name: string,
  uid: string | undefined,
  options: OwnerCheckOptions = {},
): Promise<ObservedPodFacts | undefined> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  const res = await api.send({ method: 'GET', path });
  if (res.status === 404) return undefined;
  if (res.status === 401 || res.status === 403) {
    throw new HereaboutsError(ErrorKind.Forbidden, `reading pod ${namespace}/${name}: ${statusText(res)}`, {
      details: "a sticky network reads the pod's owner: the node's credentials need get/list/watch on pods",
    });
  }
  if (res.status !== 200 || !isRecord(res.body)) {
    throw new HereaboutsError(ErrorKind.Unavailable, `reading pod ${namespace}/${name}: ${statusText(res)}`);
  }
  const facts = podFactsOf(res.body);
  if (facts === undefined || (uid !== undefined && facts.uid !== uid)) return undefined;
  return verifyOwner(api, namespace, name, facts, options);
}
