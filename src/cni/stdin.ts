// The request on stdin: read it fully (bounded, never blocking on a terminal) and decode it into one JSON
// object. Decoding failures are CNI code 6; the message says what went wrong and where, and quotes at
// most a short excerpt of the input (stdin may be large, and it is configuration, not log material).
import type { Readable } from 'node:stream';
import { CniCode, CniError } from './errors.ts';
import { describeValue } from './quote.ts';

export const MAX_STDIN_BYTES = 1024 * 1024;

export interface ReadStdinOptions {
  /** Defaults to process.stdin. */
  readonly stream?: Readable & { readonly isTTY?: boolean };
  /** Larger input fails with code 6. Default MAX_STDIN_BYTES. */
  readonly maxBytes?: number;
  /**
   * Fail with code 5 when the input has not ended after this long (for VERSION, whose caller may hand
   * over a stdin it never closes). Default: wait for end of input.
   */
  readonly timeoutMs?: number;
}

/**
 * Reads stdin to its end. A terminal yields an empty buffer at once (a person ran the binary by hand);
 * a closed stdin is /dev/null to Node and ends immediately. Read errors are code 5, oversize input code 6.
 */
export function readStdin(options: ReadStdinOptions = {}): Promise<Buffer> {
  const stream = options.stream ?? process.stdin;
  const maxBytes = options.maxBytes ?? MAX_STDIN_BYTES;
  if (stream.isTTY === true) return Promise.resolve(Buffer.alloc(0));

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | undefined;

    const finish = (err: CniError | undefined): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      if (timer !== undefined) clearTimeout(timer);
      if (err === undefined) {
        resolve(Buffer.concat(chunks, size));
        return;
      }
      // Stop reading so that an endless producer cannot keep the process alive.
      stream.destroy();
      reject(err);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > maxBytes) {
        finish(new CniError(CniCode.DecodeFailure, `stdin is larger than ${maxBytes} bytes`));
        return;
      }
      chunks.push(buf);
    };
    const onEnd = (): void => finish(undefined);
    const onError = (err: Error): void =>
      finish(new CniError(CniCode.IoFailure, `error reading stdin: ${err.message}`, { cause: err }));

    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    if (options.timeoutMs !== undefined) {
      const ms = options.timeoutMs;
      timer = setTimeout(
        () => finish(new CniError(CniCode.IoFailure, `stdin did not end within ${ms} ms`)),
        ms,
      );
    }
  });
}

/** Decodes the request: one JSON object, optionally preceded by a UTF-8 byte order mark. */
export function decodeRequest(input: Buffer | string): Record<string, unknown> {
  let text = typeof input === 'string' ? input : input.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') {
    throw new CniError(CniCode.DecodeFailure, 'no network configuration on stdin (it is empty)');
  }

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    const position = /at position (\d+)/.exec(err.message)?.[1];
    throw new CniError(
      CniCode.DecodeFailure,
      `network configuration on stdin is not valid JSON: ${err.message}`,
      position === undefined ? {} : { details: `near ${excerpt(text, Number(position))}` },
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CniError(
      CniCode.DecodeFailure,
      `network configuration on stdin must be a JSON object, got ${describeValue(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

// At most 80 characters around the error position, so the quoted input stays short.
function excerpt(text: string, position: number): string {
  const start = Math.max(0, position - 40);
  const end = Math.min(text.length, position + 40);
  return `${start > 0 ? '…' : ''}${JSON.stringify(text.slice(start, end))}${end < text.length ? '…' : ''}`;
}
