// Runs tasks one at a time per key within this process (one pool's updates in order), so a store's own callers
// never contend for the pool's file lock with each other.
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Settles once every queued task has. */
  async drain(): Promise<void> {
    await Promise.allSettled(this.#tails.values());
  }
}
