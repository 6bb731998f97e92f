// The CNI_* environment of one invocation, validated per verb. Required variables follow the spec's
// "Required environment parameters" of each verb (SPEC 1.1, section 2); CNI_PATH is required only by GC,
// because an IPAM plugin never executes another plugin. (libcni's skel is stricter and requires CNI_PATH for
// every verb but VERSION; a runtime always sets it, so the difference only matters to hand-run tests.)
import { delimiter } from 'node:path';
import { parseCniArgs, type CniArgs } from './args.ts';
import { CniCode, CniError } from './errors.ts';
import { quote } from '../log/quote.ts';

export const CNI_VERBS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'] as const;
export type CniVerb = (typeof CNI_VERBS)[number];

interface AttachmentEnv {
  readonly containerId: string;
  readonly ifname: string;
  /** CNI_PATH split on the OS list separator, empty entries dropped; [] when unset. */
  readonly path: readonly string[];
  readonly args: CniArgs;
}

export interface AddEnv extends AttachmentEnv {
  readonly verb: 'ADD';
  readonly netns: string;
}

export interface CheckEnv extends AttachmentEnv {
  readonly verb: 'CHECK';
  readonly netns: string;
}

export interface DelEnv extends AttachmentEnv {
  readonly verb: 'DEL';
  /** DEL tolerates a netns that is gone or was never passed. */
  readonly netns?: string;
}

export interface GcEnv {
  readonly verb: 'GC';
  readonly path: readonly string[];
}

export interface StatusEnv {
  readonly verb: 'STATUS';
  readonly path: readonly string[];
}

export interface VersionEnv {
  readonly verb: 'VERSION';
}

export type CniEnv = AddEnv | CheckEnv | DelEnv | GcEnv | StatusEnv | VersionEnv;

export type EnvSource = Readonly<Record<string, string | undefined>>;

const requiredFor: Readonly<Record<CniVerb, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  GC: ['CNI_PATH'],
  STATUS: [],
  VERSION: [],
};

/**
 * Reads and validates the CNI_* variables. Missing, empty or malformed variables throw a CniError with
 * code 4 whose message names the variable (and the bad value). Variables a verb does not use are ignored.
 */
export function readCniEnv(env: EnvSource = process.env): CniEnv {
  const verb = parseVerb(env['CNI_COMMAND']);
  const missing = requiredFor[verb].filter((name) => (env[name] ?? '') === '');
  if (missing.length > 0) {
    const names = missing.join(', ');
    throw envError(`${names} ${missing.length > 1 ? 'are' : 'is'} required for ${verb}`);
  }
  switch (verb) {
    case 'VERSION':
      return { verb };
    case 'GC':
    case 'STATUS':
      return { verb, path: splitCniPath(env['CNI_PATH']) };
    case 'ADD':
    case 'CHECK':
    case 'DEL': {
      const attachment: AttachmentEnv = {
        containerId: validateContainerId(env['CNI_CONTAINERID'] ?? ''),
        ifname: validateIfname(env['CNI_IFNAME'] ?? ''),
        path: splitCniPath(env['CNI_PATH']),
        args: parseCniArgs(env['CNI_ARGS']),
      };
      const netns = env['CNI_NETNS'] ?? '';
      if (verb === 'DEL') return netns === '' ? { verb, ...attachment } : { verb, ...attachment, netns };
      return { verb, ...attachment, netns };
    }
  }
}

function parseVerb(value: string | undefined): CniVerb {
  if (value === undefined || value === '') throw envError('CNI_COMMAND is required');
  if (!(CNI_VERBS as readonly string[]).includes(value)) {
    throw envError(`CNI_COMMAND ${quote(value)} is not one of ${CNI_VERBS.join(', ')}`);
  }
  return value as CniVerb;
}

// The spec's container ID: a letter or digit, then letters, digits, '_', '.' or '-'.
const containerIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Returns the container ID, or throws a code-4 CniError naming CNI_CONTAINERID and the value. An empty one never gets
 * here from readCniEnv ("CNI_CONTAINERID is required for ADD"); called directly, it fails the pattern like any other.
 */
export function validateContainerId(id: string): string {
  if (!containerIdPattern.test(id)) {
    throw envError(
      `CNI_CONTAINERID ${quote(id)} is invalid: it must start with a letter or digit and contain only ` +
        `letters, digits, '_', '.' and '-'`,
    );
  }
  return id;
}

// Linux IFNAMSIZ is 16 bytes including the terminating NUL.
const maxIfnameBytes = 15;

/** Returns the interface name, or throws a code-4 CniError naming CNI_IFNAME and the value. */
export function validateIfname(name: string): string {
  if (name === '') throw envError('CNI_IFNAME is empty');
  if (Buffer.byteLength(name, 'utf8') > maxIfnameBytes) {
    throw envError(`CNI_IFNAME ${quote(name)} is longer than ${maxIfnameBytes} bytes`);
  }
  if (name === '.' || name === '..') throw envError(`CNI_IFNAME ${quote(name)} is not a valid interface name`);
  if (/[/:\s]/.test(name)) {
    throw envError(`CNI_IFNAME ${quote(name)} must not contain '/', ':' or whitespace`);
  }
  return name;
}

export function splitCniPath(value: string | undefined): string[] {
  return (value ?? '').split(delimiter).filter((dir) => dir !== '');
}

function envError(msg: string): CniError {
  return new CniError(CniCode.InvalidEnvironment, msg);
}
