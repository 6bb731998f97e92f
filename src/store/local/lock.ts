// The per-pool file lock. The lock is a file created atomically with its owner record in it (written to a temp
// file, then hard-linked to the lock's name: link fails if anything is there), so it never exists without saying
// who holds it. It is stale only when its holder is provably dead (lock-owner.ts): a live holder keeps it however
// long it stalls (like flock), so the lock never has two holders, and a waiter that runs out of time answers code
// 11. The holder re-reads the lock right before committing and aborts if it is no longer its own.
//
// Age is only a fallback, for a lock whose holder cannot be judged: one taken in another pid namespace, or a lock
// without a readable owner record (a lock directory of an older hereabouts, a file torn by a power loss). Those
// count as abandoned once their mtime is older than `staleMs`; holders refresh it, and a takeover says so in the log.
//
// Removing a stale lock is a read-then-unlink, so two waiters that both saw it stale could otherwise remove a lock
// that one of them has just taken. A reclaimer first creates a claim file named after the stale lock's identity
// (exclusive, like the lock itself), and re-reads the lock under it: one reclaimer per stale lock, and only a lock
// still stale goes. A claim whose creator died is itself reclaimed the same way.
import { linkSync, readFileSync, rmdirSync, statSync, unlinkSync, utimesSync, writeFileSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CniCode, CniError } from '../../cni/errors.ts';
import { monotonicMs, sleep } from '../../clock.ts';
import { errorCode, messageOf } from './fs-errors.ts';
import { decodeOwner, describeOwner, encodeOwner, liveness, newOwner, type LockOwner } from './lock-owner.ts';
import type { PoolPaths } from './paths.ts';

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
  /** Throws CniError 11 unless the lock file still carries this holder's token; call right before committing. */
  assertHeld(): void;
  release(): Promise<void>;
}

const MIN_POLL_MS = 2;
const MAX_POLL_MS = 50;
const FILE_MODE = 0o600;
/** Claims on claims: only a reclaimer that died inside a few syscalls leaves one behind. */
const MAX_CLAIM_DEPTH = 4;

/** Waits for the pool's lock (polling with jitter until timing.timeoutMs) and returns it held. */
export async function acquirePoolLock(paths: PoolPaths, timing: LockTiming, options: LockOptions = {}): Promise<HeldLock> {
  const deadline = monotonicMs() + timing.timeoutMs;
  let announced = false;
  for (let attempt = 0; ; attempt++) {
    const outcome = tryLock(paths, timing, options);
    if (outcome.kind === 'held') return outcome.lock;
    if (!announced) {
      options.log?.debug(`pool lock ${paths.lock} is held by ${outcome.holder}; waiting`);
      announced = true;
    }
    if (monotonicMs() >= deadline) {
      throw new CniError(CniCode.TryAgainLater, `timed out after ${timing.timeoutMs} ms waiting for the lock ${paths.lock}`, {
        details: `held by ${outcome.holder}; retry the request`,
      });
    }
    await sleep(jitteredDelay(attempt, deadline));
  }
}

/** One attempt without waiting (a stale lock is still reclaimed): the lock, or undefined while someone live holds it. */
export function tryAcquirePoolLock(paths: PoolPaths, timing: LockTiming, options: LockOptions = {}): HeldLock | undefined {
  const outcome = tryLock(paths, timing, options);
  return outcome.kind === 'held' ? outcome.lock : undefined;
}

type Attempt = { readonly kind: 'held'; readonly lock: HeldLock } | { readonly kind: 'busy'; readonly holder: string };

function tryLock(paths: PoolPaths, timing: LockTiming, options: LockOptions): Attempt {
  // A few rounds: the lock may vanish or be reclaimed between our attempts to create it and to read it.
  for (let round = 0; round < 3; round++) {
    const owner = newOwner();
    if (createExclusive(paths.lock, encodeOwner(owner))) return { kind: 'held', lock: heldLock(paths, owner, timing) };
    const seen = inspect(paths.lock);
    if (seen.kind === 'gone') continue;
    const verdict = judge(seen, timing);
    if (verdict.kind === 'live') return { kind: 'busy', holder: verdict.holder };
    if (verdict.kind === 'stale-by-age') {
      options.log?.warning(`pool lock ${paths.lock}: ${verdict.why}; taking it over after ${timing.staleMs} ms without a refresh`);
    } else {
      options.log?.debug(`pool lock ${paths.lock}: ${verdict.why}; taking it over`);
    }
    if (!removeIfStill(paths.lock, seen, timing, 0)) return { kind: 'busy', holder: `a reclaimer of ${describe(seen)}` };
  }
  return { kind: 'busy', holder: 'other processes (it changed hands while we looked)' };
}

function heldLock(paths: PoolPaths, owner: LockOwner, timing: LockTiming): HeldLock {
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
        throw new CniError(CniCode.TryAgainLater, `lost the lock ${paths.lock} while holding it; nothing was written`, {
          details: 'another process took the lock over; retry the request',
        });
      }
    },
    async release() {
      clearInterval(refresh);
      // Never remove a lock that is no longer ours (only possible after an age-based takeover).
      if (ours()) unlinkQuietly(paths.lock);
    },
  };
}

type Seen =
  | { readonly kind: 'gone' }
  | { readonly kind: 'owner'; readonly owner: LockOwner; readonly stat: Stats }
  | { readonly kind: 'unknown'; readonly stat: Stats };

function inspect(path: string): Seen {
  let stat: Stats;
  let text: string;
  try {
    stat = statSync(path);
    if (stat.isDirectory()) return { kind: 'unknown', stat };
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { kind: 'gone' };
    throw new CniError(CniCode.IoFailure, `cannot read lock ${path}: ${messageOf(err)}`, { cause: err });
  }
  const owner = decodeOwner(text);
  return owner === undefined ? { kind: 'unknown', stat } : { kind: 'owner', owner, stat };
}

type Verdict =
  | { readonly kind: 'live'; readonly holder: string }
  | { readonly kind: 'dead'; readonly why: string }
  | { readonly kind: 'stale-by-age'; readonly why: string };

function judge(seen: Exclude<Seen, { kind: 'gone' }>, timing: LockTiming): Verdict {
  const fresh = Date.now() - seen.stat.mtimeMs <= timing.staleMs;
  if (seen.kind === 'unknown') {
    const what = seen.stat.isDirectory() ? 'a lock directory (an older hereabouts)' : 'a lock without an owner record';
    return fresh ? { kind: 'live', holder: what } : { kind: 'stale-by-age', why: `${what}, cannot judge its holder` };
  }
  const uid = process.getuid?.();
  const alive = liveness(seen.owner, { pidsMayBeHidden: uid !== undefined && uid !== 0 && seen.stat.uid !== uid });
  if (alive.state === 'alive') return { kind: 'live', holder: `${describeOwner(seen.owner)} (running)` };
  if (alive.state === 'dead') return { kind: 'dead', why: alive.why };
  return fresh
    ? { kind: 'live', holder: `${describeOwner(seen.owner)} (${alive.why}: judged by age)` }
    : { kind: 'stale-by-age', why: alive.why };
}

/**
 * Removes the lock file `path` if it is still the stale one `seen`, holding an exclusive claim named after it so
 * that no other reclaimer acts at the same time. True when the caller may try to lock again at once.
 */
function removeIfStill(path: string, seen: Exclude<Seen, { kind: 'gone' }>, timing: LockTiming, depth: number): boolean {
  const claim = join(dirname(path), `.${basename(path)}.reclaim-${identityOf(seen)}`);
  if (!createExclusive(claim, encodeOwner(newOwner()))) {
    // Someone else reclaims this lock; if that reclaimer died midway, its claim goes the same way.
    const other = inspect(claim);
    if (other.kind === 'gone' || depth >= MAX_CLAIM_DEPTH) return false;
    if (judge(other, timing).kind === 'live') return false;
    removeIfStill(claim, other, timing, depth + 1);
    return false;
  }
  try {
    const now = inspect(path);
    if (now.kind === 'gone') return true;
    if (identityOf(now) !== identityOf(seen)) return true; // taken over by someone else meanwhile: look again
    try {
      if (now.stat.isDirectory()) rmdirSync(path);
      else unlinkSync(path);
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') {
        throw new CniError(CniCode.IoFailure, `cannot remove stale lock ${path}: ${messageOf(err)}`, { cause: err });
      }
    }
    return true;
  } finally {
    unlinkQuietly(claim);
  }
}

/** What makes one lock file different from the next one at the same path: its token, else inode and mtime. */
function identityOf(seen: Exclude<Seen, { kind: 'gone' }>): string {
  if (seen.kind === 'owner') return `t${seen.owner.token.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}`;
  return `i${seen.stat.ino}-m${Math.trunc(seen.stat.mtimeMs)}`;
}

/** Creates `path` holding `content`, atomically and only if nothing is there; false when something is. */
function createExclusive(path: string, content: string): boolean {
  const temp = join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  try {
    writeFileSync(temp, content, { mode: FILE_MODE, flag: 'wx' });
    linkSync(temp, path);
    return true;
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw new CniError(CniCode.IoFailure, `cannot create lock ${path}: ${messageOf(err)}`, { cause: err });
  } finally {
    removeTemp(temp);
  }
}

function removeTemp(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // A stray temp file (hidden, never read) must not turn a taken lock into an error.
  }
}

function touch(path: string): void {
  const now = new Date();
  try {
    utimesSync(path, now, now);
  } catch {
    // The lock is gone or replaced; assertHeld() reports that where it matters, before a commit.
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw new CniError(CniCode.IoFailure, `cannot remove ${path}: ${messageOf(err)}`, { cause: err });
  }
}

function describe(seen: Exclude<Seen, { kind: 'gone' }>): string {
  return seen.kind === 'owner' ? describeOwner(seen.owner) : 'a lock without an owner record';
}

function jitteredDelay(attempt: number, deadline: number): number {
  const cap = Math.min(MAX_POLL_MS, MIN_POLL_MS * 1.5 ** attempt);
  const delay = cap / 2 + Math.random() * (cap / 2);
  return Math.max(0, Math.min(delay, deadline - monotonicMs()));
}
