// A protobuf writer for tests: enough to build the API server's list envelope and pod messages by hand, for the
// answers a real API server gives only by chance (a cut stream, odd fields, the zero time).

const varint = (n: number): number[] => {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
};

/** A varint field. */
export const int = (number: number, value: number): Uint8Array =>
  Uint8Array.from([...varint(number * 8), ...varint(value)]);

/** A length-delimited field: text (UTF-8) or the concatenated bytes of a message's fields. */
export function len(number: number, ...content: Array<Uint8Array | string>): Uint8Array {
  const body = join(content.map((c) => (typeof c === 'string' ? new TextEncoder().encode(c) : c)));
  return join([Uint8Array.from([...varint(number * 8 + 2), ...varint(body.length)]), body]);
}

export function join(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A list as the API server sends it: "k8s\0", runtime.Unknown{typeMeta, raw: {ListMeta{resourceVersion}, items}}. */
export function listEnvelope(resourceVersion: string, items: readonly Uint8Array[]): Uint8Array {
  const list = join([len(1, len(2, resourceVersion)), ...items.map((item) => len(2, item))]);
  return join([
    Uint8Array.from([0x6b, 0x38, 0x73, 0x00]),
    len(1, len(1, 'v1'), len(2, 'PodList')),
    len(2, list),
    len(3, ''),
    len(4, ''),
  ]);
}
