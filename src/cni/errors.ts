// The CNI edge's error vocabulary: the spec's codes, the error born here that carries one (a bad environment, an
// undecodable request, an unknown version), and the one mapping from the error kinds every other layer throws
// (src/errors.ts) to codes.
import { ErrorKind, HereaboutsError, type ErrorKindValue } from '../errors.ts';

export const CniCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IoFailure: 5,
  DecodeFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  /** Ours (100+): the range has no free address. */
  RangeExhausted: 100,
  /** Ours: a requested address is taken, excluded or outside every range. */
  RequestedAddressUnavailable: 101,
  /** Ours: CHECK found an address that is not (or no longer) allocated to this container. */
  CheckFailed: 102,
  /** Ours: an unexpected internal failure (the message says what). */
  Internal: 999,
} as const;

export type CniCodeValue = (typeof CniCode)[keyof typeof CniCode];

export class CniError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, msg: string, options: { details?: string; cause?: unknown } = {}) {
    super(msg, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CniError';
    this.code = code;
    this.details = options.details ?? '';
  }
}

/** Which code each kind prints as. A refusal of credentials is code 11: a starting API server answers 401/403
 * until its authenticators and authorizer are ready, exactly as it answers a missing RoleBinding. */
const KIND_CODES: Readonly<Record<ErrorKindValue, number>> = {
  [ErrorKind.IncompatibleVersion]: CniCode.IncompatibleVersion,
  [ErrorKind.UnsupportedField]: CniCode.UnsupportedField,
  [ErrorKind.UnknownContainer]: CniCode.UnknownContainer,
  [ErrorKind.InvalidEnvironment]: CniCode.InvalidEnvironment,
  [ErrorKind.Io]: CniCode.IoFailure,
  [ErrorKind.Decode]: CniCode.DecodeFailure,
  [ErrorKind.InvalidConfig]: CniCode.InvalidNetworkConfig,
  [ErrorKind.Unavailable]: CniCode.TryAgainLater,
  [ErrorKind.Conflict]: CniCode.TryAgainLater,
  [ErrorKind.Forbidden]: CniCode.TryAgainLater,
  [ErrorKind.NotReady]: CniCode.PluginNotAvailable,
  [ErrorKind.Exhausted]: CniCode.RangeExhausted,
  [ErrorKind.RequestedUnavailable]: CniCode.RequestedAddressUnavailable,
  [ErrorKind.CheckFailed]: CniCode.CheckFailed,
  [ErrorKind.Corrupt]: CniCode.Internal,
  [ErrorKind.Internal]: CniCode.Internal,
};

/** The CNI code `err` prints as: its own for a CniError, its kind's for a HereaboutsError, else 999. */
export function cniCodeOf(err: unknown): number {
  if (err instanceof CniError) return Number.isInteger(err.code) && err.code >= 0 ? err.code : CniCode.Internal;
  if (err instanceof HereaboutsError) return KIND_CODES[err.kind];
  return CniCode.Internal;
}

/** The operator's advice an error carries, if any. */
export function detailsOf(err: unknown): string {
  return err instanceof CniError || err instanceof HereaboutsError ? err.details : '';
}
