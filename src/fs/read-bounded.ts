// Bounded, non-blocking reads of small files (configs, kubeconfigs, tokens, pool files). A path a tenant may name
// must not make the plugin block on a FIFO, read /dev/zero until it runs out of memory, or follow a planted link:
// open O_NOFOLLOW|O_NONBLOCK, fstat the descriptor (a regular file, not larger than the cap), read at most cap+1
// bytes (the file may grow after the fstat).
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { errnoOf, reasonOf, sizeText, UnsafeFileError } from './unsafe-file.ts';

export const DEFAULT_MAX_BYTES = 1024 * 1024;

export interface ReadBoundedOptions {
  /** Refuse files larger than this (default 1 MiB). */
  readonly maxBytes?: number;
  /**
   * Follow a symbolic link in the last path component. Off by default; on only for files that an operator's tool
   * publishes through links (the projected service-account volume's `token -> ..data/token`).
   */
  readonly followLinks?: boolean;
}

/** The file's bytes; undefined when it does not exist. Anything else that is wrong is an UnsafeFileError. */
export function readBoundedIfPresent(path: string, options: ReadBoundedOptions = {}): Buffer | undefined {
  try {
    return readBounded(path, options);
  } catch (err) {
    if (err instanceof UnsafeFileError && err.code === 'ENOENT') return undefined;
    throw err;
  }
}

export function readBounded(path: string, options: ReadBoundedOptions = {}): Buffer {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (options.followLinks === true ? 0 : constants.O_NOFOLLOW);
  let fd: number;
  try {
    fd = openSync(path, flags);
  } catch (err) {
    const code = errnoOf(err);
    throw new UnsafeFileError(path, reasonOf(err), { cause: err, ...(code === undefined ? {} : { code }) });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UnsafeFileError(path, 'is not a regular file');
    if (st.size > maxBytes) throw new UnsafeFileError(path, `is larger than ${sizeText(maxBytes)}`);
    // Sized by the fstat (a large cap costs nothing for a small file); grows if the file grew meanwhile.
    let buf = Buffer.allocUnsafe(Math.min(maxBytes, st.size) + 1);
    let total = 0;
    for (;;) {
      if (total === buf.length) {
        const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, total);
        buf = bigger;
      }
      const n = readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw new UnsafeFileError(path, `is larger than ${sizeText(maxBytes)}`);
    }
    return buf.subarray(0, total);
  } catch (err) {
    if (err instanceof UnsafeFileError) throw err;
    const code = errnoOf(err);
    throw new UnsafeFileError(path, `cannot be read (${code ?? 'error'})`, {
      cause: err,
      ...(code === undefined ? {} : { code }),
    });
  } finally {
    closeSync(fd);
  }
}

/** The same as UTF-8 text. */
export function readBoundedText(path: string, options: ReadBoundedOptions = {}): string {
  return readBounded(path, options).toString('utf8');
}
