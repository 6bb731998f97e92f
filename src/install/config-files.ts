// Reads the pod's service account and brings the host's config files to the desired content: each file that is
// missing, different or not 0600 is replaced atomically (a CNI call never reads a torn kubeconfig). Comparing
// contents instead of remembering what was written also repairs a file another installer or a person overwrote.
// Hygiene (docs/security.md): the directories written into must be the installer's own (no links, not writable by
// others), every read is bounded and never blocks (a FIFO or a huge file where a file should be is replaced, not
// read), and temp files of a killed installer are swept.
import { lstatSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FLAT_FILE_PATHS } from '../config/flatfile.ts';
import { parseNetworkConfig } from '../config/parse.ts';
import { writeFileAtomic } from '../fs/atomic-write.ts';
import { readBounded, readBoundedIfPresent } from '../fs/read-bounded.ts';
import { ensureOwnDirTree } from '../fs/safe-dir.ts';
import { sweepStaleTemps } from '../fs/stale-temps.ts';
import { UnsafeFileError } from '../fs/unsafe-file.ts';
import { messageOf } from '../errors.ts';
import type { DesiredFile, ServiceAccount } from './host-files.ts';

const SECRET_MODE = 0o600;
/** Tokens, CAs and our own files are a few KiB. */
const MAX_FILE_BYTES = 1024 * 1024;

/** The projected service-account volume: token, ca.crt, namespace. Errors name the file. */
export function readServiceAccount(dir: string): ServiceAccount {
  const read = (name: string): Buffer => {
    try {
      // kubelet publishes the volume through links (token -> ..data/token): follow them, bounded all the same.
      return readBounded(join(dir, name), { maxBytes: MAX_FILE_BYTES, followLinks: true });
    } catch (err) {
      const why = err instanceof UnsafeFileError ? err.reason : messageOf(err);
      throw new Error(`cannot read the service account's ${join(dir, name)}: ${why}`, { cause: err });
    }
  };
  const token = read('token').toString('utf8').trim();
  const namespace = read('namespace').toString('utf8').trim();
  const ca = read('ca.crt');
  if (token === '') throw new Error(`the service account's ${join(dir, 'token')} is empty`);
  if (namespace === '') throw new Error(`the service account's ${join(dir, 'namespace')} is empty`);
  return { token, ca, namespace };
}

/**
 * Writes the files that differ from `files` (all under `root`, the CNI config dir); returns their paths. Each file's
 * directory below `root` is created and checked first (ensureOwnDirTree): a planted `hereabouts.d` link is refused.
 */
export function syncFiles(files: readonly DesiredFile[], root: string): string[] {
  const changed: string[] = [];
  const swept = new Set<string>();
  for (const file of files) {
    const dir = dirname(file.path);
    ensureOwnDirTree(root, dir);
    if (!swept.has(dir)) sweepStaleTemps(dir);
    swept.add(dir);
    if (current(file.path) === file.content) continue;
    writeFileAtomic(file.path, file.content, { mode: SECRET_MODE });
    changed.push(file.path);
  }
  return changed;
}

/**
 * The file's content when it is a regular file of ours with mode 0600; undefined otherwise, so that it gets replaced
 * (the rename replaces a link, a FIFO or an oversized file itself, without reading or following it).
 */
function current(path: string): string | undefined {
  try {
    const data = readBoundedIfPresent(path, { maxBytes: MAX_FILE_BYTES });
    if (data === undefined || (lstatSync(path).mode & 0o777) !== SECRET_MODE) return undefined;
    return data.toString('utf8');
  } catch (err) {
    if (err instanceof UnsafeFileError) return undefined;
    throw err;
  }
}

/**
 * Parses a request that leaves everything to the flat file, with the plugin's own parser: a bad log_level or
 * log_file fails the install, not every CNI call on the node.
 */
export function checkFlatConfig(flat: DesiredFile): void {
  // As the plugin finds it: at the first standard location (so its trust-policy keys are read as the operator's).
  const request = { cniVersion: '1.0.0', name: 'install-check', ipam: { type: 'hereabouts', range: '192.0.2.0/30' } };
  const at = FLAT_FILE_PATHS[0];
  parseNetworkConfig(request, {
    cniVersion: '1.0.0',
    env: {},
    readFile: (path) => (path === at ? flat.content : undefined),
  });
}
