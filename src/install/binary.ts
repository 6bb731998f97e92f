// The plugin executable in the host's CNI bin dir. Copied to a temp file beside the target, made executable, fsynced,
// then renamed over it: kubelet never execs a half-written plugin, and a copy that is running at that moment keeps
// its old inode (writing in place would fail with ETXTBSY).
import {
  closeSync,
  constants,
  copyFileSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fsyncDir } from '../fs/atomic-write.ts';
import { errnoOf } from '../fs/unsafe-file.ts';

/** What was installed, to notice a target that was removed or replaced since. */
export interface InstalledBinary {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

export function installBinary(source: string, target: string): InstalledBinary {
  const temp = tempBeside(target);
  try {
    copyFileSync(source, temp, constants.COPYFILE_EXCL);
    const fd = openSync(temp, 'r');
    try {
      fchmodSync(fd, 0o755);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  } catch (err) {
    removeTemp(temp, err);
    throw err;
  }
  fsyncDir(dirname(target));
  return stampOf(target);
}

/**
 * A second name for an installed binary (`whereabouts` beside `hereabouts`): a hard link, not another 100 MB copy,
 * made under a temp name and renamed over the alias like a copy. Where links are refused (another filesystem), a copy.
 */
export function linkBinary(primary: string, alias: string): InstalledBinary {
  const temp = tempBeside(alias);
  try {
    linkSync(primary, temp);
  } catch (err) {
    if (errnoOf(err) === 'EXDEV' || errnoOf(err) === 'EPERM') return installBinary(primary, alias);
    throw err;
  }
  try {
    renameSync(temp, alias);
  } catch (err) {
    removeTemp(temp, err);
    throw err;
  }
  fsyncDir(dirname(alias));
  return stampOf(alias);
}

/** Temp files of a copy older than this are a killed installer's; younger ones may be a concurrent installer's. */
export const STALE_TEMP_MS = 5 * 60_000;

/**
 * Removes `.<name>.tmp-<pid>-<suffix>` files that a killed copy of `names` left in `dir` (100 MB each) when older than
 * `STALE_TEMP_MS`: during a rolling update two installers share the dir, and a fresh temp file is the other one's.
 */
export function sweepTemps(dir: string, names: readonly string[], nowMs: number): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (!names.some((name) => new RegExp(`^\\.${name}\\.tmp-\\d+-[a-z0-9]+$`).test(entry))) continue;
    const path = join(dir, entry);
    try {
      if (nowMs - statSync(path).mtimeMs < STALE_TEMP_MS) continue;
      unlinkSync(path);
      removed.push(path);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err; // gone meanwhile: renamed by its writer or swept by another
    }
  }
  return removed;
}

function tempBeside(target: string): string {
  return join(dirname(target), `.${basename(target)}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
}

/** True when the target is gone or is no longer the file this process installed. */
export function binaryChanged(installed: InstalledBinary): boolean {
  let now: InstalledBinary;
  try {
    now = stampOf(installed.path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return true;
    throw err;
  }
  return (
    now.dev !== installed.dev ||
    now.ino !== installed.ino ||
    now.size !== installed.size ||
    now.mtimeMs !== installed.mtimeMs
  );
}

function stampOf(path: string): InstalledBinary {
  const st = statSync(path);
  return { path, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

/** Removes what a failed copy left; ENOENT means the copy failed before creating it. */
function removeTemp(temp: string, cause: unknown): void {
  try {
    unlinkSync(temp);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT')
      throw new AggregateError([cause, err], `cannot install ${temp}, nor remove it`, { cause: err });
  }
}
