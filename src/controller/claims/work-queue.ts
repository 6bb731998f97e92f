// A keyed work queue as controller-runtime's: a key asked for while it waits is queued once; a key runs on one worker
// at a time; a failed key comes back after a backoff that doubles up to a cap, and a success resets it.
import type { Log } from '../../log/json-log.ts';
import { messageOf } from '../../errors.ts';

export interface WorkQueueOptions {
  readonly workers: number;
  readonly log: Log;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export class WorkQueue {
  readonly #run: (key: string) => Promise<void>;
  readonly #o: Required<WorkQueueOptions>;
  readonly #waiting: string[] = [];
  readonly #queued = new Set<string>();
  readonly #running = new Set<string>();
  /** Asked for again while running: queued once it ends. */
  readonly #again = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #busy = 0;
  #stopped = false;
  #idle: Array<() => void> = [];

  constructor(run: (key: string) => Promise<void>, options: WorkQueueOptions) {
    this.#run = run;
    this.#o = { baseDelayMs: 500, maxDelayMs: 60_000, ...options };
  }

  add(key: string): void {
    if (this.#stopped) return;
    if (this.#running.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    const timer = this.#timers.get(key);
    if (timer !== undefined) {
      clearTimeout(timer);
      this.#timers.delete(key);
    }
    this.#queued.add(key);
    this.#waiting.push(key);
    this.#pump();
  }

  /** Adds the key after a delay (a later add() runs it sooner). */
  addAfter(key: string, delayMs: number): void {
    if (this.#stopped || this.#timers.has(key) || this.#queued.has(key)) return;
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        this.add(key);
      }, delayMs),
    );
  }

  /** Resolves once nothing is queued or running (delayed retries aside). */
  idle(): Promise<void> {
    if (this.#busy === 0 && this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#waiting.length = 0;
    this.#queued.clear();
  }

  #pump(): void {
    while (this.#busy < this.#o.workers && this.#waiting.length > 0) {
      const key = this.#waiting.shift() as string;
      this.#queued.delete(key);
      this.#running.add(key);
      this.#busy++;
      void this.#work(key);
    }
    if (this.#busy === 0 && this.#waiting.length === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  async #work(key: string): Promise<void> {
    try {
      await this.#run(key);
      this.#failures.delete(key);
    } catch (err) {
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      const delay = Math.min(this.#o.maxDelayMs, this.#o.baseDelayMs * 2 ** (failures - 1));
      this.#o.log.warning(`${key}: ${messageOf(err)} (again in ${delay} ms)`, { key, failures });
      this.addAfter(key, delay);
    } finally {
      this.#running.delete(key);
      this.#busy--;
      if (this.#again.delete(key)) this.add(key);
      this.#pump();
    }
  }
}
