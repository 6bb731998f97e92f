// One folder per node: during a rolling update the old and the new DaemonSet pod run side by side (maxSurge), and
// both folding calls-stats would count every call twice. fold.lock is the node's one lock primitive (src/fs/lock.ts):
// the holder keeps it until it releases it (SIGTERM) or dies; a holder that cannot be judged by its pid (another pid
// namespace) counts as dead once the lock has not been refreshed for staleMs.
import { tryAcquireLock, type HeldLock } from '../fs/lock.ts';

export class FoldLock {
  readonly #path: string;
  readonly #staleMs: number;
  #held: HeldLock | undefined;

  constructor(path: string, options: { staleMs: number }) {
    this.#path = path;
    this.#staleMs = options.staleMs;
  }

  /** Whether this process holds the lock now (taking it when it is free or its holder is gone). */
  hold(): boolean {
    if (this.#held !== undefined && this.#stillOurs(this.#held)) return true;
    this.#held = tryAcquireLock({ lock: this.#path }, { staleMs: this.#staleMs, timeoutMs: 0 });
    return this.#held !== undefined;
  }

  /** Gives the lock back if this process still holds it (never another holder's). */
  release(): void {
    const held = this.#held;
    this.#held = undefined;
    void held?.release();
  }

  #stillOurs(held: HeldLock): boolean {
    try {
      held.assertHeld();
      return true;
    } catch {
      this.#held = undefined; // taken over after our pod was judged gone; hold() tries again
      return false;
    }
  }
}
