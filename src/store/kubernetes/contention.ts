// Which shared pools this process recently raced other writers on. A long-lived process (the node agent) serves
// many ADDs: once a pool showed contention, its next claims start spread over the range at once instead of first
// re-discovering the race one reservation conflict at a time. A short-lived plugin process starts empty, so an
// uncontended pool keeps Whereabouts' lowest-first order.

/** How long a pool counts as contended after its last collision. */
export const CONTENTION_MEMORY_MS = 60_000;
/** Bounds the memory of a process that writes very many pools. */
const MAX_POOLS = 1_024;

export class ContentionMemory {
  readonly #until = new Map<string, number>();
  readonly #memoryMs: number;

  constructor(memoryMs = CONTENTION_MEMORY_MS) {
    this.#memoryMs = memoryMs;
  }

  /** A collision on this pool at `nowMs` (monotonic). */
  mark(key: string, nowMs: number): void {
    this.#until.delete(key); // re-inserted last: the Map's order is the eviction order
    this.#until.set(key, nowMs + this.#memoryMs);
    if (this.#until.size > MAX_POOLS) this.#until.delete(this.#until.keys().next().value as string);
  }

  contended(key: string, nowMs: number): boolean {
    const until = this.#until.get(key);
    if (until === undefined) return false;
    if (nowMs < until) return true;
    this.#until.delete(key);
    return false;
  }
}
