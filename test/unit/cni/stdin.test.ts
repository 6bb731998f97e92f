import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeRequest } from '../../../src/cni/stdin.ts';
import { readStdinFd } from '../../../src/cni/stdin-fd.ts';
import { CniError } from '../../../src/cni/errors.ts';
import { cniError } from '../../support/cni-error.ts';

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
    assert.throws(
      () => decodeRequest(text),
      cniError(6, new RegExp(`must be a JSON object, got ${what.replace(/[[\]]/g, '\\$&')}$`)),
    );
  });
}

test('readStdinFd() reads a file descriptor to its end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-stdin-'));
  const file = join(dir, 'req.json');
  writeFileSync(file, '{"a":1}');
  const fd = openSync(file, 'r');
  try {
    assert.equal(readStdinFd({ fd }).toString(), '{"a":1}');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true });
  }
});

test('readStdinFd() rejects input above maxBytes with code 6', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-stdin-'));
  const file = join(dir, 'big');
  writeFileSync(file, Buffer.alloc(1001));
  const fd = openSync(file, 'r');
  try {
    assert.throws(() => readStdinFd({ fd, maxBytes: 1000 }), cniError(6, /larger than 1000 bytes/));
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true });
  }
});

test('readStdinFd() treats a closed descriptor as empty input', () => {
  assert.equal(readStdinFd({ fd: 987 }).length, 0);
});

function runChild(input: string | undefined): { stdout: string; stderr: string } {
  const module = fileURLToPath(new URL('../../../src/cni/stdin-fd.ts', import.meta.url));
  const script = `import(${JSON.stringify(module)}).then((m) => process.stdout.write(String(m.readStdinFd().length)));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(input === undefined ? {} : { input }),
    timeout: 10_000,
    encoding: 'utf8',
  });
  assert.equal(child.error, undefined);
  return { stdout: child.stdout, stderr: child.stderr };
}

test('readStdinFd() does not hang on a closed stdin of a real process', () => {
  assert.deepEqual(runChild(undefined), { stdout: '0', stderr: '' });
});

test('readStdinFd() reads a piped stdin of a real process', () => {
  assert.deepEqual(runChild('{"cniVersion":"1.1.0"}'), { stdout: '22', stderr: '' });
});
