// Writes to stdout/stderr with plain write(2): process.stdout would build a stream (and load node:stream,
// fs streams and readline) for a single line of JSON. Handles short writes and a non-blocking pipe.
import { writeSync } from 'node:fs';

export function writeFd(fd: number, text: string): void {
  let buf = Buffer.from(text, 'utf8');
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // the reader is slow: wait a moment
    }
  }
}
