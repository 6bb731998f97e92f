// The flat file (whereabouts.conf): Whereabouts' node-wide defaults. Inline IPAM keys win; the flat file only
// fills keys left unset (the `kubernetes` object per sub-key). Unlike Whereabouts, a missing flat file is fine
// when the inline config is complete: `configuration_path`, when given, must exist.
import { readFileSync } from 'node:fs';
import { configError } from '../cni/errors.ts';
import { isObject, type Json } from './fields.ts';

export const FLAT_FILE_PATHS: readonly string[] = [
  '/etc/kubernetes/cni/net.d/hereabouts.d/hereabouts.conf',
  '/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf',
  '/etc/cni/net.d/hereabouts.d/hereabouts.conf',
  '/etc/cni/net.d/whereabouts.d/whereabouts.conf',
];

/** Returns the file's text, or undefined when it does not exist. Other read errors propagate. */
export type ReadFile = (path: string) => string | undefined;

export const readFileIfPresent: ReadFile = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
};

export interface FlatFile {
  readonly path: string;
  readonly keys: Json;
}

/** Finds and decodes the flat file; `configurationPath` (inline) replaces the default search. */
export function loadFlatFile(configurationPath: string | undefined, read: ReadFile): FlatFile | undefined {
  const candidates = configurationPath === undefined ? FLAT_FILE_PATHS : [configurationPath];
  for (const path of candidates) {
    let text: string | undefined;
    try {
      text = read(path);
    } catch (err) {
      throw configError(`cannot read flat file ${path}: ${(err as Error).message}`);
    }
    if (text === undefined) continue;
    let keys: unknown;
    try {
      keys = JSON.parse(text);
    } catch (err) {
      throw configError(`flat file ${path} is not valid JSON: ${(err as Error).message}`);
    }
    if (!isObject(keys)) throw configError(`flat file ${path} must hold a JSON object`);
    return { path, keys };
  }
  if (configurationPath !== undefined) {
    throw configError(`ipam.configuration_path ${JSON.stringify(configurationPath)} does not exist`);
  }
  return undefined;
}

/** Inline keys win; the flat file fills what is unset. */
export function mergeFlat(inline: Json, flat: Json | undefined): Json {
  if (flat === undefined) return inline;
  const merged: Record<string, unknown> = { ...flat, ...inline };
  for (const [key, value] of Object.entries(inline)) if (value === undefined || value === null) merged[key] = flat[key];
  const inlineK8s = inline['kubernetes'];
  const flatK8s = flat['kubernetes'];
  if (isObject(inlineK8s) && isObject(flatK8s)) merged['kubernetes'] = { ...flatK8s, ...inlineK8s };
  return merged;
}
