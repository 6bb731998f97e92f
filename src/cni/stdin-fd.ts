// Reading the request straight from file descriptor 0 with synchronous reads. process.stdin would build a
// net.Socket (and load node:net and the stream machinery) for a piped stdin: milliseconds on every pod start
// for a few hundred bytes. Runtimes hand the config over a pipe they close, so a blocking read is what we want.
import { fstatSync, readSync } from 'node:fs';
import { CniCode, CniError } from './errors.ts';
import { MAX_STDIN_BYTES } from './stdin.ts';

const CHUNK = 64 * 1024;
// Character devices that are terminals (tty, console/ptmx, pts): a person ran the binary by hand.
const TERMINAL_MAJORS: ReadonlySet<number> = new Set([4, 5, 136, 137, 138, 139, 140, 141, 142, 143]);

export interface ReadFdOptions {
  readonly fd?: number;
  readonly maxBytes?: number;
  /** For a non-blocking descriptor that never reaches end of input: give up after this long (code 5). */
  readonly timeoutMs?: number;
}

export function readStdinFd(options: ReadFdOptions = {}): Buffer {
  const fd = options.fd ?? 0;
  const maxBytes = options.maxBytes ?? MAX_STDIN_BYTES;
  if (isTerminalOrClosed(fd)) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  for (;;) {
    const buf = Buffer.allocUnsafe(CHUNK);
    let n: number;
    try {
      n = readSync(fd, buf, 0, CHUNK, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        if (deadline !== undefined && Date.now() >= deadline) {
          throw new CniError(CniCode.IoFailure, `stdin did not end within ${options.timeoutMs} ms`);
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // a non-blocking pipe: poll gently
        continue;
      }
      if (code === 'EOF') break;
      throw new CniError(CniCode.IoFailure, `error reading stdin: ${(err as Error).message}`, { cause: err });
    }
    if (n === 0) break;
    size += n;
    if (size > maxBytes) throw new CniError(CniCode.DecodeFailure, `stdin is larger than ${maxBytes} bytes`);
    chunks.push(buf.subarray(0, n));
  }
  return Buffer.concat(chunks, size);
}

function isTerminalOrClosed(fd: number): boolean {
  try {
    const st = fstatSync(fd);
    return st.isCharacterDevice() && TERMINAL_MAJORS.has(Math.floor(st.rdev / 256) & 0xfff);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EBADF') return true; // no stdin at all
    throw err;
  }
}
