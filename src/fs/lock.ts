// The one lock primitive of the node (the local store's pools, the Kubernetes store's node cache, the installer's
// stats folding). The lock is a file created atomically with its owner record in it (written to a temp
// file, then hard-linked to the lock's name: link fails if anything is there), so it never exists without saying
// who holds it. It is stale only when its holder is provably dead (lock-owner.ts): a live holder keeps it however
// long it stalls (like flock), so the lock never has two holders, and a waiter that runs out of time answers code
// 11. The holder re-reads the lock right before committing and aborts if it is no longer its own.
//
// Age is only a fallback, for a lock whose holder cannot be judged: one taken in another pid namespace (never in the
// shipped configuration: the node DaemonSet shares the host's pid namespace, and a node agent refuses calls from
// another one, src/agent/pid-namespace.ts), or a lock without a readable owner record (a lock directory of an older
// hereabouts, a file torn by a power loss). Those count as abandoned once their mtime is older than `staleMs`;
// holders refresh it, and a takeover says so in the log.
//
// Removing a stale lock is a read-then-unlink, so two waiters that both saw it stale could otherwise remove a lock
// that one of them has just taken. A reclaimer first creates a claim file named after the stale lock's identity
// (exclusive, like the lock itself), and re-reads the lock under it: one reclaimer per stale lock, and only a lock
// still stale goes. A claim whose creator died is itself reclaimed the same way.
import { linkSync, utimesSync } from 'node:fs';
import { ErrorKind, HereaboutsError } from '../errors.ts';
import { monotonicMs, sleep } from '../clock.ts';
import { messageOf } from '../errors.ts';
import { errnoOf } from './unsafe-file.ts';
import {
  describe,
  identityOf,
  inspect,
  judge,
  releaseOwn,
  removeIfStill,
  removeTemp,
  tempBeside,
  writeNewFile,
} from './lock-files.ts';
import { encodeOwner, newOwner, type LockOwner } from './lock-owner.ts';

/** Where the lock lives: a file path beside what it protects. */
export interface LockPath {
  readonly lock: string;
}

export interface LockTiming {
  /** Age after which a lock whose holder cannot be judged (another pid namespace, no owner record) is abandoned. */
  readonly staleMs: number;
  /** Give up waiting for the lock after this long (CNI code 11, try again later). */
  readonly timeoutMs: number;
}

export const DEFAULT_LOCK_TIMING: LockTiming = { staleMs: 10_000, timeoutMs: 30_000 };

export interface LockLog {
  debug(msg: string): void;
  warning(msg: string): void;
}

export interface LockOptions {
  readonly log?: LockLog;
}

export interface HeldLock {
  /** Throws HereaboutsError 11 unless the lock file still carries this holder's token; call right before committing. */
  assertHeld(): void;
  release(): Promise<void>;
}

const MIN_POLL_MS = 2;
const MAX_POLL_MS = 50;
const FILE_MODE = 0o600;

/** Waits for the lock (polling with jitter until timing.timeoutMs) and returns it held. */
export async function acquireLock(paths: LockPath, timing: LockTiming, options: LockOptions = {}): Promise<HeldLock> {
  const deadline = monotonicMs() + timing.timeoutMs;
  const attempts = new Attempts(paths, timing, options);
  let announced = false;
  try {
    for (let attempt = 0; ; attempt++) {
      const outcome = attempts.next();
      if (outcome.kind === 'held') return outcome.lock;
      if (!announced) {
        options.log?.debug(`lock ${paths.lock} is held by ${outcome.holder}; waiting`);
        announced = true;
      }
      if (monotonicMs() >= deadline) {
        throw new HereaboutsError(
          ErrorKind.Unavailable,
          `timed out after ${timing.timeoutMs} ms waiting for the lock ${paths.lock}`,
          {
            details: `held by ${outcome.holder}; retry the request`,
          },
        );
      }
      await sleep(jitteredDelay(attempt, deadline));
    }
  } finally {
    attempts.dispose();
  }
}

/** One attempt without waiting (a stale lock is still reclaimed): the lock, or undefined while someone live holds it. */
export function tryAcquireLock(paths: LockPath, timing: LockTiming, options: LockOptions = {}): HeldLock | undefined {
  const attempts = new Attempts(paths, timing, options);
  try {
    const outcome = attempts.next();
    return outcome.kind === 'held' ? outcome.lock : undefined;
  } finally {
    attempts.dispose();
  }
}

type Attempt = { readonly kind: 'held'; readonly lock: HeldLock } | { readonly kind: 'busy'; readonly holder: string };

/** A holder found alive is looked up in /proc again only after this long: polling waiters stay cheap. */
const RECHECK_ALIVE_MS = 100;

/**
 * The attempts of one acquisition. The owner record is written once to a temp file, and each attempt is a single
 * link(2) of it to the lock's name; only a failed attempt reads the lock to judge its holder.
 */
class Attempts {
  readonly #owner = newOwner();
  readonly #temp: string;
  #tempWritten = false;
  #lastAlive: { readonly identity: string; readonly atMs: number; readonly holder: string } | undefined;
  readonly paths: LockPath;
  readonly timing: LockTiming;
  readonly options: LockOptions;

  constructor(paths: LockPath, timing: LockTiming, options: LockOptions) {
    this.paths = paths;
    this.timing = timing;
    this.options = options;
    this.#temp = tempBeside(paths.lock);
  }

  next(): Attempt {
    const { paths, timing, options } = this;
    // A few rounds: the lock may vanish or be reclaimed between our attempts to create it and to read it.
    for (let round = 0; round < 3; round++) {
      if (this.#link()) return { kind: 'held', lock: heldLock(paths, this.#owner, timing) };
      const seen = inspect(paths.lock);
      if (seen.kind === 'gone') continue;
      const identity = identityOf(seen);
      const last = this.#lastAlive;
      if (last?.identity === identity && monotonicMs() - last.atMs < RECHECK_ALIVE_MS)
        return { kind: 'busy', holder: last.holder };
      const verdict = judge(seen, timing);
      if (verdict.kind === 'live') {
        this.#lastAlive = { identity, atMs: monotonicMs(), holder: verdict.holder };
        return { kind: 'busy', holder: verdict.holder };
      }
      if (verdict.kind === 'stale-by-age') {
        options.log?.warning(
          `lock ${paths.lock}: ${verdict.why}; taking it over after ${timing.staleMs} ms without a refresh`,
        );
      } else {
        options.log?.debug(`lock ${paths.lock}: ${verdict.why}; taking it over`);
      }
      if (!removeIfStill(paths.lock, seen, timing, 0))
        return { kind: 'busy', holder: `a reclaimer of ${describe(seen)}` };
    }
    return { kind: 'busy', holder: 'other processes (it changed hands while we looked)' };
  }

  dispose(): void {
    if (this.#tempWritten) removeTemp(this.#temp);
  }

  #link(): boolean {
    try {
      if (!this.#tempWritten) {
        // A write that fails (ENOSPC) removes the file it created: nothing is left beside the pool.
        writeNewFile(this.#temp, encodeOwner(this.#owner), FILE_MODE);
        this.#tempWritten = true;
      }
    } catch (err) {
      throw new HereaboutsError(ErrorKind.Io, `cannot create lock ${this.paths.lock}: ${messageOf(err)}`, {
        cause: err,
      });
    }
    try {
      linkSync(this.#temp, this.paths.lock);
      return true;
    } catch (err) {
      if (errnoOf(err) === 'EEXIST') return false;
      throw new HereaboutsError(ErrorKind.Io, `cannot create lock ${this.paths.lock}: ${messageOf(err)}`, {
        cause: err,
      });
    }
  }
}

function heldLock(paths: LockPath, owner: LockOwner, timing: LockTiming): HeldLock {
  // Keeps the mtime fresh for waiters that can only judge by age (another pid namespace); never keeps us alive.
  const refresh = setInterval(() => touch(paths.lock), Math.max(1000, Math.floor(timing.staleMs / 2)));
  refresh.unref();
  const ours = (): boolean => {
    const now = inspect(paths.lock);
    return now.kind === 'owner' && now.owner.token === owner.token;
  };
  return {
    assertHeld() {
      if (!ours()) {
        throw new HereaboutsError(
          ErrorKind.Unavailable,
          `lost the lock ${paths.lock} while holding it; nothing was written`,
          {
            details: 'another process took the lock over; retry the request',
          },
        );
      }
    },
    async release() {
      clearInterval(refresh);
      // Never remove a lock that is no longer ours (only possible after an age-based takeover), not even one taken
      // over between a look and an unlink: both happen under the claim a reclaimer would need.
      releaseOwn(paths.lock, owner, timing);
    },
  };
}

function touch(path: string): void {
  const now = new Date();
  try {
    utimesSync(path, now, now);
  } catch {
    // The lock is gone or replaced; assertHeld() reports that where it matters, before a commit.
  }
}

function jitteredDelay(attempt: number, deadline: number): number {
  const cap = Math.min(MAX_POLL_MS, MIN_POLL_MS * 1.5 ** attempt);
  const delay = cap / 2 + Math.random() * (cap / 2);
  return Math.max(0, Math.min(delay, deadline - monotonicMs()));
}
