// The one type guard for a decoded JSON object: parse, don't cast.

/** A plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is a plain JSON object, else an empty one: for reading optional nested fields. */
export function recordOf(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
