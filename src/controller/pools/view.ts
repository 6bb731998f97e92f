// What the controller keeps of an IPPool: its allocations (decoded once per change), its counts and the status it
// last carried. Node-slice pools are IPPools like any other (named [<network_name>-]<node>-<slice>).
import { capacity } from '../../allocator/capacity.ts';
import { HereaboutsError } from '../../errors.ts';
import type { RangeConfig } from '../../config/types.ts';
import { masked, networkOf, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { usableSpan } from '../../ip/range.ts';
import { decodeAllocations, RETIRED_ANNOTATION } from '../../store/kubernetes/pool-object.ts';
import type { AllocationRecord } from '../../store/store.ts';
import { isRecord } from '../../record.ts';

export interface PoolStatusSeen {
  readonly capacity?: unknown;
  readonly used?: unknown;
  readonly free?: unknown;
  /** status.conditions as written (a few small objects). */
  readonly conditions: readonly unknown[];
}

export interface PoolView {
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly generation: number;
  /** Undefined when spec.range is not a CIDR (the pool is reported, never written). */
  readonly range?: Cidr;
  readonly allocations: ReadonlyMap<bigint, AllocationRecord>;
  /** When hereabouts made an allocation (its createdAt), for the entries that say. */
  readonly allocatedAt: ReadonlyMap<bigint, number>;
  /** Addresses the range can hand out (its usable span), and that minus the allocations (as in the status). */
  readonly capacity: bigint;
  readonly free: bigint;
  readonly status: PoolStatusSeen;
  /** A node-slice pool the controller retired (RETIRED_ANNOTATION): its slice was released once it was empty. */
  readonly retired: boolean;
  /** What could not be read (odd allocation keys, a bad range); the first few. */
  readonly problems: readonly string[];
}

/** IPPools per LIST page: a pool of a thousand allocations is ~100 KB of JSON, its decoded object several times that. */
export const POOL_PAGE = 20;

const NONE: ReadonlyMap<bigint, never> = new Map<bigint, never>();

export function poolView(object: unknown): PoolView | undefined {
  if (!isRecord(object) || !isRecord(object['metadata'])) return undefined;
  const meta = object['metadata'];
  const spec = isRecord(object['spec']) ? object['spec'] : {};
  const status = isRecord(object['status']) ? object['status'] : {};
  const name = String(meta['name']);
  const base = {
    name,
    uid: typeof meta['uid'] === 'string' ? meta['uid'] : '',
    resourceVersion: typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : '',
    generation: typeof meta['generation'] === 'number' ? meta['generation'] : 0,
    status: statusSeen(status),
    retired: isRecord(meta['annotations']) && typeof meta['annotations'][RETIRED_ANNOTATION] === 'string',
  };
  const range = cidrOrUndefined(spec['range']);
  if (range === undefined) {
    return {
      ...base,
      allocations: NONE,
      allocatedAt: NONE,
      capacity: 0n,
      free: 0n,
      problems: [`IPPool ${name}: spec.range ${JSON.stringify(spec['range'])} is not a CIDR`],
    };
  }
  const problems: string[] = [];
  const warn = (msg: string): void => {
    if (problems.length < 3) problems.push(msg);
  };
  let allocations: ReadonlyMap<bigint, AllocationRecord>;
  try {
    allocations = decodeAllocations(spec['allocations'] ?? {}, range, { where: `IPPool ${name}`, warn, strict: false });
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    return { ...base, range, allocations: NONE, allocatedAt: NONE, capacity: 0n, free: 0n, problems: [err.message] };
  }
  const total = poolCapacity(range);
  const free = total - BigInt(allocations.size);
  return {
    ...base,
    range,
    allocations,
    allocatedAt: createdTimes(spec['allocations'], range),
    capacity: total,
    free: free > 0n ? free : 0n,
    problems,
  };
}

/** When each allocation was made, for the entries that carry a createdAt (hereabouts'). */
export function createdTimes(raw: unknown, range: Cidr): ReadonlyMap<bigint, number> {
  const out = new Map<bigint, number>();
  if (!isRecord(raw)) return out;
  const base = networkOf(range);
  for (const [key, entry] of Object.entries(raw)) {
    const at = isRecord(entry) && typeof entry['createdAt'] === 'string' ? Date.parse(entry['createdAt']) : NaN;
    if (!Number.isNaN(at) && /^\d+$/.test(key)) out.set(base + BigInt(key), at);
  }
  return out;
}

/** The addresses a pool's range can hand out: its usable span (no range_start/exclude: the pool does not know them). */
export function poolCapacity(range: Cidr): bigint {
  const span = usableSpan(range);
  const config: RangeConfig = { cidr: range, start: span.first, end: span.last, exclude: [] };
  return capacity(config);
}

function statusSeen(status: Record<string, unknown>): PoolStatusSeen {
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as unknown[]) : [];
  return { capacity: status['capacity'], used: status['used'], free: status['free'], conditions };
}

export function cidrOrUndefined(text: unknown): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return masked(parseCidr(text));
  } catch (err) {
    if (err instanceof TypeError || err instanceof RangeError) return undefined;
    throw err;
  }
}
