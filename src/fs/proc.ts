// What /proc says about processes, for judging whether the writer of a lock or a temp file still runs: a process's
// state and start time, this process's pid namespace, and the boot time that turns a start time into a date.
import { readFileSync, readlinkSync } from 'node:fs';
import { errnoOf } from './unsafe-file.ts';

export interface ProcStat {
  readonly state: string;
  /** Field 22: clock ticks since boot, as text (a reused pid has another). */
  readonly start: string;
}

/** State (field 3) and start time (field 22) of a process; 'gone' when there is no such process. Throws otherwise. */
export function procStat(pid: number): ProcStat | 'gone' {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ESRCH') return 'gone';
    throw err;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const start = fields[22 - 3];
  if (state === undefined || start === undefined || !/^\d+$/.test(start)) {
    throw new Error(`/proc/${pid}/stat has no start time`);
  }
  return { state, start };
}

let ownNamespace: { readonly link: string | undefined } | undefined;

/** `readlink /proc/self/ns/pid` (e.g. "pid:[4026531836]"), read once; undefined without /proc. */
export function ownPidNamespace(): string | undefined {
  if (ownNamespace === undefined) {
    let link: string | undefined;
    try {
      link = readlinkSync('/proc/self/ns/pid');
    } catch {
      link = undefined; // no /proc: writers of this process then cannot be judged by others, nor others by it
    }
    ownNamespace = { link };
  }
  return ownNamespace.link;
}

/** The inode number of a pid namespace link ("pid:[4026531836]" -> "4026531836"), or undefined. */
export function namespaceInode(link: string | undefined): string | undefined {
  return link === undefined ? undefined : /^pid:\[(\d+)\]$/.exec(link)?.[1];
}

/** Clock ticks per second of /proc/<pid>/stat's times: USER_HZ, fixed at 100 in Linux's ABI. */
const TICKS_PER_SECOND = 100;

/**
 * The earliest time (epoch ms) a process with this start time can have started: boot time (/proc/stat btime, whole
 * seconds, rounded down) plus the ticks. Undefined when /proc/stat cannot be read.
 */
export function earliestStartMs(start: string): number | undefined {
  const boot = bootTimeSeconds();
  return boot === undefined ? undefined : boot * 1000 + (Number(start) * 1000) / TICKS_PER_SECOND;
}

function bootTimeSeconds(): number | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return undefined;
  }
  const btime = /^btime (\d+)$/m.exec(text)?.[1];
  return btime === undefined ? undefined : Number(btime);
}
