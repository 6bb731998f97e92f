// Who holds a pool lock, and whether that process still lives. The lock file records the holder's pid, its start
// time (/proc/<pid>/stat field 22, in clock ticks since boot: a reused pid has another), its pid namespace and the
// boot id. A holder is dead only when that is provable from here: another boot, no such pid, or the pid now belongs
// to a process started at another time (or a zombie), all within our own pid namespace. A live holder, however long
// it stalls, is never dead. A record from another pid namespace (a pid we cannot look up) is "unknown": the caller
// falls back on the lock's age.
import { readFileSync } from 'node:fs';
import { errnoOf } from './unsafe-file.ts';
import { ownPidNamespace, procStat, type ProcStat } from './proc.ts';

export interface LockOwner {
  readonly pid: number;
  /** Start time of the process (field 22 of /proc/<pid>/stat), as text; absent when /proc was unreadable. */
  readonly start?: string;
  /** `readlink /proc/self/ns/pid` of the holder, e.g. "pid:[4026531836]". */
  readonly pidns?: string;
  /** /proc/sys/kernel/random/boot_id of the holder's boot. */
  readonly boot?: string;
  /** Unique per acquisition: ownership checks compare it, not the pid. */
  readonly token: string;
}

export type Liveness =
  | { readonly state: 'alive' }
  | { readonly state: 'dead'; readonly why: string }
  | { readonly state: 'unknown'; readonly why: string };

type Identity = Omit<LockOwner, 'token'>;

let self: Identity | undefined;
let acquisitions = 0;

/** This process as a lock owner (read from /proc once per process). */
export function selfIdentity(): Identity {
  if (self === undefined) {
    const stat = readOptional(() => procStat(process.pid));
    const start = typeof stat === 'object' ? stat.start : undefined;
    const pidns = ownPidNamespace();
    const boot = readOptional(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    self = {
      pid: process.pid,
      ...(start === undefined ? {} : { start }),
      ...(pidns === undefined ? {} : { pidns }),
      ...(boot === undefined ? {} : { boot }),
    };
  }
  return self;
}

/** A fresh owner record for one acquisition by this process. */
export function newOwner(): LockOwner {
  acquisitions += 1;
  const random = Math.random().toString(36).slice(2, 10);
  const identity = selfIdentity();
  return { ...identity, token: `${identity.pid}-${identity.start ?? 'x'}-${acquisitions}-${random}` };
}

export function encodeOwner(owner: LockOwner): string {
  return `${JSON.stringify(owner)}\n`;
}

/** The owner record of a lock file, or undefined when it is not one (empty, torn, or written by something else). */
export function decodeOwner(text: string): LockOwner | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const { pid, start, pidns, boot, token } = doc as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0 || typeof token !== 'string' || token === '')
    return undefined;
  if (!isOptionalString(start) || !isOptionalString(pidns) || !isOptionalString(boot)) return undefined;
  return {
    pid,
    token,
    ...(start === undefined ? {} : { start }),
    ...(pidns === undefined ? {} : { pidns }),
    ...(boot === undefined ? {} : { boot }),
  };
}

export interface LivenessOptions {
  /**
   * The lock belongs to another user and we are not root: with /proc mounted hidepid, that user's processes are
   * invisible, so a missing pid proves nothing.
   */
  readonly pidsMayBeHidden?: boolean;
}

/** Whether the recorded holder still runs, judged from this process. */
export function liveness(owner: LockOwner, options: LivenessOptions = {}): Liveness {
  const me = selfIdentity();
  if (owner.boot !== undefined && me.boot !== undefined && owner.boot !== me.boot) {
    return { state: 'dead', why: `pid ${owner.pid} held it before the last boot` };
  }
  if (owner.pidns === undefined || me.pidns === undefined || owner.pidns !== me.pidns) {
    return { state: 'unknown', why: `pid ${owner.pid} is in another pid namespace (${owner.pidns ?? 'unrecorded'})` };
  }
  if (owner.start === undefined) return { state: 'unknown', why: `pid ${owner.pid} recorded no start time` };
  let stat: ProcStat | 'gone';
  try {
    stat = procStat(owner.pid);
  } catch (err) {
    return { state: 'unknown', why: `cannot read /proc/${owner.pid}/stat (${errnoOf(err) ?? 'unparsable'})` };
  }
  if (stat === 'gone') {
    if (options.pidsMayBeHidden === true)
      return { state: 'unknown', why: `pid ${owner.pid} of another user is not visible` };
    return { state: 'dead', why: `pid ${owner.pid} has exited` };
  }
  if (stat.start !== owner.start)
    return { state: 'dead', why: `pid ${owner.pid} has exited (the pid now belongs to another process)` };
  if (stat.state === 'Z' || stat.state === 'X') return { state: 'dead', why: `pid ${owner.pid} has exited (zombie)` };
  return { state: 'alive' };
}

export function describeOwner(owner: LockOwner): string {
  return `pid ${owner.pid}`;
}

function readOptional<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    // No /proc (or not ours): the lock then records less, and waiters fall back on its age.
    return undefined;
  }
}

function isOptionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === 'string';
}
