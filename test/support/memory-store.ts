// An in-memory Store: a real implementation of the seam (same change validation as the local store), for tests
// of the policy above it. Pools are keyed by network and name, as on disk.
import type { NetworkConfig, RangeConfig } from '../../src/config/types.ts';
import { parseIP } from '../../src/ip/address.ts';
import { lastOf, masked, networkOf, parseCidr } from '../../src/ip/cidr.ts';
import { usableSpan } from '../../src/ip/range.ts';
import { applyChange } from '../../src/store/local/apply-change.ts';
import type { AllocationRecord, Allocations, Plan, PoolRef, Store } from '../../src/store/store.ts';

export class MemoryStore implements Store {
  readonly node: string | undefined;
  readonly #pools = new Map<string, Map<bigint, AllocationRecord>>();
  /** Number of update() calls that wrote a change, per pool name (lets tests assert "nothing written"). */
  readonly writes = new Map<string, number>();

  constructor(options: { node?: string } = {}) {
    this.node = options.node;
  }

  async update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
    const current = this.#pool(pool);
    const planned = plan(current, new Set());
    if (planned.change !== null) {
      this.#pools.set(key(pool), applyChange(pool, current, planned.change));
      this.writes.set(pool.name, (this.writes.get(pool.name) ?? 0) + 1);
    }
    return planned.value;
  }

  read(pool: PoolRef): Promise<Allocations> {
    return Promise.resolve(new Map(this.#pool(pool)));
  }

  async status(): Promise<void> {}

  async close(): Promise<void> {}

  /** Seeds a pool directly (state left behind by earlier runs, other nodes, Whereabouts). */
  seed(pool: PoolRef, entries: Iterable<[bigint, AllocationRecord]>): void {
    this.#pools.set(key(pool), new Map(entries));
  }

  #pool(pool: PoolRef): Map<bigint, AllocationRecord> {
    return this.#pools.get(key(pool)) ?? new Map<bigint, AllocationRecord>();
  }
}

function key(pool: PoolRef): string {
  return `${pool.network}\u0000${pool.name}`;
}

// Hand-built configs for tests of the layers above src/config (what parseNetworkConfig would produce).

export interface TestRangeOptions {
  readonly start?: string;
  readonly end?: string;
  readonly exclude?: readonly string[];
  readonly gateway?: string;
}

/** A RangeConfig over the usable span of `cidr` (network+1 … last−1), optionally narrowed. */
export function testRange(cidr: string, options: TestRangeOptions = {}): RangeConfig {
  const parsed = masked(parseCidr(cidr));
  const span = usableSpan(parsed);
  const exclude = (options.exclude ?? []).map((text) => {
    const c = parseCidr(text.includes('/') ? text : `${text}/${parsed.family === 4 ? 32 : 128}`);
    return { first: networkOf(c), last: lastOf(c) };
  });
  return {
    cidr: parsed,
    start: options.start === undefined ? span.first : parseIP(options.start).value,
    end: options.end === undefined ? span.last : parseIP(options.end).value,
    exclude: exclude.sort((a, b) => (a.first < b.first ? -1 : 1)),
    ...(options.gateway === undefined ? {} : { gateway: parseIP(options.gateway) }),
  };
}

export interface TestNetworkOptions {
  readonly name?: string;
  readonly networkName?: string;
  readonly requestedIPs?: readonly string[];
  readonly addresses?: readonly string[];
  /** gc_grace_seconds; 0 (collect at once) unless a test is about the grace period. */
  readonly gcGraceSeconds?: number;
}

export function testNetwork(ranges: readonly RangeConfig[], options: TestNetworkOptions = {}): NetworkConfig {
  return {
    cniVersion: '1.1.0',
    name: options.name ?? 'testnet',
    ipam: {
      type: 'hereabouts',
      ranges,
      routes: [],
      addresses: (options.addresses ?? []).map((text) => ({ address: parseCidr(text) })),
      ...(options.networkName === undefined ? {} : { networkName: options.networkName }),
      enableOverlappingRanges: true,
      gcGraceSeconds: options.gcGraceSeconds ?? 0,
      datastore: { kind: 'local', dataDir: '/nonexistent' },
      logLevel: 'error',
    },
    requestedIPs: (options.requestedIPs ?? []).map(parseIP),
    warnings: [],
    raw: {},
  };
}
