// The request on stdin (read by stdin-fd.ts), decoded into one JSON
// object. Decoding failures are CNI code 6; the message says what went wrong and where, and quotes at
// most a short excerpt of the input (stdin may be large, and it is configuration, not log material).
import { CniCode, CniError } from './errors.ts';
import { describeValue } from '../log/quote.ts';

export const MAX_STDIN_BYTES = 1024 * 1024;

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
