// coordination.k8s.io/v1 Leases as client-go's leader election reads and writes them: the object, its conditional
// writes, and client-go's rule for when another holder's lease has expired. Knows nothing of who uses a Lease for
// what (the controller's leader election, the store's part in Whereabouts' lease).
import { monotonicMs } from '../clock.ts';
import { isRecord } from '../record.ts';
import { statusText, type ApiClient, type ApiResponse } from './api.ts';
import { ApiStatusError } from './errors.ts';

export interface LeaseSpec {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTime?: string;
  readonly renewTime?: string;
  readonly leaseTransitions?: number;
}

/** A Lease as read: its spec and annotations parsed, the rest kept as it came (a write must not drop fields). */
export interface Lease {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  readonly spec: LeaseSpec;
  readonly raw: Readonly<Record<string, unknown>>;
}

export function leasePath(namespace: string, name?: string): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

/** Parses a Lease from the API; undefined when the body is not one. */
export function parseLease(body: unknown): Lease | undefined {
  if (!isRecord(body) || !isRecord(body['metadata'])) return undefined;
  const metadata = body['metadata'];
  const { name, namespace, resourceVersion } = metadata;
  if (typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  const annotations: Record<string, string> = {};
  if (isRecord(metadata['annotations']))
    for (const [key, value] of Object.entries(metadata['annotations']))
      if (typeof value === 'string') annotations[key] = value;
  const raw = isRecord(body['spec']) ? body['spec'] : {};
  const text = (key: string) => (typeof raw[key] === 'string' ? { [key]: raw[key] } : {});
  const count = (key: string) =>
    typeof raw[key] === 'number' && Number.isSafeInteger(raw[key]) ? { [key]: raw[key] } : {};
  const spec: LeaseSpec = {
    ...text('holderIdentity'),
    ...count('leaseDurationSeconds'),
    ...text('acquireTime'),
    ...text('renewTime'),
    ...count('leaseTransitions'),
  };
  return {
    name,
    namespace,
    resourceVersion: typeof resourceVersion === 'string' ? resourceVersion : undefined,
    annotations,
    spec,
    raw: body,
  };
}

/** The Lease with `spec` fields and annotations replaced; its resourceVersion makes a PUT of it conditional. */
export function leaseBody(
  lease: Lease,
  spec: LeaseSpec,
  annotations: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  const metadata = isRecord(lease.raw['metadata']) ? lease.raw['metadata'] : {};
  const oldSpec = isRecord(lease.raw['spec']) ? lease.raw['spec'] : {};
  return {
    ...lease.raw,
    metadata: {
      ...metadata,
      ...(Object.keys(annotations).length === 0 ? {} : { annotations: { ...lease.annotations, ...annotations } }),
    },
    spec: { ...oldSpec, ...spec },
  };
}

export interface LeaseRequestOptions {
  readonly timeoutMs?: number;
  /** Served from the API server's watch cache ("0": any version) instead of a quorum read. */
  readonly notOlderThan?: string;
}

/** The Lease, or undefined when there is none. */
export async function getLease(
  api: ApiClient,
  namespace: string,
  name: string,
  options: LeaseRequestOptions = {},
): Promise<Lease | undefined> {
  const query =
    options.notOlderThan === undefined ? '' : `?resourceVersion=${encodeURIComponent(options.notOlderThan)}`;
  const res = await api.send({ method: 'GET', path: `${leasePath(namespace, name)}${query}` }, timeout(options));
  if (res.status === 404) return undefined;
  return parsed(res, `get lease ${namespace}/${name}`);
}

/** PUT conditional on the resourceVersion in `body`: the Lease written, or 'conflict' when it changed or is gone. */
export async function updateLease(
  api: ApiClient,
  lease: Lease,
  body: Record<string, unknown>,
  options: LeaseRequestOptions = {},
): Promise<Lease | 'conflict'> {
  const res = await api.send({ method: 'PUT', path: leasePath(lease.namespace, lease.name), body }, timeout(options));
  if (res.status === 409 || res.status === 404) return 'conflict';
  return parsed(res, `update lease ${lease.namespace}/${lease.name}`);
}

function parsed(res: ApiResponse, what: string): Lease {
  if (res.status < 200 || res.status >= 300) throw new ApiStatusError(what, res);
  const lease = parseLease(res.body);
  if (lease === undefined) throw new TypeError(`${what}: the API returned no Lease (${statusText(res)})`);
  return lease;
}

function timeout(options: LeaseRequestOptions): { timeoutMs?: number } {
  return options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
}

/** Lease times are MicroTime: RFC 3339 with six fractional digits. */
export function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * client-go's rule for another holder's lease: it has expired once its record has not changed for its
 * leaseDurationSeconds, measured on the observer's own monotonic clock from when the observer first saw that record
 * (no trust in the writer's clock).
 */
export class LeaseObservation {
  #record = '';
  #sinceMs = 0;

  /** Takes in the record read by a request sent at `sentAtMs` (monotonic). */
  observe(spec: LeaseSpec, sentAtMs: number): void {
    const record = JSON.stringify([
      spec.holderIdentity ?? '',
      spec.leaseDurationSeconds ?? 0,
      spec.acquireTime ?? '',
      spec.renewTime ?? '',
      spec.leaseTransitions ?? 0,
    ]);
    if (record === this.#record) return;
    this.#record = record;
    this.#sinceMs = sentAtMs;
  }

  /** True while the observed record names a holder and has changed within `durationMs` (default: its own). */
  heldByOther(spec: LeaseSpec, identity: string, durationMs?: number): boolean {
    const holder = spec.holderIdentity ?? '';
    if (holder === '' || holder === identity) return false;
    const ms = durationMs ?? (spec.leaseDurationSeconds ?? 0) * 1000;
    return this.#sinceMs + ms > monotonicMs();
  }
}
