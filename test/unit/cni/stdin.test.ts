import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PassThrough, Readable } from 'node:stream';
import { decodeRequest, readStdin } from '../../../src/cni/stdin.ts';
import { CniError } from '../../../src/cni/errors.ts';

function cniError(code: number, pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof CniError, `expected CniError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  };
}

test('decodeRequest() decodes a JSON object from a buffer', () => {
  assert.deepEqual(decodeRequest(Buffer.from('{"cniVersion":"1.0.0","name":"n"}')), {
    cniVersion: '1.0.0',
    name: 'n',
  });
});

test('decodeRequest() decodes a JSON object from a string', () => {
  assert.deepEqual(decodeRequest('{"a":1}'), { a: 1 });
});

test('decodeRequest() skips a UTF-8 byte order mark in a buffer', () => {
  const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
  assert.deepEqual(decodeRequest(bytes), { a: 1 });
});

test('decodeRequest() skips a byte order mark in a string', () => {
  assert.deepEqual(decodeRequest('\ufeff{"a":1}'), { a: 1 });
});

test('decodeRequest() accepts surrounding whitespace', () => {
  assert.deepEqual(decodeRequest('\n  {"a":1}\n'), { a: 1 });
});

test('decodeRequest() rejects empty stdin with code 6', () => {
  assert.throws(() => decodeRequest(Buffer.alloc(0)), cniError(6, /empty/));
});

test('decodeRequest() rejects whitespace-only stdin with code 6', () => {
  assert.throws(() => decodeRequest(' \n\t'), cniError(6, /empty/));
});

test('decodeRequest() rejects invalid JSON with code 6 and the position', () => {
  assert.throws(() => decodeRequest('{"a": 1,}'), cniError(6, /not valid JSON: .*position 8 \(line 1 column 9\)/));
});

test('decodeRequest() puts a short excerpt around the error position in details', () => {
  try {
    decodeRequest('{"a": 1,}');
    assert.fail('expected a CniError');
  } catch (err) {
    assert.ok(err instanceof CniError);
    assert.equal(err.details, 'near "{\\"a\\": 1,}"');
  }
});

test('decodeRequest() does not echo a huge input', () => {
  const huge = `{"name": "${'y'.repeat(100_000)}", x}`;
  try {
    decodeRequest(huge);
    assert.fail('expected a CniError');
  } catch (err) {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, 6);
    assert.ok(err.message.length < 200, err.message);
    assert.ok(err.details.length < 100, err.details);
  }
});

test('decodeRequest() reports truncated JSON with code 6', () => {
  assert.throws(() => decodeRequest('{"a": '), cniError(6, /not valid JSON/));
});

test('decodeRequest() reports trailing garbage with code 6', () => {
  assert.throws(() => decodeRequest('{"a":1} x'), cniError(6, /not valid JSON/));
});

for (const [text, what] of [
  ['[]', 'a list'],
  ['null', 'null'],
  ['42', '42'],
  ['"text"', '"text"'],
  ['true', 'true'],
] as const) {
  test(`decodeRequest() rejects ${text} with code 6 (not an object)`, () => {
    assert.throws(() => decodeRequest(text), cniError(6, new RegExp(`must be a JSON object, got ${what.replace(/[[\]]/g, '\\$&')}$`)));
  });
}

test('readStdin() reads a stream to its end', async () => {
  const stream = Readable.from([Buffer.from('{"a":'), Buffer.from('1}')]);
  assert.equal((await readStdin({ stream })).toString(), '{"a":1}');
});

test('readStdin() accepts string chunks', async () => {
  const stream = Readable.from(['ab', 'cd'], { objectMode: false });
  assert.equal((await readStdin({ stream })).toString(), 'abcd');
});

test('readStdin() returns an empty buffer for an empty stream', async () => {
  assert.equal((await readStdin({ stream: Readable.from([]) })).length, 0);
});

test('readStdin() returns at once for a terminal', async () => {
  const tty = Object.assign(new PassThrough(), { isTTY: true });
  assert.equal((await readStdin({ stream: tty })).length, 0);
});

test('readStdin() rejects input above maxBytes with code 6', async () => {
  const stream = Readable.from([Buffer.alloc(600), Buffer.alloc(600)]);
  await assert.rejects(readStdin({ stream, maxBytes: 1000 }), cniError(6, /larger than 1000 bytes/));
});

test('readStdin() accepts input of exactly maxBytes', async () => {
  const stream = Readable.from([Buffer.alloc(1000)]);
  assert.equal((await readStdin({ stream, maxBytes: 1000 })).length, 1000);
});

test('readStdin() turns a read error into code 5', async () => {
  const stream = new PassThrough();
  const pending = readStdin({ stream });
  stream.destroy(new Error('EIO: boom'));
  await assert.rejects(pending, cniError(5, /error reading stdin: EIO: boom/));
});

test('readStdin() gives up after timeoutMs with code 5 when the input never ends', async () => {
  const stream = new PassThrough();
  stream.write('{"cniVersion":');
  await assert.rejects(readStdin({ stream, timeoutMs: 20 }), cniError(5, /did not end within 20 ms/));
  assert.equal(stream.destroyed, true);
});

test('readStdin() does not hang on a closed stdin of a real process', () => {
  const stdinModule = fileURLToPath(new URL('../../../src/cni/stdin.ts', import.meta.url));
  const script = `import(${JSON.stringify(stdinModule)}).then(async (m) => { const b = await m.readStdin(); process.stdout.write(String(b.length)); });`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 10_000,
    encoding: 'utf8',
  });
  assert.equal(child.error, undefined);
  assert.equal(child.stderr, '');
  assert.equal(child.stdout, '0');
});

test('readStdin() reads a piped stdin of a real process', () => {
  const stdinModule = fileURLToPath(new URL('../../../src/cni/stdin.ts', import.meta.url));
  const script = `import(${JSON.stringify(stdinModule)}).then(async (m) => { const b = await m.readStdin(); process.stdout.write(JSON.stringify(m.decodeRequest(b))); });`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    input: '{"cniVersion":"1.1.0"}',
    timeout: 10_000,
    encoding: 'utf8',
  });
  assert.equal(child.stderr, '');
  assert.equal(child.stdout, '{"cniVersion":"1.1.0"}');
});
