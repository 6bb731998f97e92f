// The flat file (whereabouts.conf): Whereabouts' node-wide defaults. Inline IPAM keys win; the flat file only
// fills keys left unset (the `kubernetes` object per sub-key). Unlike Whereabouts, a missing flat file is fine
// when the inline config is complete: `configuration_path`, when given, must exist. Reads are bounded
// (src/fs/read-bounded.ts) and errors never quote the file.
import { configError } from '../errors.ts';
import { readBoundedIfPresent } from '../fs/read-bounded.ts';
import { UnsafeFileError } from '../fs/unsafe-file.ts';
import { type Json } from './fields.ts';
import { isRecord } from '../record.ts';

export const FLAT_FILE_PATHS: readonly string[] = [
  '/etc/kubernetes/cni/net.d/hereabouts.d/hereabouts.conf',
  '/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf',
  '/etc/cni/net.d/hereabouts.d/hereabouts.conf',
  '/etc/cni/net.d/whereabouts.d/whereabouts.conf',
];

/** A flat file is a few hundred bytes; this is generous. */
export const MAX_FLAT_FILE_BYTES = 64 * 1024;

/** Returns the file's text, or undefined when it does not exist. Other read errors propagate. */
export type ReadFile = (path: string) => string | undefined;

export const readFileIfPresent: ReadFile = (path) =>
  readBoundedIfPresent(path, { maxBytes: MAX_FLAT_FILE_BYTES })?.toString('utf8');

export interface FlatFile {
  readonly path: string;
  readonly keys: Json;
}

/** The first flat file at the standard locations (the operator's, trusted), or undefined. */
export function loadStandardFlatFile(read: ReadFile): FlatFile | undefined {
  for (const path of FLAT_FILE_PATHS) {
    const file = decodeFlatFile(path, 'flat file', read);
    if (file !== undefined) return file;
  }
  return undefined;
}

/** The flat file named by `configuration_path` (already checked against the trust policy); it must exist. */
export function loadFlatFileAt(path: string, read: ReadFile): FlatFile {
  const file = decodeFlatFile(path, 'ipam.configuration_path', read);
  if (file === undefined) throw configError(`ipam.configuration_path ${JSON.stringify(path)} does not exist`);
  return file;
}

function decodeFlatFile(path: string, key: string, read: ReadFile): FlatFile | undefined {
  let text: string | undefined;
  try {
    text = read(path);
  } catch (err) {
    const why = err instanceof UnsafeFileError ? err.reason : 'cannot be read';
    throw configError(`${key} ${JSON.stringify(path)} ${why}`);
  }
  if (text === undefined) return undefined;
  let keys: unknown;
  try {
    keys = JSON.parse(text);
  } catch {
    // The parser's message quotes the text: never echo a file a tenant may have pointed us at.
    throw configError(`${key} ${JSON.stringify(path)} is not valid JSON`);
  }
  if (!isRecord(keys)) throw configError(`${key} ${JSON.stringify(path)} must hold a JSON object`);
  return { path, keys };
}

/** Inline keys win; the flat file fills what is unset. */
export function mergeFlat(inline: Json, flat: Json | undefined): Json {
  if (flat === undefined) return inline;
  const merged: Record<string, unknown> = { ...flat, ...inline };
  for (const [key, value] of Object.entries(inline)) if (value === undefined || value === null) merged[key] = flat[key];
  const inlineK8s = inline['kubernetes'];
  const flatK8s = flat['kubernetes'];
  if (isRecord(inlineK8s) && isRecord(flatK8s)) merged['kubernetes'] = { ...flatK8s, ...inlineK8s };
  return merged;
}
