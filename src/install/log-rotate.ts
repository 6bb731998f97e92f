// Size-based rotation of the plugin's log file: rename to <file>.1 (replacing the previous one). Safe under live
// writers: each plugin call opens the file O_APPEND for its lines, so a call that opened it before the rename finishes
// its lines in .1 and the next call creates a new file. Nothing is copied or truncated, so no line is lost or torn.
import { lstatSync, renameSync } from 'node:fs';
import { errnoOf } from '../fs/unsafe-file.ts';

/** Rotates `path` when it is a regular file larger than maxBytes; returns whether it did. */
export function rotateBySize(path: string, maxBytes: number): boolean {
  let size: number;
  try {
    const st = lstatSync(path);
    if (!st.isFile()) return false; // never rename what is not a plain file of ours (a link, a FIFO)
    size = st.size;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return false;
    throw err;
  }
  if (size <= maxBytes) return false;
  renameSync(path, `${path}.1`);
  return true;
}
