// What the plugin prints. stdout carries exactly one JSON document and a newline, or nothing at all: the
// spec has ADD and VERSION print a result, DEL, CHECK, GC and STATUS print nothing on success, and every
// failure prints the error object {cniVersion, code, msg, details} and exits non-zero. Stack traces never
// reach stdout; they go to the caller's log callback.
import type { CniVerb } from './env.ts';
import { CniCode, CniError, cniCodeOf, detailsOf } from './errors.ts';
import { HereaboutsError } from '../errors.ts';
import { writeFd } from '../fs/fd-write.ts';
import { redact } from '../log/logger.ts';
import { describeValue } from '../log/quote.ts';
import { LATEST_VERSION, type CniVersion } from './version.ts';

export interface OutputOptions {
  /** Receives the whole document; default writes to process.stdout. */
  readonly write?: (text: string) => void;
  /** Receives diagnostics that must not reach stdout, such as stack traces; default drops them. */
  readonly log?: (msg: string) => void;
}

export interface ErrorJson {
  readonly cniVersion: CniVersion;
  readonly code: number;
  readonly msg: string;
  readonly details: string;
}

export const EXIT_SUCCESS = 0;
export const EXIT_FAILURE = 1;

/** Prints one JSON document; returns the exit code 0. */
export function writeResult(obj: object, options: OutputOptions = {}): number {
  (options.write ?? writeStdout)(`${JSON.stringify(obj)}\n`);
  return EXIT_SUCCESS;
}

/** Ends a successful verb: ADD and VERSION print their payload, the other verbs print nothing. */
export function writeSuccess(verb: 'ADD' | 'VERSION', payload: object, options?: OutputOptions): number;
export function writeSuccess(
  verb: 'DEL' | 'CHECK' | 'GC' | 'STATUS',
  payload?: undefined,
  options?: OutputOptions,
): number;
export function writeSuccess(verb: CniVerb, payload?: object, options: OutputOptions = {}): number {
  const prints = verb === 'ADD' || verb === 'VERSION';
  if (prints !== (payload !== undefined)) {
    throw new TypeError(`${verb} ${prints ? 'must print a result' : 'prints nothing on success'}`);
  }
  return payload === undefined ? EXIT_SUCCESS : writeResult(payload, options);
}

/**
 * Prints `err` as the CNI error object and returns the exit code 1. `cniVersion` is the negotiated version
 * when known (the latest otherwise).
 */
export function writeError(err: unknown, cniVersion?: CniVersion, options: OutputOptions = {}): number {
  if (options.log !== undefined) logDiagnostics(err, options.log);
  writeResult(errorJson(err, cniVersion), options);
  return EXIT_FAILURE;
}

/**
 * The error object for `err`: a CniError keeps its code, a HereaboutsError prints its kind's code (both keep msg and
 * details); an AggregateError whose members agree on one code keeps that code; anything else is code 999 with the error's message. Messages are
 * redacted like log lines, so a credential in an error never reaches the runtime's logs.
 */
export function errorJson(err: unknown, cniVersion: CniVersion = LATEST_VERSION): ErrorJson {
  const { code, msg, details } = describeError(err);
  return { cniVersion, code, msg: redact(msg), details: redact(details) };
}

function describeError(err: unknown): { code: number; msg: string; details: string } {
  if (err instanceof CniError || err instanceof HereaboutsError) {
    return { code: cniCodeOf(err), msg: messageOf(err), details: detailsOf(err) };
  }
  if (err instanceof AggregateError) {
    const inner: unknown[] = Array.isArray(err.errors) ? err.errors : [];
    const codes = new Set(inner.map(cniCodeOf));
    const [only] = codes;
    return {
      code: codes.size === 1 && only !== undefined ? only : CniCode.Internal,
      msg: err.message !== '' ? err.message : `${inner.length} errors`,
      details: inner.map((e) => describeError(e).msg).join('; '),
    };
  }
  if (err instanceof Error) return { code: CniCode.Internal, msg: messageOf(err), details: '' };
  if (typeof err === 'string') return { code: CniCode.Internal, msg: err, details: '' };
  return { code: CniCode.Internal, msg: `unexpected ${describeValue(err)} thrown`, details: '' };
}

function messageOf(err: Error): string {
  return err.message !== '' ? err.message : err.name;
}

// Stacks of unexpected errors (including the causes and members of expected ones) for the log only.
function logDiagnostics(err: unknown, log: (msg: string) => void): void {
  if (err instanceof AggregateError && Array.isArray(err.errors)) {
    for (const inner of err.errors) logDiagnostics(inner, log);
    return;
  }
  if (err instanceof CniError || err instanceof HereaboutsError) {
    if (err.cause !== undefined) logDiagnostics(err.cause, log);
    return;
  }
  if (err instanceof Error) log(err.stack ?? `${err.name}: ${err.message}`);
}

function writeStdout(text: string): void {
  writeFd(1, text);
}
