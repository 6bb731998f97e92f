// The one retry loop of every conditional write (DESIGN §9): read -> decide -> write with a resourceVersion or
// uid precondition; a conflict reads again and decides again after a jittered exponential backoff, until a
// monotonic time budget or an attempt count is spent, or the caller says to stop (a controller that lost its lease).
import { monotonicMs, sleep } from '../clock.ts';
import { isTransient } from './errors.ts';

/** What an attempt returns when its precondition failed (409, or the object vanished under it). */
export const CONFLICT: unique symbol = Symbol('conflict');
export type Conflict = typeof CONFLICT;

export interface RetryOptions {
  /** Stop retrying once this much time has passed since the first attempt (monotonic). */
  readonly budgetMs?: number;
  /** Stop after this many attempts. At least one of budgetMs and attempts bounds the loop. */
  readonly attempts?: number;
  /** Checked before every attempt; false stops the loop (outcome 'stopped'). */
  readonly proceed?: () => boolean;
  readonly baseMs?: number;
  readonly capMs?: number;
  /**
   * The backoff's base step is twice as long as the attempt just refused took, when that is longer than baseMs: with
   * many writers racing for one object under load, an attempt lasts about as long as another writer needs to land,
   * and coming back sooner mostly meets the next one's write (one and two attempt lengths measured, two kept:
   * docs/benchmarks.md).
   */
  readonly stepFromAttempt?: boolean;
}

export type RetryOutcome<T> =
  | { readonly kind: 'done'; readonly value: T; readonly conflicts: number }
  | { readonly kind: 'exhausted'; readonly conflicts: number }
  | { readonly kind: 'stopped'; readonly conflicts: number };

const DEFAULT_BASE_MS = 10;
const DEFAULT_CAP_MS = 400;

export async function retryOnConflict<T>(
  attempt: (n: number) => Promise<T | Conflict>,
  options: RetryOptions,
): Promise<RetryOutcome<T>> {
  if (options.budgetMs === undefined && options.attempts === undefined)
    throw new TypeError('retryOnConflict needs budgetMs or attempts');
  const deadline = options.budgetMs === undefined ? Infinity : monotonicMs() + options.budgetMs;
  const maxAttempts = options.attempts ?? Infinity;
  let conflicts = 0;
  let lastAttemptMs = 0;
  for (let n = 0; n < maxAttempts; n++) {
    if (n > 0) {
      const wait = Math.min(jittered(n, options, lastAttemptMs), deadline - monotonicMs());
      if (wait < 0) break;
      await sleep(wait);
    }
    if (options.proceed !== undefined && !options.proceed()) return { kind: 'stopped', conflicts };
    const started = monotonicMs();
    const result = await attempt(n);
    lastAttemptMs = monotonicMs() - started;
    if (result !== CONFLICT) return { kind: 'done', value: result, conflicts };
    conflicts++;
    if (monotonicMs() > deadline) break;
  }
  return { kind: 'exhausted', conflicts };
}

/** Full jitter over the upper half of an exponential step: spreads racing writers without starving any. */
function jittered(attempt: number, options: RetryOptions, lastAttemptMs: number): number {
  const base = Math.max(options.baseMs ?? DEFAULT_BASE_MS, options.stepFromAttempt === true ? 2 * lastAttemptMs : 0);
  const cap = Math.min(options.capMs ?? DEFAULT_CAP_MS, base * 2 ** attempt);
  return cap / 2 + Math.random() * (cap / 2);
}

/**
 * `step` (a read, or a write that is safe to repeat), tried again after a failure that may pass (`passing`; by
 * default isTransient: unreachable, 5xx, 429) with a doubling pause from 50 ms up to 1 s, until `budgetMs` are
 * spent; its last failure is thrown.
 */
export async function retryTransient<T>(
  step: () => Promise<T>,
  options: { readonly budgetMs: number; readonly passing?: (err: unknown) => boolean },
): Promise<T> {
  const passing = options.passing ?? isTransient;
  const deadline = monotonicMs() + options.budgetMs;
  for (let pause = 50; ; pause = Math.min(1_000, pause * 2)) {
    try {
      return await step();
    } catch (err) {
      if (!passing(err) || monotonicMs() + pause > deadline) throw err;
      await sleep(pause);
    }
  }
}
