// Private helpers of src/cni: put a caller-supplied value into an error message without letting a huge
// (or multi-line) input flood the CNI error JSON.
const defaultMax = 80;

/** JSON-quoted `text`, cut to `max` characters with a trailing "…" when longer. */
export function quote(text: string, max = defaultMax): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** A short description of a JSON value of the wrong type: `null`, `a list`, `an object`, `42`, `"text"`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'object':
      return 'an object';
    case 'string':
      return quote(value);
    case 'number':
    case 'boolean':
      return String(value);
    default:
      return typeof value;
  }
}
