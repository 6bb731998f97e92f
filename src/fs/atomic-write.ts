// Crash-safe replace of a file: write a temp file beside the target, fsync it, rename it over the target, fsync
// the directory. A crash leaves the old file or the new one, never a torn one (a stray temp file at worst; its name
// starts with '.', which readers skip, and the next writer of the directory sweeps it: stale-temps.ts).
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { tempSuffix } from './stale-temps.ts';

export interface AtomicWriteOptions {
  readonly mode: number;
  /** Temp file name prefix (full path); default: `.<name>.tmp-` beside the target. */
  readonly tempPrefix?: string;
  /** Runs after the data is durable and before the rename (e.g. a lock's last ownership check). */
  readonly beforeCommit?: () => void;
  /**
   * false: a cache whose loss costs only speed (the kubeconfig's resolved endpoint, a TLS session ticket) skips both
   * fsyncs; still never torn, since readers see the old file or the new one. Default true.
   */
  readonly durable?: boolean;
}

export function writeFileAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions): void {
  const prefix = options.tempPrefix ?? join(dirname(file), `.${basename(file)}.tmp-`);
  const temp = `${prefix}${tempSuffix()}`;
  let renamed = false;
  try {
    const fd = openSync(temp, 'wx', options.mode);
    try {
      fchmodSync(fd, options.mode); // the umask may have narrowed it; the mode is ours to state
      writeFileSync(fd, data);
      if (options.durable !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    options.beforeCommit?.();
    renameSync(temp, file);
    renamed = true;
    if (options.durable !== false) fsyncDir(dirname(file));
  } finally {
    if (!renamed) removeQuietly(temp);
  }
}

/** Makes a rename, link or unlink in `dir` durable (the directory entry itself is flushed). */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Secondary to the error being thrown (or the temp was never created).
  }
}
