// What went wrong, by meaning, for every layer to throw. Nothing here knows a CNI code or an Event reason: the CNI
// edge (src/cni/codes.ts) maps kinds to the spec's codes, the controller maps them to Events and conditions.

export const ErrorKind = {
  /** The runtime asked for a spec version this plugin does not speak. */
  IncompatibleVersion: 'incompatible-version',
  UnsupportedField: 'unsupported-field',
  UnknownContainer: 'unknown-container',
  /** The CNI_* environment is missing or malformed. */
  InvalidEnvironment: 'invalid-environment',
  /** A local file or directory could not be read or written. */
  Io: 'io',
  /** The request could not be decoded. */
  Decode: 'decode',
  /** The IPAM config (inline, flat file, kubeconfig) is wrong; the message names the key and the value. */
  InvalidConfig: 'invalid-config',
  /** The store cannot answer now (API unreachable, a lock held too long, no slice yet): a retry may pass. */
  Unavailable: 'unavailable',
  /** Other writers kept changing the same object until the deadline: a retry may pass. */
  Conflict: 'conflict',
  /** The API server refused the credentials or the permission (also what a starting API server answers). */
  Forbidden: 'forbidden',
  /** The store cannot serve any ADD at all (STATUS). */
  NotReady: 'not-ready',
  /** The range has no free address. */
  Exhausted: 'exhausted',
  /** A requested address is taken, excluded or outside every range. */
  RequestedUnavailable: 'requested-unavailable',
  /** CHECK found an address that is not (or no longer) allocated to this container. */
  CheckFailed: 'check-failed',
  /** An object read from the API server cannot be trusted (wrong range, malformed allocations). */
  Corrupt: 'corrupt',
  /** A broken invariant of our own: the message says which. */
  Internal: 'internal',
} as const;

export type ErrorKindValue = (typeof ErrorKind)[keyof typeof ErrorKind];

/** The one error class callers handle below the edges: a kind, a message naming the value, and advice. */
export class HereaboutsError extends Error {
  readonly kind: ErrorKindValue;
  /** What to do about it, for the operator (CNI `details`, an Event's note). */
  readonly details: string;
  constructor(kind: ErrorKindValue, msg: string, options: { details?: string; cause?: unknown } = {}) {
    super(msg, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HereaboutsError';
    this.kind = kind;
    this.details = options.details ?? '';
  }
}

export function configError(msg: string, details?: string): HereaboutsError {
  return new HereaboutsError(ErrorKind.InvalidConfig, msg, details === undefined ? {} : { details });
}

export function isKind(err: unknown, kind: ErrorKindValue): err is HereaboutsError {
  return err instanceof HereaboutsError && err.kind === kind;
}

/** The message of anything thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
