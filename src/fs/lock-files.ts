// The lock files themselves, below the waiting policy of lock.ts: reading a lock and judging its holder, creating a
// file atomically and exclusively, and removing a stale lock with one reclaimer at a time (see lock.ts).
import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ErrorKind, HereaboutsError } from '../errors.ts';
import { messageOf } from '../errors.ts';
import { errnoOf } from './unsafe-file.ts';
import { decodeOwner, describeOwner, encodeOwner, liveness, newOwner, type LockOwner } from './lock-owner.ts';

/** Age after which a lock whose holder cannot be judged is abandoned; see LockTiming in lock.ts. */
export interface StaleTiming {
  readonly staleMs: number;
}

const FILE_MODE = 0o600;
/** Claims on claims: only a reclaimer that died inside a few syscalls leaves one behind. */
const MAX_CLAIM_DEPTH = 4;

export type Seen =
  | { readonly kind: 'gone' }
  | { readonly kind: 'owner'; readonly owner: LockOwner; readonly stat: Stats }
  | { readonly kind: 'unknown'; readonly stat: Stats };

export function inspect(path: string): Seen {
  let stat: Stats;
  let text: string;
  try {
    stat = statSync(path);
    if (stat.isDirectory()) return { kind: 'unknown', stat };
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return { kind: 'gone' };
    throw new HereaboutsError(ErrorKind.Io, `cannot read lock ${path}: ${messageOf(err)}`, { cause: err });
  }
  const owner = decodeOwner(text);
  return owner === undefined ? { kind: 'unknown', stat } : { kind: 'owner', owner, stat };
}

export type Verdict =
  | { readonly kind: 'live'; readonly holder: string }
  | { readonly kind: 'dead'; readonly why: string }
  | { readonly kind: 'stale-by-age'; readonly why: string };

export function judge(seen: Exclude<Seen, { kind: 'gone' }>, timing: StaleTiming): Verdict {
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
export function removeIfStill(
  path: string,
  seen: Exclude<Seen, { kind: 'gone' }>,
  timing: StaleTiming,
  depth: number,
): boolean {
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
      if (errnoOf(err) !== 'ENOENT') {
        throw new HereaboutsError(ErrorKind.Io, `cannot remove stale lock ${path}: ${messageOf(err)}`, { cause: err });
      }
    }
    return true;
  } finally {
    unlinkQuietly(claim);
  }
}

/** What makes one lock file different from the next one at the same path: its token, else inode and mtime. */
export function identityOf(seen: Exclude<Seen, { kind: 'gone' }>): string {
  if (seen.kind === 'owner') return `t${seen.owner.token.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}`;
  return `i${seen.stat.ino}-m${Math.trunc(seen.stat.mtimeMs)}`;
}

/** Creates `path` holding `content`, atomically and only if nothing is there; false when something is. */
function createExclusive(path: string, content: string): boolean {
  const temp = tempBeside(path);
  try {
    writeNewFile(temp, content, FILE_MODE);
    linkSync(temp, path);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw new HereaboutsError(ErrorKind.Io, `cannot create lock ${path}: ${messageOf(err)}`, { cause: err });
  } finally {
    removeTemp(temp);
  }
}

/** Creates `path`, which must not exist, holding `content`; if the write fails (ENOSPC), the file goes again. */
export function writeNewFile(path: string, content: string, mode: number): void {
  const fd = openSync(path, 'wx', mode);
  let written = false;
  try {
    writeFileSync(fd, content);
    written = true;
  } finally {
    try {
      closeSync(fd);
    } finally {
      if (!written) removeTemp(path);
    }
  }
}

/** A hidden, unique name beside `path` (readers of the directory skip names starting with '.'). */
export function tempBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
}

export function removeTemp(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // A stray temp file (hidden, never read) must not turn a taken lock into an error.
  }
}

export function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT')
      throw new HereaboutsError(ErrorKind.Io, `cannot remove ${path}: ${messageOf(err)}`, { cause: err });
  }
}

export function describe(seen: Exclude<Seen, { kind: 'gone' }>): string {
  return seen.kind === 'owner' ? describeOwner(seen.owner) : 'a lock without an owner record';
}
