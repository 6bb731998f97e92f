// The protobuf wire format, read only: enough to walk the messages the API server sends for built-in kinds
// (application/vnd.kubernetes.protobuf) and take a few fields, skipping the rest by their length.

/** Wire types: a varint, 8 bytes, a length-delimited field, 4 bytes (groups are not used by Kubernetes). */
export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const FIXED32 = 5;

/** Not protobuf, or cut short. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireError';
  }
}

const UTF8 = new TextDecoder('utf-8');

/** A varint at `at` (up to 2^53, what the API server's int64 fields hold): [value, next offset], or undefined if cut. */
export function varintAt(bytes: Uint8Array, at: number, end = bytes.length): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = at; i < end && i < at + 10; i++) {
    const b = bytes[i] ?? 0;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return [value, i + 1];
    scale *= 128;
  }
  if (end - at >= 10) throw new WireError(`a varint at byte ${at} runs past 10 bytes`);
  return undefined;
}

/**
 * The fields of the message in bytes[start, end), one at a time: `next()` moves to the next field and sets `number`,
 * `wire`, and either `value` (VARINT; negative int64s come out as huge numbers, which Kubernetes' fields read here
 * never are) or the span `start`..`end` of its bytes (LEN and fixed). One reader per message, no object per field.
 * Throws WireError on a malformed message.
 */
export class FieldReader {
  readonly bytes: Uint8Array;
  number = 0;
  wire = 0;
  value = 0;
  start = 0;
  end = 0;
  #at: number;
  readonly #end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.#at = start;
    this.#end = end;
  }

  next(): boolean {
    if (this.#at >= this.#end) return false;
    const tag = varintAt(this.bytes, this.#at, this.#end);
    if (tag === undefined) throw new WireError(`a field tag at byte ${this.#at} is cut short`);
    this.number = Math.floor(tag[0] / 8);
    this.wire = tag[0] % 8;
    const at = tag[1];
    if (this.wire === VARINT || this.wire === LEN) {
      const v = varintAt(this.bytes, at, this.#end);
      if (v === undefined) throw new WireError(`field ${this.number} is cut short`);
      if (this.wire === VARINT) {
        this.value = v[0];
        this.start = at;
        this.end = v[1];
      } else {
        if (v[1] + v[0] > this.#end) throw new WireError(`field ${this.number}'s bytes are cut short`);
        this.value = 0;
        this.start = v[1];
        this.end = v[1] + v[0];
      }
    } else if (this.wire === FIXED64 || this.wire === FIXED32) {
      const size = this.wire === FIXED64 ? 8 : 4;
      if (at + size > this.#end) throw new WireError(`field ${this.number}'s fixed value is cut short`);
      this.value = 0;
      this.start = at;
      this.end = at + size;
    } else {
      throw new WireError(`field ${this.number} has wire type ${this.wire}, which Kubernetes does not use`);
    }
    this.#at = this.end;
    return true;
  }

  /** A reader of this LEN field's bytes as a message. */
  message(): FieldReader {
    return new FieldReader(this.bytes, this.start, this.end);
  }

  /** This LEN field's bytes as UTF-8 text. */
  text(): string {
    return UTF8.decode(this.bytes.subarray(this.start, this.end));
  }
}
