// The streamed protobuf list (protobuf-list.ts) and the wire reader under it, on lists built by hand: every way the
// bytes can be cut into chunks, items bigger than the chunks, and bodies that are cut short or are not a list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ListDecoder, statusMessage } from '../../../src/kube/protobuf-list.ts';
import { FieldReader, LEN, VARINT, WireError } from '../../../src/kube/protobuf-wire.ts';
import { int, join, len, listEnvelope } from '../../support/protobuf.ts';

const item = (name: string, pad = 0): Uint8Array => len(1, len(1, name), len(17, 'x'.repeat(pad)));
const nameOf = (bytes: Uint8Array): string => {
  for (const f = new FieldReader(bytes); f.next();)
    if (f.number === 1) for (const m = f.message(); m.next();) if (m.number === 1) return m.text();
  return '?';
};

function decode(body: Uint8Array, chunk: number): { names: string[]; rv: string } {
  const names: string[] = [];
  const decoder = new ListDecoder((bytes) => names.push(nameOf(bytes)));
  for (let at = 0; at < body.length; at += chunk) decoder.push(body.subarray(at, at + chunk));
  decoder.end();
  return { names, rv: decoder.resourceVersion };
}

test('every item is handed over, in order, however the body is cut into chunks', () => {
  const body = listEnvelope(
    '4711',
    ['a', 'b', 'c', 'dé'].map((n, i) => item(n, i * 40)),
  );
  for (let chunk = 1; chunk <= body.length; chunk++)
    assert.deepEqual(decode(body, chunk), { names: ['a', 'b', 'c', 'dé'], rv: '4711' }, `chunks of ${chunk}`);
});

test('an empty list, and an item far bigger than the chunks (300 KB in 1 KB chunks)', () => {
  assert.deepEqual(decode(listEnvelope('9', []), 3), { names: [], rv: '9' });
  const big = listEnvelope('10', [item('small'), item('big', 300_000), item('after')]);
  assert.deepEqual(decode(big, 1024), { names: ['small', 'big', 'after'], rv: '10' });
});

test('a body cut anywhere is an error at its end, never a shorter list', () => {
  const body = listEnvelope('5', [item('a', 10), item('b', 10)]);
  for (let cut = 0; cut < body.length - 4; cut++) {
    // The envelope's trailing empty fields (contentEncoding, contentType) are 4 bytes: any earlier cut loses data.
    assert.throws(() => decode(body.subarray(0, cut), 7), WireError, `cut at ${cut}`);
  }
});

test('a body that is not a Kubernetes protobuf message is refused', () => {
  assert.throws(() => decode(new TextEncoder().encode('{"kind":"PodList"}'), 64), /not a Kubernetes protobuf/);
  const bad = join([Uint8Array.from([0x6b, 0x38, 0x73, 0x00]), len(2, Uint8Array.from([0x0b]))]); // wire type 3
  assert.throws(() => decode(bad, 64), WireError);
});

test('the field reader: varints up to 2^53, lengths, and messages that run past their end', () => {
  const bytes = join([int(1, 2 ** 53 - 1), len(2, 'hi'), int(3, 0)]);
  const seen: Array<[number, number, number | string]> = [];
  for (const f = new FieldReader(bytes); f.next();) seen.push([f.number, f.wire, f.wire === LEN ? f.text() : f.value]);
  assert.deepEqual(seen, [
    [1, VARINT, 2 ** 53 - 1],
    [2, LEN, 'hi'],
    [3, VARINT, 0],
  ]);
  const cut = len(2, 'hello').subarray(0, 4);
  assert.throws(() => new FieldReader(cut).next(), /cut short/);
});

test('an error answer names its reason and message, in protobuf or JSON', () => {
  const status = join([
    Uint8Array.from([0x6b, 0x38, 0x73, 0x00]),
    len(2, len(2, 'Failure'), len(3, 'pods is forbidden'), len(4, 'Forbidden'), int(6, 403)),
  ]);
  assert.equal(statusMessage(403, status), '403 Forbidden: pods is forbidden');
  const json = new TextEncoder().encode('{"kind":"Status","reason":"Expired","message":"too old"}');
  assert.equal(statusMessage(410, json), '410 Expired: too old');
  assert.equal(statusMessage(502, new TextEncoder().encode('<html>bad gateway')), '502 <html>bad gateway');
});
