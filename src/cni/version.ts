// CNI spec version negotiation. The result of a request is rendered in the version the runtime asked for,
// so that version must be one we can render; verbs newer than a version are refused for it, as libcni's
// skel does (code 1): CHECK from 0.4.0, GC and STATUS from 1.1.0.
import type { CniVerb } from './env.ts';
import { CniCode, CniError } from './errors.ts';
import { describeValue, quote } from '../log/quote.ts';

export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];
export const LATEST_VERSION: CniVersion = '1.1.0';

const minimumFor: Readonly<Partial<Record<CniVerb, CniVersion>>> = {
  CHECK: '0.4.0',
  GC: '1.1.0',
  STATUS: '1.1.0',
};

export function isSupportedVersion(value: unknown): value is CniVersion {
  return typeof value === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(value);
}

// Semantic version core, with an optional pre-release/build suffix (well-formed, though never supported).
const versionPattern = /^(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$/;

/** Orders two version strings by their numeric major.minor.patch. */
export function compareVersions(a: string, b: string): number {
  const pa = versionPattern.exec(a);
  const pb = versionPattern.exec(b);
  if (pa === null || pb === null) throw new TypeError(`cannot compare versions ${quote(a)} and ${quote(b)}`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * The version to speak for this request. `cniVersion` is authoritative when present (it is what the runtime
 * will parse our answer as); a `cniVersions` list is honoured when `cniVersion` is absent, by taking its
 * highest supported entry. Errors: code 6 when a version is not a string or not a version number, code 1
 * when it is unsupported, missing, or too old for the verb. VERSION never fails: it falls back to the latest.
 */
export function negotiate(conf: Readonly<Record<string, unknown>>, verb: CniVerb): CniVersion {
  if (verb === 'VERSION') return bestEffortVersion(conf);
  const requested = requestedVersion(conf);
  if (requested === undefined) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      `incompatible CNI version: cniVersion is missing (which means 0.1.0); supported versions are ${supportedList()}`,
    );
  }
  if (!isSupportedVersion(requested)) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      `incompatible CNI version ${quote(requested)}; supported versions are ${supportedList()}`,
    );
  }
  const minimum = minimumFor[verb];
  if (minimum !== undefined && compareVersions(requested, minimum) < 0) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      `${verb} needs cniVersion ${minimum} or later, the configuration has ${requested}`,
    );
  }
  return requested;
}

/** The negotiated version when there is one, else the latest; never throws (for VERSION and error JSON). */
export function bestEffortVersion(conf: unknown): CniVersion {
  if (typeof conf !== 'object' || conf === null || Array.isArray(conf)) return LATEST_VERSION;
  try {
    const requested = requestedVersion(conf as Record<string, unknown>);
    return isSupportedVersion(requested) ? requested : LATEST_VERSION;
  } catch (err) {
    if (err instanceof CniError) return LATEST_VERSION;
    throw err;
  }
}

export interface VersionInfo {
  readonly cniVersion: CniVersion;
  readonly supportedVersions: readonly CniVersion[];
}

/**
 * The VERSION answer. `request` is the decoded stdin object, if any: its (supported) cniVersion is echoed,
 * as the spec asks; without one the latest version is reported.
 */
export function versionInfo(request?: unknown): VersionInfo {
  return { cniVersion: bestEffortVersion(request), supportedVersions: [...SUPPORTED_VERSIONS] };
}

// The version the request asks for, or undefined when it names none. An empty cniVersion counts as
// absent, as in libcni's decoder.
function requestedVersion(conf: Readonly<Record<string, unknown>>): string | undefined {
  const single = conf['cniVersion'];
  if (single !== undefined && single !== '') return checkedVersion(single, 'cniVersion');
  const list = conf['cniVersions'];
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) {
    throw new CniError(
      CniCode.DecodeFailure,
      `cniVersions must be a list of version strings, got ${describeValue(list)}`,
    );
  }
  const versions = list.map((v, i) => checkedVersion(v, `cniVersions[${i}]`));
  if (versions.length === 0) return undefined;
  const supported = versions.filter(isSupportedVersion).sort(compareVersions);
  if (supported.length === 0) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      `incompatible CNI versions: none of cniVersions ${versions.map((v) => quote(v)).join(', ')} is ` +
        `supported; supported versions are ${supportedList()}`,
    );
  }
  return supported[supported.length - 1];
}

function checkedVersion(value: unknown, key: string): string {
  if (typeof value !== 'string') {
    throw new CniError(CniCode.DecodeFailure, `${key} must be a version string, got ${describeValue(value)}`);
  }
  if (!versionPattern.test(value)) {
    throw new CniError(CniCode.DecodeFailure, `${key} ${quote(value)} is not a version number (like 1.0.0)`);
  }
  return value;
}

function supportedList(): string {
  return SUPPORTED_VERSIONS.join(', ');
}
