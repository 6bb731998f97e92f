// Temp files of writers that were killed between create and rename (atomic-write.ts names them
// `<prefix><pid>-<random>`). A file goes when its writer process is gone, or when it is older than any write could
// take (a recycled pid, or a writer in another pid namespace).
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoOf } from './unsafe-file.ts';

export const TEMP_MARK = '.tmp-';
const ABANDONED_AFTER_MS = 10 * 60 * 1000;
const TEMP_NAME = /^\..*\.tmp-(\d+)-[a-z0-9]+$/;

/** Removes abandoned temp files (and only those) directly in `dir`; returns the names removed. */
export function sweepStaleTemps(dir: string, now: number = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw err;
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = TEMP_NAME.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (!st.isFile()) continue;
      if (processAlive(Number(pid)) && now - st.mtimeMs < ABANDONED_AFTER_MS) continue;
      unlinkSync(path);
      removed.push(name);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err; // another sweeper was first
    }
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoOf(err) !== 'ESRCH';
  }
}
