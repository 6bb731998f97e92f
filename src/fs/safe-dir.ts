// Directories the plugin and the installer write into must be theirs: not a symbolic link (a planted link would
// redirect the write), owned by this process's user, and not writable by group or others (someone else could plant
// one later). Checked with lstat on every component from the trusted root down, so nothing below the root is
// followed; the root's own ancestors belong to the operator.
import { chmodSync, lstatSync, mkdirSync, type Stats } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { errnoOf, reasonOf, UnsafeFileError } from './unsafe-file.ts';

export const PRIVATE_DIR_MODE = 0o700;

/** Throws UnsafeFileError unless `path` is a real directory owned by us and writable only by us. */
export function checkOwnDir(path: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = errnoOf(err);
    throw new UnsafeFileError(path, reasonOf(err), { cause: err, ...(code === undefined ? {} : { code }) });
  }
  judgeDir(path, st);
}

function judgeDir(path: string, st: Stats): void {
  if (st.isSymbolicLink()) throw new UnsafeFileError(path, 'is a symbolic link, not a directory');
  if (!st.isDirectory()) throw new UnsafeFileError(path, 'is not a directory');
  const euid = process.geteuid?.() ?? st.uid;
  if (st.uid !== euid) throw new UnsafeFileError(path, `is owned by uid ${st.uid}, not by this process (uid ${euid})`);
  if ((st.mode & 0o022) !== 0) {
    throw new UnsafeFileError(
      path,
      `is writable by group or others (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`,
    );
  }
}

/**
 * Creates `dir` (which must be `root` or below it) and checks every component from `root` down with checkOwnDir.
 * A missing root is created with its parents (mode 0700); components are created one at a time, never through a
 * link.
 */
export function ensureOwnDirTree(root: string, dir: string, mode: number = PRIVATE_DIR_MODE): void {
  const top = resolve(root);
  const target = resolve(dir);
  const rel = relative(top, target);
  if (rel.startsWith('..') || resolve(top, rel) !== target) {
    throw new UnsafeFileError(target, `is not inside ${top}`);
  }
  makeDir(top, mode, true);
  let current = top;
  for (const part of rel === '' ? [] : rel.split(sep)) {
    current = `${current}${current.endsWith(sep) ? '' : sep}${part}`;
    makeDir(current, mode, false);
  }
}

function makeDir(path: string, mode: number, withParents: boolean): void {
  try {
    const first = withParents ? mkdirSync(path, { mode, recursive: true }) : (mkdirSync(path, { mode }), path);
    // The umask may have narrowed the mode (0277 leaves 0500): the mode is ours to state, on what we created.
    for (let created = path; first !== undefined; created = dirname(created)) {
      chmodSync(created, mode);
      if (created === first || created === dirname(created)) break;
    }
  } catch (err) {
    if (errnoOf(err) !== 'EEXIST') {
      const code = errnoOf(err);
      throw new UnsafeFileError(path, `cannot be created: ${reasonOf(err)}`, {
        cause: err,
        ...(code === undefined ? {} : { code }),
      });
    }
  }
  checkOwnDir(path);
}
