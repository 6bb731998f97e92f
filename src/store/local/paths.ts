// Where a pool lives under data_dir: `<data_dir>/<network>/<pool>.json`. Network and pool names come from
// configuration, so each is escaped into exactly one safe path component that cannot climb out of data_dir.
import { join, resolve } from 'node:path';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { ensureOwnDirTree } from '../../fs/safe-dir.ts';
import { sweepStaleTemps } from '../../fs/stale-temps.ts';
import { UnsafeFileError } from '../../fs/unsafe-file.ts';
import type { PoolRef } from '../store.ts';

export interface PoolPaths {
  readonly networkDir: string;
  /** The pool file (IPPool-spec JSON). */
  readonly data: string;
  /** The pool's lock file (lock.ts); a sibling, so the pool file need not exist to be locked. */
  readonly lock: string;
  /** Prefix of this pool's temporary files; starts with '.', which no escaped name does. */
  readonly tempPrefix: string;
}

/** Escaped components longer than this are shortened and suffixed with a hash (NAME_MAX is 255 bytes). */
export const MAX_COMPONENT = 160;
const KEEP_BEFORE_HASH = 96;
const SAFE_BYTE = /^[A-Za-z0-9_.-]$/;

/**
 * Injective, filesystem-safe: bytes outside [A-Za-z0-9_.-] and a leading '.' become %XX (so ".", ".." and hidden
 * names cannot occur, nor '/'). Over MAX_COMPONENT: a prefix, '~' (never produced by the escaping) and a SHA-256.
 */
export function escapeComponent(name: string): string {
  if (name === '') {
    throw new HereaboutsError(ErrorKind.Internal, 'local store: empty network or pool name');
  }
  let out = '';
  for (const byte of new TextEncoder().encode(name)) {
    const ch = String.fromCharCode(byte);
    const safe = SAFE_BYTE.test(ch) && !(out === '' && ch === '.');
    out += safe ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length <= MAX_COMPONENT) return out;
  // Loaded only for oversized names: the CNI hot path stays on node:fs and node:path.
  const { createHash } = process.getBuiltinModule('node:crypto');
  return `${out.slice(0, KEEP_BEFORE_HASH)}~${createHash('sha256').update(name, 'utf8').digest('hex')}`;
}

export function poolPaths(dataDir: string, pool: Pick<PoolRef, 'network' | 'name'>): PoolPaths {
  const networkDir = join(resolve(dataDir), escapeComponent(pool.network));
  const file = escapeComponent(pool.name);
  return {
    networkDir,
    data: join(networkDir, `${file}.json`),
    lock: join(networkDir, `${file}.json.lock`),
    tempPrefix: join(networkDir, `.${file}.json.tmp-`),
  };
}

/**
 * Makes `networkDir` ready for writing: data_dir and the network directory are created 0700 if missing, and each must
 * be a real directory (not a link) owned by this process's user and not writable by group or others; temp files of
 * killed writers are removed. Refusals are code 5 naming the directory and what is wrong with it.
 */
export function preparePoolDir(dataDir: string, networkDir: string): void {
  try {
    ensureOwnDirTree(dataDir, networkDir);
    sweepStaleTemps(networkDir);
  } catch (err) {
    if (!(err instanceof UnsafeFileError)) throw err;
    throw new HereaboutsError(ErrorKind.Io, `local store directory ${JSON.stringify(err.path)} ${err.reason}`, {
      details: "the store writes only into directories of its own (mode 0700, owned by the plugin's user, no links)",
      cause: err,
    });
  }
}
