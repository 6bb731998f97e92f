// The per-pool file lock: proper-lockfile's mkdir lock, kept fresh by its mtime updates, plus a stale reclaim of
// our own. proper-lockfile 4.1.2 reclaims a stale lock with stat + rmdir + mkdir, and two waiters that both saw
// the stale lock can both end up holding it (moxystudio/node-proper-lockfile#121). So its own reclaim is switched
// off (a huge `stale`) and a waiter that sees our lock go stale removes it only while holding a second, short
// "reclaim" lock and after re-checking under it: one reclaimer at a time, and only a lock still stale goes.
import { mkdirSync, realpathSync, rmdirSync, statSync, utimesSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { CniCode, CniError } from '../../cni/errors.ts';
import { errorCode, messageOf } from './fs-errors.ts';
import type { PoolPaths } from './paths.ts';

export interface LockTiming {
  /** A lock whose mtime is older than this is abandoned (its holder died); the holder refreshes it at half. */
  readonly staleMs: number;
  /** Give up waiting for the lock after this long (CNI code 11, try again later). */
  readonly timeoutMs: number;
}

export const DEFAULT_LOCK_TIMING: LockTiming = { staleMs: 10_000, timeoutMs: 30_000 };

/**
 * The only calls proper-lockfile's sync API makes. Its adapter copies every property of the fs it is given, and on
 * node:fs that touches the lazy getters (promises, streams, watchers): half of Node loaded for nothing.
 */
const lockFs = { mkdirSync, realpathSync, rmdirSync, statSync, utimesSync };

/** Effectively "never" for proper-lockfile's own (racy) stale reclaim. */
const NEVER_STALE_MS = 365 * 24 * 3600 * 1000;
const MIN_POLL_MS = 2;
const MAX_POLL_MS = 50;

export interface HeldLock {
  /** Throws CniError 11 when the lock was lost (another process took it over); call right before committing. */
  assertHeld(): void;
  release(): Promise<void>;
}

/** Waits for the pool's lock (polling with jitter until timing.timeoutMs) and returns it held. */
export async function acquirePoolLock(paths: PoolPaths, timing: LockTiming): Promise<HeldLock> {
  const deadline = Date.now() + timing.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    let lost: Error | undefined;
    try {
      // The sync API: plain synchronous syscalls, no libuv threadpool to start (and tear down) in a CNI process
      // that lives for milliseconds. Waiting between attempts stays asynchronous (a timer).
      const release = lockfile.lockSync(paths.data, {
        fs: lockFs,
        lockfilePath: paths.lock,
        realpath: false,
        stale: NEVER_STALE_MS,
        update: Math.max(1000, Math.floor(timing.staleMs / 2)),
        retries: 0,
        onCompromised: (err) => {
          lost = err;
        },
      });
      return {
        assertHeld() {
          if (lost !== undefined) {
            const msg = `lost the lock on ${paths.data} while holding it: ${lost.message}`;
            throw new CniError(CniCode.TryAgainLater, msg, { cause: lost });
          }
        },
        async release() {
          try {
            release();
          } catch (err) {
            // A lock already reported compromised is gone; there is nothing left to release.
            if (lost === undefined || errorCode(err) !== 'ERELEASED') throw err;
          }
        },
      };
    } catch (err) {
      if (errorCode(err) !== 'ELOCKED') {
        throw new CniError(CniCode.IoFailure, `cannot lock pool file ${paths.data}: ${messageOf(err)}`, { cause: err });
      }
    }
    if (reclaimIfStale(paths, timing)) continue;
    if (Date.now() >= deadline) {
      throw new CniError(
        CniCode.TryAgainLater,
        `timed out after ${timing.timeoutMs} ms waiting for the lock ${paths.lock}`,
        { details: 'another process holds the pool lock; retry the request' },
      );
    }
    await sleep(jitteredDelay(attempt, deadline));
  }
}

/** Removes the lock when its holder stopped refreshing it; true when it did (retry at once). */
function reclaimIfStale(paths: PoolPaths, timing: LockTiming): boolean {
  if (!isStale(paths.lock, timing.staleMs)) return false;
  let releaseReclaim: () => void;
  try {
    releaseReclaim = lockfile.lockSync(paths.lock, {
      fs: lockFs,
      lockfilePath: `${paths.lock}.reclaim`,
      realpath: false,
      // Held for a stat and an rmdir; proper-lockfile's floor (2 s) is plenty.
      stale: 2000,
      retries: 0,
      onCompromised: () => {},
    });
  } catch (err) {
    if (errorCode(err) === 'ELOCKED') return false;
    throw new CniError(CniCode.IoFailure, `cannot lock ${paths.lock}.reclaim: ${messageOf(err)}`, { cause: err });
  }
  try {
    // Re-checked under the reclaim lock: nobody else removes lock directories meanwhile.
    if (!isStale(paths.lock, timing.staleMs)) return false;
    try {
      rmdirSync(paths.lock);
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') {
        const msg = `cannot remove stale lock ${paths.lock}: ${messageOf(err)}`;
        throw new CniError(CniCode.IoFailure, msg, { cause: err });
      }
    }
    return true;
  } finally {
    releaseReclaim();
  }
}

function isStale(lockPath: string, staleMs: number): boolean {
  try {
    return statSync(lockPath).mtimeMs < Date.now() - staleMs;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return false;
    throw new CniError(CniCode.IoFailure, `cannot stat lock ${lockPath}: ${messageOf(err)}`, { cause: err });
  }
}

function jitteredDelay(attempt: number, deadline: number): number {
  const cap = Math.min(MAX_POLL_MS, MIN_POLL_MS * 1.5 ** attempt);
  const delay = cap / 2 + Math.random() * (cap / 2);
  return Math.max(0, Math.min(delay, deadline - Date.now()));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
