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
import { tempSuffix } from './stale-temps.ts';
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
  const identity = identityOf(seen);
  return underClaim(path, identity, timing, depth, () => {
    const now = inspect(path);
    if (now.kind === 'gone' || identityOf(now) !== identity) return; // taken over by someone else meanwhile
    try {
      if (now.stat.isDirectory()) rmdirSync(path);
      else unlinkSync(path);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') {
        throw new HereaboutsError(ErrorKind.Io, `cannot remove stale lock ${path}: ${messageOf(err)}`, { cause: err });
      }
    }
  });
}

/**
 * Removes the lock file `path` if it is still `owner`'s. The check and the unlink happen under the claim a reclaimer
 * of this lock would need, so no reclaimer can replace the lock in between: a lock taken over (by age, from another
 * pid namespace) is never removed by its former holder.
 */
export function releaseOwn(path: string, owner: LockOwner, timing: StaleTiming): void {
  const seenOwn = (): boolean => {
    const now = inspect(path);
    return now.kind === 'owner' && now.owner.token === owner.token;
  };
  for (let round = 0; round < 3; round++) {
    let claimed: boolean;
    try {
      claimed = underClaim(path, ownerIdentity(owner), timing, 0, () => {
        if (seenOwn()) unlinkQuietly(path);
      });
    } catch (err) {
      // No room for the claim (ENOSPC): a lock left behind by a live process would stop the pool, so it goes as
      // before the claim. Only a takeover by age (never in the shipped configuration) could race this.
      if (!(err instanceof HereaboutsError) || err.kind !== ErrorKind.Io) throw err;
      if (seenOwn()) unlinkQuietly(path);
      return;
    }
    // Not claimed: a reclaimer that judged us stale holds the claim and removes the lock itself, or it had died and
    // its claim is gone now; look again.
    if (claimed || !seenOwn()) return;
  }
}

/** Runs `act` holding the exclusive claim named after `identity`; false (without running it) when another holds it. */
function underClaim(path: string, identity: string, timing: StaleTiming, depth: number, act: () => void): boolean {
  const claim = join(dirname(path), `.${basename(path)}.reclaim-${identity}`);
  if (!createExclusive(claim, encodeOwner(newOwner()))) {
    // Someone else reclaims this lock; if that reclaimer died midway, its claim goes the same way.
    const other = inspect(claim);
    if (other.kind === 'gone' || depth >= MAX_CLAIM_DEPTH) return false;
    if (judge(other, timing).kind === 'live') return false;
    removeIfStill(claim, other, timing, depth + 1);
    return false;
  }
  try {
    act();
    return true;
  } finally {
    unlinkQuietly(claim);
  }
}

/** What makes one lock file different from the next one at the same path: its token, else inode and mtime. */
export function identityOf(seen: Exclude<Seen, { kind: 'gone' }>): string {
  if (seen.kind === 'owner') return ownerIdentity(seen.owner);
  return `i${seen.stat.ino}-m${Math.trunc(seen.stat.mtimeMs)}`;
}

function ownerIdentity(owner: LockOwner): string {
  return `t${owner.token.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}`;
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
  return join(dirname(path), `.${basename(path)}.tmp-${tempSuffix()}`);
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
