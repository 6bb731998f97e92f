// Temp files of writers that were killed between create and rename (atomic-write.ts, lock-files.ts). A temp file's
// name ends in `<pid>-<pid namespace inode>-<random>` (tempSuffix): who wrote it, judged like a lock's holder
// (lock-owner.ts). A file goes only when its writer is provably gone: its pid namespace is ours and the pid has
// exited, or now belongs to a process that started after the file was last written. A writer we cannot judge (another
// pid namespace: the node agent in a pod without the host's pids; a name without a namespace, from an older
// hereabouts) keeps its file, and so does a live writer however long it stalls: its rename would fail otherwise.
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { earliestStartMs, namespaceInode, ownPidNamespace, procStat } from './proc.ts';
import { errnoOf } from './unsafe-file.ts';

export const TEMP_MARK = '.tmp-';
const TEMP_NAME = /^\..*\.tmp-(\d+)-(\d+|u)-[a-z0-9]+$/;

/** The unique end of a temp file's name: `<pid>-<pid namespace inode, or "u">-<random>`. */
export function tempSuffix(pid: number = process.pid): string {
  const ns = namespaceInode(ownPidNamespace()) ?? 'u';
  return `${pid}-${ns}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Removes abandoned temp files (and only those) directly in `dir`; returns the names removed. */
export function sweepStaleTemps(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw err;
  }
  const ownNs = namespaceInode(ownPidNamespace());
  const removed: string[] = [];
  for (const name of names) {
    const match = TEMP_NAME.exec(name);
    if (match === null) continue;
    const [, pidText, ns] = match as unknown as [string, string, string];
    const pid = Number(pidText);
    if (ownNs === undefined || ns !== ownNs || pid === process.pid) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (!st.isFile() || !writerGone(pid, st.mtimeMs)) continue;
      unlinkSync(path);
      removed.push(name);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err; // another sweeper was first
    }
  }
  return removed;
}

/** Whether process `pid` of our pid namespace, which wrote a file at `writtenMs`, is provably gone. */
function writerGone(pid: number, writtenMs: number): boolean {
  let stat;
  try {
    stat = procStat(pid);
  } catch {
    return false; // unreadable: cannot judge
  }
  if (stat === 'gone') return true;
  if (stat.state === 'Z' || stat.state === 'X') return true;
  // A process that started after the file's last write cannot have written it: the pid was reused.
  const started = earliestStartMs(stat.start);
  return started !== undefined && started > writtenMs;
}
