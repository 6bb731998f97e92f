// The one error the src/fs primitives throw for a file or directory they refuse. It names the path and says what
// was wrong ("not a regular file", "larger than 1 MiB", "a symbolic link"), never what the file contains; callers
// add the config key and turn it into the error kind of their layer.
export class UnsafeFileError extends Error {
  readonly path: string;
  readonly reason: string;
  /** The errno code when the refusal came from a system call (ENOENT, EACCES, ELOOP...). */
  readonly code: string | undefined;
  constructor(path: string, reason: string, options: { code?: string; cause?: unknown } = {}) {
    super(`${path} ${reason}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UnsafeFileError';
    this.path = path;
    this.reason = reason;
    this.code = options.code;
  }
}

export function errnoOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code: unknown = err.code;
  return typeof code === 'string' ? code : undefined;
}

/** A system error as a short reason without Node's "ENOENT: ..., open '<path>'" decoration. */
export function reasonOf(err: unknown): string {
  switch (errnoOf(err)) {
    case 'ENOENT':
      return 'does not exist';
    case 'ENOTDIR':
      return 'has a component that is not a directory';
    case 'EACCES':
    case 'EPERM':
      return 'is not accessible (permission denied)';
    case 'ELOOP':
    case 'EMLINK':
      return 'is a symbolic link';
    case 'EISDIR':
      return 'is a directory';
    case 'ENXIO':
    case 'EWOULDBLOCK':
      return 'is not a regular file';
    case 'ENAMETOOLONG':
      return 'is too long a path';
    default:
      return `cannot be opened (${errnoOf(err) ?? 'error'})`;
  }
}

export function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes >= 1024 && bytes % 1024 === 0
      ? `${bytes / 1024} KiB`
      : `${bytes} bytes`;
}
