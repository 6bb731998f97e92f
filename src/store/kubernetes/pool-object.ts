// IPPool objects on the wire: `spec.range` plus `spec.allocations{"<decimal offset>": {id, podref, ifname, ...}}`
// (DESIGN §4). Decoding is lenient with what Whereabouts or an operator may have written (an address stays taken
// whatever its record looks like); writes touch only the changed offsets (a JSON patch for a lone claim, a merge
// patch otherwise), so fields this store does not model (ipamclaimref, createdAt) survive.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { formatCidr, lastOf, masked, networkOf, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { decodeRecord, encodeRecord } from '../local/pool-file.ts';
import type { AllocationRecord, Allocations, PoolRef, SliceVersion } from '../store.ts';
import { API_VERSION } from './objects.ts';
import { type JsonPatchOperation } from './resources.ts';
import { isRecord } from '../../record.ts';

export interface PoolState {
  readonly allocations: Map<bigint, AllocationRecord>;
  /** Absent when the IPPool does not exist yet (the next write creates it). */
  readonly resourceVersion?: string;
  /** Read from the API in this update, rather than from the node cache. */
  readonly fresh: boolean;
  /** The controller retired this node-slice pool: its slice was released at this NodeSlicePool version. */
  readonly retired?: SliceVersion;
}

/** The annotation the controller puts on a drained node-slice pool before its slice goes back to the free list. */
export const RETIRED_ANNOTATION = 'hereabouts.cni.cncf.io/retired';

/**
 * "<NodeSlicePool uid>/<generation>": the value of RETIRED_ANNOTATION, the NodeSlicePool version the slice was
 * released at. For the operator (and plugins of earlier versions, which compared it); this version refuses every
 * claim in a retired pool until the NodeSlicePool, read after the mark, gives the slice back (pool-commit.ts).
 */
export function retiredValue(version: SliceVersion): string {
  return `${version.uid}/${version.generation}`;
}

function retiredOf(metadata: Record<string, unknown>): SliceVersion | undefined {
  const annotations = metadata['annotations'];
  const value = isRecord(annotations) ? annotations[RETIRED_ANNOTATION] : undefined;
  if (typeof value !== 'string') return undefined;
  const m = /^(.*)\/(\d+)$/.exec(value);
  // An unreadable mark still retires the pool: refusing an ADD is safe, guessing is not.
  return m?.[1] === undefined || m[2] === undefined
    ? { uid: value, generation: Number.MAX_SAFE_INTEGER }
    : { uid: m[1], generation: Number(m[2]) };
}

/** The record kept for an entry that is not {id, podref, ifname} strings: its address stays taken. */
const UNREADABLE: AllocationRecord = { containerId: '', podRef: '', ifname: '' };

export function rangeText(cidr: Cidr): string {
  return formatCidr(masked(cidr));
}

/** An IPPool from the API. Throws when it is not a pool of this range (a name clash that must not be written). */
export function decodePoolObject(object: unknown, pool: PoolRef, warn: (msg: string) => void): PoolState {
  const where = `IPPool ${pool.name}`;
  const metadata = isRecord(object) ? object['metadata'] : undefined;
  const spec = isRecord(object) ? object['spec'] : undefined;
  const resourceVersion = isRecord(metadata) ? metadata['resourceVersion'] : undefined;
  if (!isRecord(spec) || typeof resourceVersion !== 'string') {
    throw new HereaboutsError(
      ErrorKind.Internal,
      `${where}: the API returned an object without spec or resourceVersion`,
    );
  }
  checkRange(spec['range'], pool, where);
  const allocations = decodeAllocations(spec['allocations'] ?? {}, pool.range.cidr, { where, warn, strict: false });
  const retired = isRecord(metadata) ? retiredOf(metadata) : undefined;
  return { allocations, resourceVersion, fresh: true, ...(retired === undefined ? {} : { retired }) };
}

function checkRange(value: unknown, pool: PoolRef, where: string): void {
  const expected = rangeText(pool.range.cidr);
  let actual: string | undefined;
  try {
    actual = typeof value === 'string' ? rangeText(parseCidr(value)) : undefined;
  } catch (err) {
    if (!(err instanceof TypeError || err instanceof RangeError)) throw err;
  }
  if (actual !== expected) {
    throw new HereaboutsError(
      ErrorKind.Internal,
      `${where} has spec.range ${JSON.stringify(value)}, expected ${expected}`,
      {
        details: 'another object uses this pool name; rename the network (network_name) or remove the object',
      },
    );
  }
}

export interface DecodeOptions {
  readonly where: string;
  readonly warn: (msg: string) => void;
  /** Strict (the node cache): any oddity throws. Lenient (the API): odd entries are kept as taken and reported. */
  readonly strict: boolean;
}

export function decodeAllocations(raw: unknown, range: Cidr, options: DecodeOptions): Map<bigint, AllocationRecord> {
  const out = new Map<bigint, AllocationRecord>();
  const bad = (why: string): void => {
    if (options.strict) throw new TypeError(`${options.where}: ${why}`);
    options.warn(`${options.where}: ${why}`);
  };
  if (!isRecord(raw)) {
    // Nothing can be trusted about this pool: refuse to decide on it rather than hand out its addresses.
    throw new HereaboutsError(ErrorKind.Internal, `${options.where}: spec.allocations is not an object`);
  }
  const base = networkOf(range);
  const size = lastOf(range) - base;
  for (const [key, value] of Object.entries(raw)) {
    if (!/^(0|[1-9]\d*)$/.test(key) || BigInt(key) > size) {
      // Whereabouts skips these too: no address of this range can be meant.
      bad(`ignoring allocation key ${JSON.stringify(key)}, not an offset inside ${rangeText(range)}`);
      continue;
    }
    const record = decodeRecord(value);
    if (record === undefined) bad(`allocation ${key} is not {id, podref, ifname} strings; its address stays taken`);
    out.set(base + BigInt(key), record ?? UNREADABLE);
  }
  return out;
}

/** The offset-keyed allocations object of an IPPool spec (also the node cache's format). */
export function encodeAllocations(range: Cidr, allocations: Allocations): Record<string, Record<string, string>> {
  const base = networkOf(range);
  const entries = [...allocations].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const body: Record<string, Record<string, string>> = {};
  for (const [address, record] of entries) body[String(address - base)] = encodeRecord(record);
  return body;
}

/** A new IPPool holding `allocations` (the first write of a pool creates it with the claim in it). */
export function newPoolObject(
  pool: PoolRef,
  namespace: string,
  allocations: Allocations,
): { metadata: { name: string } } {
  return {
    apiVersion: API_VERSION,
    kind: 'IPPool',
    metadata: { name: pool.name, namespace },
    spec: {
      range: rangeText(pool.range.cidr),
      allocations: stampCreated(encodeAllocations(pool.range.cidr, allocations)),
    },
  } as { metadata: { name: string } };
}

function stampCreated(allocations: Record<string, Record<string, string>>): Record<string, Record<string, string>> {
  const createdAt = new Date().toISOString();
  for (const entry of Object.values(allocations)) entry['createdAt'] = createdAt;
  return allocations;
}

/**
 * What a pool write sends as metadata.managedFields: the API server then drops the object's field tracking instead
 * of updating it (an empty list would be ignored). Tracking an owner for every field of every entry doubled the
 * server's CPU per write of a pool (docs/benchmarks.md), and neither hereabouts nor Whereabouts applies IPPools
 * server-side. Their updates do not start tracking again; sent with every write, it also undoes a server-side apply.
 */
const CLEARED_MANAGED_FIELDS: readonly object[] = [{}];

/**
 * The merge patch from `current` to `next`, conditional on `resourceVersion`: removed offsets become null, new and
 * rewritten ones carry the modelled fields (null clears one that was dropped). Unchanged entries are not sent.
 */
export function allocationsPatch(
  range: Cidr,
  current: Allocations,
  next: Allocations,
  resourceVersion: string,
  options: { unretire?: boolean } = {},
): unknown {
  const base = networkOf(range);
  const changes: Record<string, Record<string, string | null> | null> = {};
  for (const address of current.keys()) {
    if (!next.has(address)) changes[String(address - base)] = null;
  }
  const createdAt = new Date().toISOString();
  for (const [address, record] of next) {
    const before = current.get(address);
    if (before === record) continue;
    const entry: Record<string, string | null> = { ...encodeRecord(record) };
    if (before === undefined) entry['createdAt'] = createdAt;
    else for (const field of ['podUid', 'node', 'binding']) entry[field] ??= null;
    changes[String(address - base)] = entry;
  }
  const metadata = {
    resourceVersion,
    managedFields: CLEARED_MANAGED_FIELDS,
    ...(options.unretire === true ? { annotations: { [RETIRED_ANNOTATION]: null } } : {}),
  };
  return { metadata, spec: { allocations: changes } };
}

/**
 * The claim of one offset as a JSON patch conditional on the resourceVersion the plan saw, tested first: a stale
 * claim is refused before the API server applies the rest (about half the server's work of refusing a stale merge
 * patch), and the patch sends only the new record. It needs `spec.allocations` to exist; when it does not, the add
 * does not apply (422, like a failed test) and the caller writes a merge patch instead.
 */
export function claimPatch(
  range: Cidr,
  resourceVersion: string,
  address: bigint,
  record: AllocationRecord,
): JsonPatchOperation[] {
  const entry = `/spec/allocations/${String(address - networkOf(range))}`;
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
    { op: 'add', path: entry, value: { ...encodeRecord(record), createdAt: new Date().toISOString() } },
    { op: 'add', path: '/metadata/managedFields', value: CLEARED_MANAGED_FIELDS },
  ];
}
