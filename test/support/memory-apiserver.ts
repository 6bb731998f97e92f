// An in-memory kube-apiserver for exactly the calls hereabouts makes, plugged in where the real client is
// (ApiClient.send). It keeps the server's rules that the write path relies on: uid and creationTimestamp on create,
// one global, monotonically increasing resourceVersion, 409 AlreadyExists on a second create, 409 Conflict on a stale
// resourceVersion (PUT, merge PATCH) and on failed DeleteOptions preconditions, JSON patches (422 when one fails), 404 NotFound, metadata.generation bumps
// on spec changes, status subresources, graceful pod deletion, Status objects as error bodies, paginated LISTs over
// a consistent snapshot. Watches are not served (the model drives controller passes from LISTs).
// test/integration/model/memory-apiserver-fidelity.test.ts runs one request script against this and the real server.
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { ApiClient, type ApiRequest, type ApiResponse } from '../../src/kube/api.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => structuredClone(v);

interface Kind {
  readonly kind: string;
  readonly namespaced: boolean;
  /** Has a status subresource: the main resource ignores status, /status ignores everything else. */
  readonly status: boolean;
  /** Custom resources refuse an update without metadata.resourceVersion (422); core types allow it. */
  readonly custom: boolean;
}

const KINDS: Readonly<Record<string, Kind>> = {
  '/v1/pods': { kind: 'Pod', namespaced: true, status: true, custom: false },
  '/v1/nodes': { kind: 'Node', namespaced: false, status: true, custom: false },
  '/v1/events': { kind: 'Event', namespaced: true, status: false, custom: false },
  'coordination.k8s.io/v1/leases': { kind: 'Lease', namespaced: true, status: false, custom: false },
  'k8s.cni.cncf.io/v1/network-attachment-definitions': {
    kind: 'NetworkAttachmentDefinition',
    namespaced: true,
    status: false,
    custom: true,
  },
  'whereabouts.cni.cncf.io/v1alpha1/ippools': { kind: 'IPPool', namespaced: true, status: true, custom: true },
  'whereabouts.cni.cncf.io/v1alpha1/overlappingrangeipreservations': {
    kind: 'OverlappingRangeIPReservation',
    namespaced: true,
    status: false,
    custom: true,
  },
  'whereabouts.cni.cncf.io/v1alpha1/nodeslicepools': {
    kind: 'NodeSlicePool',
    namespaced: true,
    status: false,
    custom: true,
  },
  // Claims beyond pods (DESIGN §12): Cluster API's kinds and hereabouts' own.
  'ipam.cluster.x-k8s.io/v1beta2/ipaddressclaims': {
    kind: 'IPAddressClaim',
    namespaced: true,
    status: true,
    custom: true,
  },
  'ipam.cluster.x-k8s.io/v1beta2/ipaddresses': { kind: 'IPAddress', namespaced: true, status: false, custom: true },
  'cluster.x-k8s.io/v1beta2/clusters': { kind: 'Cluster', namespaced: true, status: true, custom: true },
  'hereabouts.cni.cncf.io/v1alpha1/addresspools': { kind: 'AddressPool', namespaced: true, status: true, custom: true },
  'hereabouts.cni.cncf.io/v1alpha1/globaladdresspools': {
    kind: 'GlobalAddressPool',
    namespaced: false,
    status: true,
    custom: true,
  },
  'hereabouts.cni.cncf.io/v1alpha1/prefixclaims': { kind: 'PrefixClaim', namespaced: true, status: true, custom: true },
  // Sticky addresses (docs/sticky.md): the owners a binding holds by, StatefulSets and KubeVirt's VMs.
  'apps/v1/statefulsets': { kind: 'StatefulSet', namespaced: true, status: true, custom: false },
  'kubevirt.io/v1/virtualmachines': { kind: 'VirtualMachine', namespaced: true, status: true, custom: true },
  'kubevirt.io/v1/virtualmachineinstances': {
    kind: 'VirtualMachineInstance',
    namespaced: true,
    status: true,
    custom: true,
  },
};

interface Route {
  readonly key: string;
  readonly kind: Kind;
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** undefined: every namespace (a cluster-wide LIST of a namespaced kind), or a cluster-scoped kind. */
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
  readonly query: URLSearchParams;
}

const PATH = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

export function parseRoute(path: string): Route | undefined {
  const [pathname = '', search = ''] = path.split('?', 2);
  const m = PATH.exec(pathname);
  if (m === null) return undefined;
  const [, coreVersion, group = '', groupVersion, namespace, plural = '', name, subresource] = m;
  const version = coreVersion ?? groupVersion ?? '';
  const key = `${group}/${version}/${plural}`;
  const kind = KINDS[key];
  if (kind === undefined) return undefined;
  const decode = (s: string | undefined) => (s === undefined ? undefined : decodeURIComponent(s));
  return {
    key,
    kind,
    group,
    version,
    plural,
    ...(namespace === undefined ? {} : { namespace: decode(namespace) }),
    ...(name === undefined ? {} : { name: decode(name) }),
    ...(subresource === undefined ? {} : { subresource }),
    query: new URLSearchParams(search),
  };
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- RFC 7386: null removes the member the patch names
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const PATCH_FAILED = Symbol('patch-failed');

/**
 * RFC 6902 JSON patch on objects (test, add, remove, replace) as kube-apiserver applies it: a `test` for null
 * passes on a missing member of an existing object, and fails when the parent is missing too. PATCH_FAILED when
 * an operation does not apply.
 */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) return PATCH_FAILED;
  const doc = clone(target);
  for (const operation of operations) {
    if (!isObj(operation) || typeof operation['path'] !== 'string') return PATCH_FAILED;
    const tokens = operation['path']
      .split('/')
      .slice(1)
      .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    const key = tokens.pop();
    let parent: unknown = doc;
    for (const t of tokens) parent = isObj(parent) ? parent[t] : undefined;
    if (key === undefined || !isObj(parent)) return PATCH_FAILED;
    const value = operation['value'];
    switch (operation['op']) {
      case 'test':
        if (parent[key] === undefined ? value !== null : !isEquivalent(parent[key], value)) return PATCH_FAILED;
        break;
      case 'add':
        parent[key] = clone(value);
        break;
      case 'replace':
      case 'remove':
        if (!(key in parent)) return PATCH_FAILED;
        // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- RFC 6902 remove: the member the path names
        if (operation['op'] === 'remove') delete parent[key];
        else parent[key] = clone(value);
        break;
      default:
        return PATCH_FAILED;
    }
  }
  return doc;
}

const resourceLabel = (r: Route): string => (r.group === '' ? r.plural : `${r.plural}.${r.group}`);

function status(code: number, reason: string, message: string, r?: Route, name?: string): ApiResponse {
  const details =
    r === undefined
      ? undefined
      : { ...(name === undefined ? {} : { name }), ...(r.group === '' ? {} : { group: r.group }), kind: r.plural };
  const why = reason === '' ? {} : { reason };
  return {
    status: code,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      ...why,
      ...(details === undefined ? {} : { details }),
      code,
    },
  };
}

/** What a DELETE of anything but a pod answers: a Success Status, not the object. */
function deleted(r: Route, name: string, uid: unknown): ApiResponse {
  const details = { name, ...(r.group === '' ? {} : { group: r.group }), kind: r.plural, uid };
  return { status: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details } };
}

/** Kinds that carry metadata.generation (custom resources and pods; nodes, leases and events do not). */
const hasGeneration = (kind: Kind): boolean => kind.custom || kind.kind === 'Pod';

const notFound = (r: Route, name: string) =>
  status(404, 'NotFound', `${resourceLabel(r)} "${name}" not found`, r, name);
const conflict = (
  r: Route,
  name: string,
  why = 'the object has been modified; please apply your changes to the latest version and try again',
) => status(409, 'Conflict', `Operation cannot be fulfilled on ${resourceLabel(r)} "${name}": ${why}`, r, name);

/** The server's state, shared by every client (simulated node or controller) of one simulated cluster. */
export class MemoryApiServer {
  #rv = 1;
  readonly #objects = new Map<string, Obj>();
  readonly #snapshots = new Map<string, Obj[]>();
  /** Requests answered, per method. */
  readonly counts: Record<string, number> = {};

  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** Every object of a kind ("group/version/plural", e.g. "/v1/pods"), optionally of one namespace; copies. */
  objects(key: string, namespace?: string): Obj[] {
    const prefix = `${key}|${namespace ?? ''}`;
    const out: Obj[] = [];
    for (const [k, o] of this.#objects)
      if (namespace === undefined ? k.startsWith(`${key}|`) : k.startsWith(`${prefix}|`)) out.push(clone(o));
    return out;
  }

  handle(req: ApiRequest): ApiResponse {
    this.counts[req.method] = (this.counts[req.method] ?? 0) + 1;
    const r = parseRoute(req.path);
    if (r === undefined)
      return status(404, 'NotFound', `the server could not find the requested resource (${req.method} ${req.path})`);
    if (r.subresource !== undefined && (r.subresource !== 'status' || !r.kind.status))
      return status(404, 'NotFound', 'the server could not find the requested resource');
    if (r.query.get('watch') === '1' || r.query.get('watch') === 'true')
      return status(405, 'MethodNotAllowed', 'the memory API serves no watches');
    if (r.name === undefined) {
      if (req.method === 'GET') return this.#list(r);
      if (req.method === 'POST') return this.#create(r, req.body);
      if (req.method === 'DELETE') return this.#deleteCollection(r);
      return status(405, 'MethodNotAllowed', `${req.method} is not supported on a collection`);
    }
    if (r.kind.namespaced && r.namespace === undefined)
      return status(404, 'NotFound', 'the server could not find the requested resource');
    switch (req.method) {
      case 'GET': {
        const o = this.#objects.get(this.#key(r, r.name));
        return o === undefined ? notFound(r, r.name) : { status: 200, body: clone(o) };
      }
      case 'PUT':
        return this.#update(r, r.name, () => req.body);
      case 'PATCH':
        if (req.contentType === 'application/json-patch+json') {
          return this.#update(r, r.name, (current) => jsonPatch(current, req.body));
        }
        if (req.contentType !== 'application/merge-patch+json')
          return status(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (got ${req.contentType ?? 'none'})`,
          );
        return this.#update(r, r.name, (current) => mergePatch(current, req.body));
      case 'DELETE':
        return this.#delete(r, r.name, req.body);
      default:
        return status(405, 'MethodNotAllowed', `${req.method} is not supported`);
    }
  }

  #key(r: Route, name: string): string {
    return `${r.key}|${r.kind.namespaced ? (r.namespace ?? '') : ''}|${name}`;
  }

  #list(r: Route): ApiResponse {
    const token = r.query.get('continue');
    let items: Obj[];
    let rv: string;
    if (token !== null && token !== '') {
      const snap = this.#snapshots.get(token);
      if (snap === undefined)
        return status(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result.',
        );
      this.#snapshots.delete(token);
      items = snap;
      rv = String((snap as unknown as { rv?: string }).rv ?? this.#rv);
    } else {
      const prefix = `${r.key}|${r.kind.namespaced && r.namespace !== undefined ? `${r.namespace}|` : ''}`;
      items = [...this.#objects]
        .filter(([k]) => k.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, o]) => clone(o));
      rv = String(this.#rv);
    }
    const limit = Number(r.query.get('limit') ?? '0');
    const metadata: Obj = { resourceVersion: rv };
    if (limit > 0 && items.length > limit) {
      const rest = Object.assign(items.slice(limit), { rv });
      const next = randomUUID();
      this.#snapshots.set(next, rest);
      metadata['continue'] = next;
      metadata['remainingItemCount'] = rest.length;
      items = items.slice(0, limit);
    }
    const apiVersion = r.group === '' ? r.version : `${r.group}/${r.version}`;
    return { status: 200, body: { apiVersion, kind: `${r.kind.kind}List`, metadata, items } };
  }

  #create(r: Route, body: unknown): ApiResponse {
    if (!isObj(body) || !isObj(body['metadata']))
      return status(400, 'BadRequest', 'the body must be an object with metadata');
    const meta = { ...body['metadata'] };
    if (meta['name'] === undefined && typeof meta['generateName'] === 'string')
      meta['name'] = `${meta['generateName']}${randomUUID().slice(0, 5)}`;
    const name = meta['name'];
    if (typeof name !== 'string' || name === '')
      return status(
        422,
        'Invalid',
        `${r.kind.kind} "" is invalid: metadata.name: Required value: name or generateName is required`,
        r,
        '',
      );
    if (r.kind.namespaced) {
      if (r.namespace === undefined) return status(404, 'NotFound', 'the server could not find the requested resource');
      if (meta['namespace'] !== undefined && meta['namespace'] !== r.namespace) {
        return status(
          400,
          'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
    }
    if (meta['resourceVersion'] !== undefined && meta['resourceVersion'] !== '') {
      return status(500, '', 'resourceVersion should not be set on objects to be created');
    }
    const key = this.#key(r, name);
    if (this.#objects.has(key))
      return status(409, 'AlreadyExists', `${resourceLabel(r)} "${name}" already exists`, r, name);
    delete meta['deletionTimestamp'];
    const object: Obj = {
      ...clone(body),
      apiVersion: r.group === '' ? r.version : `${r.group}/${r.version}`,
      kind: r.kind.kind,
    };
    object['metadata'] = {
      ...meta,
      ...(r.kind.namespaced ? { namespace: r.namespace } : {}),
      uid: randomUUID(),
      resourceVersion: String(++this.#rv),
      creationTimestamp: wholeSeconds(new Date()),
      ...(hasGeneration(r.kind) ? { generation: 1 } : {}),
    };
    if (r.kind.kind === 'Pod') object['status'] = { phase: 'Pending' };
    else if (r.kind.status) delete object['status'];
    this.#objects.set(key, object);
    return { status: 201, body: clone(object) };
  }

  #update(r: Route, name: string, next: (current: Obj) => unknown): ApiResponse {
    const key = this.#key(r, name);
    const current = this.#objects.get(key);
    if (current === undefined) return notFound(r, name);
    const proposed = next(clone(current));
    if (proposed === PATCH_FAILED)
      return status(422, 'Invalid', 'the server rejected our request due to an error in our request');
    if (!isObj(proposed) || !isObj(proposed['metadata']))
      return status(400, 'BadRequest', 'the body must be an object with metadata');
    const pmeta = proposed['metadata'];
    const cmeta = current['metadata'] as Obj;
    if (pmeta['name'] !== undefined && pmeta['name'] !== name) {
      return status(
        400,
        'BadRequest',
        `the name of the object (${pmeta['name'] as string}) does not match the name on the URL (${name})`,
      );
    }
    const rv = pmeta['resourceVersion'];
    if (rv === undefined || rv === '') {
      if (r.kind.custom)
        return status(
          422,
          'Invalid',
          `${r.kind.kind}.${r.group} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
          r,
          name,
        );
    } else if (rv !== cmeta['resourceVersion']) {
      return conflict(r, name);
    }
    if (pmeta['uid'] !== undefined && pmeta['uid'] !== '' && pmeta['uid'] !== cmeta['uid']) {
      return conflict(
        r,
        name,
        `Precondition failed: UID in precondition: ${pmeta['uid'] as string}, UID in object meta: ${String(cmeta['uid'])}`,
      );
    }
    let object: Obj;
    if (r.subresource === 'status') {
      object = { ...current, status: proposed['status'] ?? {} };
    } else {
      object = { ...proposed, apiVersion: current['apiVersion'], kind: current['kind'] };
      if (r.kind.status) {
        if (current['status'] === undefined) delete object['status'];
        else object['status'] = current['status'];
      }
      const keep = [
        'uid',
        'creationTimestamp',
        'namespace',
        'name',
        'deletionTimestamp',
        'deletionGracePeriodSeconds',
        'generation',
      ];
      object['metadata'] = {
        ...pmeta,
        ...Object.fromEntries(keep.filter((k) => cmeta[k] !== undefined).map((k) => [k, cmeta[k]])),
      };
    }
    if (isEquivalent(current, object)) return { status: 200, body: clone(current) }; // a no-op write keeps its version
    const meta = object['metadata'] as Obj;
    const specChanged =
      r.subresource !== 'status' &&
      !isEquivalent(withoutMetaStatus(current, r.kind.status), withoutMetaStatus(object, r.kind.status));
    if (hasGeneration(r.kind)) meta['generation'] = (Number(cmeta['generation']) || 1) + (specChanged ? 1 : 0);
    meta['resourceVersion'] = String(++this.#rv);
    // A terminating object whose last finalizer went is deleted.
    if (meta['deletionTimestamp'] !== undefined && !hasFinalizers(meta) && r.kind.kind !== 'Pod') {
      this.#objects.delete(key);
      return { status: 200, body: clone(object) };
    }
    if (r.subresource === 'status' && object['status'] === undefined) delete object['status'];
    this.#objects.set(key, object);
    return { status: 200, body: clone(object) };
  }

  #delete(r: Route, name: string, body: unknown): ApiResponse {
    const key = this.#key(r, name);
    const current = this.#objects.get(key);
    if (current === undefined) return notFound(r, name);
    const meta = current['metadata'] as Obj;
    const options = isObj(body) ? body : {};
    const pre = isObj(options['preconditions']) ? options['preconditions'] : {};
    if (typeof pre['uid'] === 'string' && pre['uid'] !== meta['uid']) {
      return conflict(
        r,
        name,
        `Precondition failed: UID in precondition: ${pre['uid']}, UID in object meta: ${String(meta['uid'])}`,
      );
    }
    if (typeof pre['resourceVersion'] === 'string' && pre['resourceVersion'] !== meta['resourceVersion']) {
      return conflict(
        r,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre['resourceVersion']}, ResourceVersion in object meta: ${String(meta['resourceVersion'])}`,
      );
    }
    const graceText =
      r.query.get('gracePeriodSeconds') ??
      (typeof options['gracePeriodSeconds'] === 'number' ? String(options['gracePeriodSeconds']) : undefined);
    const spec = isObj(current['spec']) ? current['spec'] : {};
    // A pod bound to a node is only marked (its kubelet finishes the deletion); grace 0 removes it at once.
    const graceful =
      r.kind.kind === 'Pod' && typeof spec['nodeName'] === 'string' && spec['nodeName'] !== '' && graceText !== '0';
    if (graceful || hasFinalizers(meta)) {
      if (meta['deletionTimestamp'] !== undefined) return { status: 200, body: clone(current) };
      const grace = graceful ? Number(graceText ?? spec['terminationGracePeriodSeconds'] ?? 30) : 0;
      const marked = {
        ...current,
        metadata: {
          ...meta,
          deletionTimestamp: wholeSeconds(new Date(Date.now() + grace * 1000)),
          deletionGracePeriodSeconds: grace,
          resourceVersion: String(++this.#rv),
        },
      };
      this.#objects.set(key, marked);
      return { status: 200, body: clone(marked) };
    }
    this.#objects.delete(key);
    if (r.kind.kind !== 'Pod') {
      ++this.#rv;
      return deleted(r, name, meta['uid']);
    }
    // A pod's deletion is recorded as a last update (deletionTimestamp, grace 0), which is what DELETE answers.
    const last = {
      ...current,
      metadata: {
        ...meta,
        deletionTimestamp: meta['deletionTimestamp'] ?? wholeSeconds(new Date()),
        deletionGracePeriodSeconds: 0,
        resourceVersion: String(++this.#rv),
      },
    };
    return { status: 200, body: clone(last) };
  }

  #deleteCollection(r: Route): ApiResponse {
    const listed = this.#list(r).body as { items: Obj[] };
    for (const item of listed.items)
      this.#delete(r, String((item['metadata'] as Obj)['name']), {
        gracePeriodSeconds: Number(r.query.get('gracePeriodSeconds') ?? 30),
      });
    return { status: 200, body: { ...listed, items: listed.items } };
  }
}

function hasFinalizers(meta: Obj): boolean {
  return Array.isArray(meta['finalizers']) && meta['finalizers'].length > 0;
}

function withoutMetaStatus(o: Obj, hasStatus: boolean): Obj {
  const rest = { ...o };
  delete rest['metadata'];
  delete rest['apiVersion'];
  delete rest['kind'];
  if (hasStatus) delete rest['status'];
  return rest;
}

function isEquivalent(a: unknown, b: unknown): boolean {
  return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}

function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (!isObj(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sorted(v[k])]),
  );
}

function wholeSeconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * What a request does before, instead of or after reaching the server. 'pass' answers normally; 'conflict' and
 * 'unavailable' answer 409 / 503 without applying; 'gateway-timeout' applies and answers 504; 'timeout-before'
 * throws ApiUnreachableError (not sent); 'timeout-after' applies, then throws it (ambiguous).
 */
export type FaultKind = 'pass' | 'conflict' | 'unavailable' | 'gateway-timeout' | 'timeout-before' | 'timeout-after';

/** An ApiClient whose transport is a MemoryApiServer (the client's endpoint is a placeholder, never dialled). */
export class MemoryApiClient extends ApiClient {
  readonly server: MemoryApiServer;

  constructor(server: MemoryApiServer, options: { namespace: string }) {
    super(
      { server: 'https://memory.invalid', namespace: options.namespace, requestOptions: {}, agent: new Agent() },
      { timeoutMs: 10_000 },
    );
    this.server = server;
  }

  override async send(req: ApiRequest): Promise<ApiResponse> {
    this.requests++;
    // Real requests answer on a later turn of the event loop: interleavings between clients stay possible.
    await Promise.resolve();
    return this.server.handle(structuredClone(req));
  }
}
