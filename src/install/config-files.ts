// Reads the pod's service account and brings the host's config files to the desired content: each file that is
// missing, different or not 0600 is replaced atomically (a CNI call never reads a torn kubeconfig). Comparing
// contents instead of remembering what was written also repairs a file another installer or a person overwrote.
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseNetworkConfig } from '../config/parse.ts';
import { errorCode, messageOf } from '../store/local/fs-errors.ts';
import { writeFileAtomic } from '../store/local/atomic-write.ts';
import type { DesiredFile, ServiceAccount } from './host-files.ts';

const SECRET_MODE = 0o600;

/** The projected service-account volume: token, ca.crt, namespace. Errors name the file. */
export function readServiceAccount(dir: string): ServiceAccount {
  const read = (name: string): Buffer => {
    try {
      return readFileSync(join(dir, name));
    } catch (err) {
      throw new Error(`cannot read the service account's ${join(dir, name)}: ${messageOf(err)}`, { cause: err });
    }
  };
  const token = read('token').toString('utf8').trim();
  const namespace = read('namespace').toString('utf8').trim();
  const ca = read('ca.crt');
  if (token === '') throw new Error(`the service account's ${join(dir, 'token')} is empty`);
  if (namespace === '') throw new Error(`the service account's ${join(dir, 'namespace')} is empty`);
  return { token, ca, namespace };
}

/** Writes the files that differ from `files`; returns their paths. */
export function syncFiles(files: readonly DesiredFile[]): string[] {
  const changed: string[] = [];
  for (const file of files) {
    if (current(file.path) === file.content) continue;
    mkdirSync(dirname(file.path), { recursive: true, mode: 0o700 });
    writeFileAtomic(file.path, file.content, { mode: SECRET_MODE });
    changed.push(file.path);
  }
  return changed;
}

/** The file's content when it exists with mode 0600; undefined otherwise (so it gets rewritten). */
function current(path: string): string | undefined {
  try {
    if ((statSync(path).mode & 0o777) !== SECRET_MODE) return undefined;
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Parses a request that leaves everything to the flat file, with the plugin's own parser: a bad log_level or
 * log_file fails the install, not every CNI call on the node.
 */
export function checkFlatConfig(flat: DesiredFile): void {
  const request = { cniVersion: '1.0.0', name: 'install-check', ipam: { type: 'hereabouts', range: '192.0.2.0/30', configuration_path: flat.path } };
  parseNetworkConfig(request, { cniVersion: '1.0.0', readFile: (path) => (path === flat.path ? flat.content : undefined) });
}
