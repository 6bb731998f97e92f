// A small seeded PRNG (mulberry32): every random choice of the model test comes from one, so a seed replays a run.
export class Prng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(items.length)] as T;
  }

  /** A fresh 32-bit seed for a sub-generator. */
  seed(): number {
    return Math.floor(this.next() * 4294967296) >>> 0;
  }
}

/** Replaces Math.random with a seeded generator while `fn` runs (backoff jitter becomes reproducible). */
export async function withSeededRandom<T>(seed: number, fn: () => Promise<T>): Promise<T> {
  const original = Math.random;
  const prng = new Prng(seed);
  Math.random = () => prng.next();
  try {
    return await fn();
  } finally {
    Math.random = original;
  }
}
