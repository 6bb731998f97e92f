// The trust boundary (docs/security.md). The inline IPAM config comes from a NetworkAttachmentDefinition that any
// tenant allowed to create one may write, and the plugin runs as root: a key that names a host path is honoured from
// inline config only inside directories the node's operator allowed. The operator speaks through the flat file at
// its standard locations, the installer's flags and the plugin's environment, none of which a tenant can write.
import { lstatSync } from 'node:fs';
import { configError } from '../errors.ts';
import { describeValue } from '../log/quote.ts';
import type { Json } from './fields.ts';

/** What a path key is used for; each use has its own allowed directories. */
export type PathUse = 'config' | 'data' | 'log';

export interface TrustPolicy {
  /** Read: `configuration_path`, `kubernetes.kubeconfig`. */
  readonly config: readonly string[];
  /** Written (directories created, pool files replaced): `data_dir`, `cache_dir`. */
  readonly data: readonly string[];
  /** Appended to: `log_file`. */
  readonly log: readonly string[];
  /** Exec credential plugins and auth providers in a kubeconfig named inline (one from the flat file may always). */
  readonly execCredentials: boolean;
}

/** The installers' directories (ours and Whereabouts'), where the flat file and the kubeconfigs live. */
export const INSTALLER_DIRS: readonly string[] = [
  '/etc/cni/net.d/hereabouts.d',
  '/etc/cni/net.d/whereabouts.d',
  '/etc/kubernetes/cni/net.d/hereabouts.d',
  '/etc/kubernetes/cni/net.d/whereabouts.d',
];

export const DEFAULT_POLICY: TrustPolicy = {
  config: INSTALLER_DIRS,
  data: ['/var/lib/cni'],
  log: ['/var/log'],
  execCredentials: false,
};

/** Flat-file keys that set the policy: honoured only there, never inline. */
export const POLICY_KEYS = {
  config: 'allowed_config_dirs',
  data: 'allowed_data_dirs',
  log: 'allowed_log_dirs',
  execCredentials: 'allow_exec_credentials',
} as const;

/** Colon-separated directories added to every use (set by the runtime's environment, e.g. in tests). */
export const ALLOWED_DIRS_ENV = 'HEREABOUTS_ALLOWED_DIRS';

/** The policy from the trusted flat file's keys (each list replaces its default) and the environment. */
export function policyOf(flat: Json | undefined, env: Readonly<Record<string, string | undefined>>): TrustPolicy {
  const extra = (env[ALLOWED_DIRS_ENV] ?? '').split(':').filter((d) => d !== '');
  extra.forEach((dir) => absoluteDir(dir, ALLOWED_DIRS_ENV));
  const list = (use: PathUse): string[] => {
    const key = POLICY_KEYS[use];
    const value = flat?.[key];
    const base = value === undefined || value === null ? DEFAULT_POLICY[use] : dirList(value, `flat file ${key}`);
    return [...base, ...extra].map((d) => d.replace(/\/+$/, '') || '/');
  };
  const exec = flat?.[POLICY_KEYS.execCredentials];
  if (exec !== undefined && exec !== null && typeof exec !== 'boolean') {
    throw configError(`flat file ${POLICY_KEYS.execCredentials} must be true or false, got ${describeValue(exec)}`);
  }
  return { config: list('config'), data: list('data'), log: list('log'), execCredentials: exec === true };
}

/** Inline config may not set the policy. */
export function rejectInlinePolicy(inline: Json): void {
  for (const key of Object.values(POLICY_KEYS)) {
    if (inline[key] !== undefined) {
      throw configError(`ipam.${key} may only be set in the node's flat file, not in the network configuration`);
    }
  }
}

/**
 * An inline path key's value, checked against the policy: absolute, no "." or ".." components, no control
 * characters, strictly inside an allowed directory. Nothing is read or written before this passes.
 */
export function allowedPath(policy: TrustPolicy, use: PathUse, key: string, value: string): string {
  checkPathText(value, key);
  const dirs = policy[use];
  if (!dirs.some((dir) => value.startsWith(dir === '/' ? '/' : `${dir}/`) && value !== dir)) {
    throw configError(
      `${key} ${describeValue(value)} is outside the directories the node's operator allows for it (${dirs.join(', ')})`,
      `set ${POLICY_KEYS[use]} in the node's flat file to allow another directory`,
    );
  }
  noLinkBelow(dirs, key, value);
  return value;
}

/**
 * O_NOFOLLOW guards only the last component: a link in a directory component below the allowed directory would
 * lead outside it. lstat each existing component between the allowed directory and the file (metadata only).
 */
function noLinkBelow(dirs: readonly string[], key: string, value: string): void {
  const dir =
    dirs.filter((d) => value.startsWith(d === '/' ? '/' : `${d}/`)).sort((a, b) => b.length - a.length)[0] ?? '/';
  const parts = value
    .slice(dir.length)
    .split('/')
    .filter((p) => p !== '');
  let current = dir === '/' ? '' : dir;
  for (const part of parts.slice(0, -1)) {
    current = `${current}/${part}`;
    let st;
    try {
      st = lstatSync(current);
    } catch {
      return; // a missing component: nothing below it exists to follow (creating it is the store's job)
    }
    if (st.isSymbolicLink()) throw configError(`${key} ${describeValue(value)}: ${current} is a symbolic link`);
  }
}

/** Absolute, normalised, printable: what any path key (inline or not) must look like. */
export function checkPathText(value: string, key: string): void {
  if (!value.startsWith('/')) throw configError(`${key} ${describeValue(value)} must be an absolute path`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value))
    throw configError(`${key} ${describeValue(value)} contains a control character`);
  const parts = value.split('/').slice(1);
  if (parts.some((p, i) => p === '.' || p === '..' || (p === '' && i < parts.length - 1))) {
    throw configError(`${key} ${describeValue(value)} must be a normalised path (no ".", ".." or "//")`);
  }
  if (value.length > 4096) throw configError(`${key} is longer than 4096 characters`);
}

function dirList(value: unknown, key: string): string[] {
  if (!Array.isArray(value))
    throw configError(`${key} must be a list of absolute directories, got ${describeValue(value)}`);
  return value.map((dir: unknown, i) => {
    if (typeof dir !== 'string') throw configError(`${key}[${i}] must be a string, got ${describeValue(dir)}`);
    return absoluteDir(dir, `${key}[${i}]`);
  });
}

function absoluteDir(dir: string, key: string): string {
  checkPathText(dir, key);
  return dir;
}
