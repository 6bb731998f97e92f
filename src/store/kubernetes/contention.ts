// Which shared pools a writer recently raced other writers on. A long-lived process (the node agent) serves
// many ADDs: once a pool showed contention, its next claims start spread over the range at once instead of first
// re-discovering the race one reservation conflict at a time. A short-lived plugin process starts from what the
// node cache kept of its predecessors' memory (ContentionMarks), so an uncontended pool keeps Whereabouts'
// lowest-first order. The memory belongs to whoever hosts the commits (WriteMemory), never to the module.
import { monotonicMs } from '../../clock.ts';

/** How long a pool counts as contended after its last collision. */
export const CONTENTION_MEMORY_MS = 60_000;
/** How long a Lease this host may not read is not asked for again (an operator's grant is seen this much later). */
export const FORBIDDEN_LEASE_MEMORY_MS = 30_000;
/** Bounds the memory of a process that writes very many pools. */
const MAX_POOLS = 1_024;

export class ContentionMemory {
  readonly #until = new Map<string, number>();
  readonly #memoryMs: number;

  constructor(memoryMs = CONTENTION_MEMORY_MS) {
    this.#memoryMs = memoryMs;
  }

  /** A collision on this pool at `nowMs` (monotonic), remembered `forMs` (at most the memory's span); never shortens. */
  mark(key: string, nowMs: number, forMs = this.#memoryMs): void {
    const until = Math.max(this.#until.get(key) ?? 0, nowMs + Math.min(forMs, this.#memoryMs));
    this.#until.delete(key); // re-inserted last: the Map's order is the eviction order
    this.#until.set(key, until);
    if (this.#until.size > MAX_POOLS) this.#until.delete(this.#until.keys().next().value as string);
  }

  /** How much longer the pool counts as contended (0: it does not). */
  remainingMs(key: string, nowMs: number): number {
    return this.contended(key, nowMs) ? (this.#until.get(key) ?? nowMs) - nowMs : 0;
  }

  contended(key: string, nowMs: number): boolean {
    const until = this.#until.get(key);
    if (until === undefined) return false;
    if (nowMs < until) return true;
    this.#until.delete(key);
    return false;
  }
}

/**
 * The contention a commit saw on a pool, in wall-clock time (epoch ms) so that the node cache can hand it to the
 * node's next process: `collidedUntil` plans spread, `busyUntil` reads the pool again before each write.
 */
export interface ContentionMarks {
  readonly collidedUntil?: number;
  readonly busyUntil?: number;
}

/**
 * What a host remembers of other writers across the commits it runs (commit.ts): the node agent keeps one for its
 * life and hands it to every call it serves; a plugin process's store, and each PoolWriter, start from a fresh one.
 */
export class WriteMemory {
  /** The shared pools this host collided on recently (a plugin process starts from the node cache's marks). */
  readonly contention = new ContentionMemory();
  /** The shared pools on which this host recently lost a write or an address to another writer. */
  readonly busy = new ContentionMemory();
  /** Whereabouts' Leases this host was refused a read of (whereabouts-lease.ts), by namespace/name. */
  readonly forbiddenLeases = new ContentionMemory(FORBIDDEN_LEASE_MEMORY_MS);
  /**
   * NodeSlicePools this host read lately that gave it a slice to allocate from (node-slices.ts), by server, namespace
   * and name: a long-lived host (the node agent) answers the next ADDs from that reading for a few seconds.
   */
  readonly slicings = new Map<string, { readonly object: unknown; readonly atMs: number }>();

  /**
   * Takes in what the node cache kept of earlier processes' contention (a time beyond the memory's span counts as a
   * fresh mark: a wall clock stepped back must not make a pool look contended for long).
   */
  remember(key: string, marks: ContentionMarks | undefined): void {
    if (marks === undefined) return;
    const now = Date.now();
    const monotonic = monotonicMs();
    if (marks.collidedUntil !== undefined && marks.collidedUntil > now)
      this.contention.mark(key, monotonic, marks.collidedUntil - now);
    if (marks.busyUntil !== undefined && marks.busyUntil > now) this.busy.mark(key, monotonic, marks.busyUntil - now);
  }

  /** This host's contention memory of a pool, in wall-clock time for the node cache. */
  marksOf(key: string): ContentionMarks {
    const now = Date.now();
    const monotonic = monotonicMs();
    const collided = this.contention.remainingMs(key, monotonic);
    const busyMs = this.busy.remainingMs(key, monotonic);
    return {
      ...(collided > 0 ? { collidedUntil: now + collided } : {}),
      ...(busyMs > 0 ? { busyUntil: now + busyMs } : {}),
    };
  }
}
