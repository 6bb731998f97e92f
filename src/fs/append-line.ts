// Appending to a log file whose path an operator allowed: never through a link (O_NOFOLLOW), never into a FIFO or a
// device (O_NONBLOCK, then fstat), created 0600, and one write per line (O_APPEND keeps concurrent writers' lines
// whole).
import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs';
import { errnoOf, reasonOf, UnsafeFileError } from './unsafe-file.ts';

export const LOG_FILE_MODE = 0o600;

export function appendLine(path: string, line: string): void {
  const flags =
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let fd: number;
  try {
    fd = openSync(path, flags, LOG_FILE_MODE);
  } catch (err) {
    const code = errnoOf(err);
    throw new UnsafeFileError(path, reasonOf(err), { cause: err, ...(code === undefined ? {} : { code }) });
  }
  try {
    if (!fstatSync(fd).isFile()) throw new UnsafeFileError(path, 'is not a regular file');
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
}
