// The one error class callers handle: it carries the CNI spec code that ends up in the error JSON.
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

export function configError(msg: string, details?: string): CniError {
  return new CniError(CniCode.InvalidNetworkConfig, msg, details === undefined ? {} : { details });
}
