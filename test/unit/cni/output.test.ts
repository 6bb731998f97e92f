import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { errorJson, writeError, writeResult, writeSuccess, type OutputOptions } from '../../../src/cni/output.ts';
import { CniCode, CniError } from '../../../src/cni/errors.ts';

function capture(): { out: string[]; logs: string[]; options: OutputOptions } {
  const out: string[] = [];
  const logs: string[] = [];
  return { out, logs, options: { write: (t) => out.push(t), log: (m) => logs.push(m) } };
}

test('writeResult() writes one JSON document and a newline, and returns 0', () => {
  const { out, options } = capture();
  assert.equal(writeResult({ cniVersion: '1.1.0', ips: [] }, options), 0);
  assert.deepEqual(out, ['{"cniVersion":"1.1.0","ips":[]}\n']);
});

test('writeError() keeps a CniError code, msg and details, and returns 1', () => {
  const { out, options } = capture();
  const code = writeError(new CniError(7, 'range "x" is not a CIDR', { details: 'ipam.range' }), '1.0.0', options);
  assert.equal(code, 1);
  assert.deepEqual(out, [
    '{"cniVersion":"1.0.0","code":7,"msg":"range \\"x\\" is not a CIDR","details":"ipam.range"}\n',
  ]);
});

test('writeError() uses cniVersion 1.1.0 when the version is not known', () => {
  const { out, options } = capture();
  writeError(new CniError(4, 'CNI_COMMAND is required'), undefined, options);
  assert.equal((JSON.parse(out[0] ?? '') as { cniVersion: unknown }).cniVersion, '1.1.0');
});

test('writeError() prints an empty details string when there are none', () => {
  assert.equal(errorJson(new CniError(6, 'bad')).details, '');
});

test('writeError() turns a plain Error into code 999 with its message', () => {
  const { out, options } = capture();
  writeError(new Error('socket hang up'), '0.4.0', options);
  assert.deepEqual(JSON.parse(out[0] ?? ''), { cniVersion: '0.4.0', code: 999, msg: 'socket hang up', details: '' });
});

test('writeError() never puts a stack trace on stdout', () => {
  const { out, options } = capture();
  const err = new TypeError('cannot read properties of undefined');
  writeError(err, '1.1.0', options);
  assert.equal(out.length, 1);
  assert.ok(!out[0]?.includes('    at '), out[0]);
  assert.ok(!out[0]?.includes('output.test.ts'), out[0]);
});

test('writeError() hands the stack of an unexpected error to the log callback', () => {
  const { logs, options } = capture();
  const err = new RangeError('boom');
  writeError(err, '1.1.0', options);
  assert.equal(logs.length, 1);
  assert.match(logs[0] ?? '', /RangeError: boom\n\s+at /);
});

test('writeError() logs nothing for a CniError without a cause', () => {
  const { logs, options } = capture();
  writeError(new CniError(11, 'API server unreachable'), '1.1.0', options);
  assert.deepEqual(logs, []);
});

test('writeError() logs the stack of a CniError cause', () => {
  const { logs, options } = capture();
  writeError(new CniError(11, 'API server unreachable', { cause: new Error('ECONNREFUSED') }), '1.1.0', options);
  assert.equal(logs.length, 1);
  assert.match(logs[0] ?? '', /Error: ECONNREFUSED\n\s+at /);
});

test('writeError() without a log callback drops the stack', () => {
  const out: string[] = [];
  writeError(new Error('boom'), '1.1.0', { write: (t) => out.push(t) });
  assert.equal(out.length, 1);
});

test('writeError() output is exactly one line', () => {
  const { out, options } = capture();
  writeError(new CniError(7, 'line one\nline two'), '1.1.0', options);
  assert.equal(out.join('').split('\n').length, 2);
  assert.ok(out.join('').endsWith('\n'));
});

test('errorJson() keys come in the order cniVersion, code, msg, details', () => {
  assert.deepEqual(Object.keys(errorJson(new CniError(1, 'x'))), ['cniVersion', 'code', 'msg', 'details']);
});

test('errorJson() of a thrown string is code 999 with that string', () => {
  assert.deepEqual(errorJson('something odd', '1.0.0'), {
    cniVersion: '1.0.0',
    code: 999,
    msg: 'something odd',
    details: '',
  });
});

test('errorJson() of a thrown non-error value is code 999 describing it', () => {
  assert.equal(errorJson({ a: 1 }).msg, 'unexpected an object thrown');
  assert.equal(errorJson(undefined).code, CniCode.Internal);
});

test('errorJson() of an Error with an empty message uses its name', () => {
  assert.equal(errorJson(new TypeError('')).msg, 'TypeError');
});

test('errorJson() of a CniError with an invalid code falls back to 999', () => {
  assert.equal(errorJson(new CniError(-3, 'x')).code, 999);
});

test('errorJson() of an AggregateError of CniErrors with one code keeps that code', () => {
  const err = new AggregateError(
    [new CniError(11, 'pool a: conflict'), new CniError(11, 'pool b: timeout')],
    'DEL failed',
  );
  assert.deepEqual(errorJson(err, '1.0.0'), {
    cniVersion: '1.0.0',
    code: 11,
    msg: 'DEL failed',
    details: 'pool a: conflict; pool b: timeout',
  });
});

test('errorJson() of an AggregateError with mixed codes is code 999', () => {
  const err = new AggregateError([new CniError(11, 'a'), new Error('b')], 'DEL failed');
  assert.equal(errorJson(err).code, 999);
  assert.equal(errorJson(err).details, 'a; b');
});

test('errorJson() of an empty-message AggregateError counts its errors', () => {
  assert.equal(errorJson(new AggregateError([new Error('a'), new Error('b')])).msg, '2 errors');
});

test('writeError() logs the stacks of plain errors inside an AggregateError', () => {
  const { logs, options } = capture();
  writeError(new AggregateError([new CniError(11, 'a'), new Error('b')], 'x'), '1.1.0', options);
  assert.equal(logs.length, 1);
  assert.match(logs[0] ?? '', /^Error: b/);
});

test('errorJson() masks credentials in msg and details', () => {
  const json = errorJson(
    new CniError(11, 'request failed: Authorization: Bearer abc.def', { details: 'token: s3cr3t' }),
  );
  assert.ok(!json.msg.includes('abc.def'), json.msg);
  assert.ok(!json.details.includes('s3cr3t'), json.details);
});

test('writeSuccess() prints the ADD result', () => {
  const { out, options } = capture();
  assert.equal(writeSuccess('ADD', { cniVersion: '1.0.0', ips: [] }, options), 0);
  assert.deepEqual(out, ['{"cniVersion":"1.0.0","ips":[]}\n']);
});

test('writeSuccess() prints the VERSION answer', () => {
  const { out, options } = capture();
  writeSuccess('VERSION', { cniVersion: '1.1.0', supportedVersions: ['1.1.0'] }, options);
  assert.equal(out.length, 1);
});

for (const verb of ['DEL', 'CHECK', 'GC', 'STATUS'] as const) {
  test(`writeSuccess() prints nothing for ${verb} and returns 0`, () => {
    const { out, options } = capture();
    assert.equal(writeSuccess(verb, undefined, options), 0);
    assert.deepEqual(out, []);
  });
}

test('writeSuccess() refuses an ADD without a result (programming error)', () => {
  const call = writeSuccess as (verb: string, payload?: object) => number;
  assert.throws(() => call('ADD'), TypeError);
});

test('writeSuccess() refuses a payload for DEL (programming error)', () => {
  const call = writeSuccess as (verb: string, payload?: object) => number;
  assert.throws(() => call('DEL', {}), TypeError);
});

test('writeResult() writes to the real stdout by default', () => {
  const outputModule = fileURLToPath(new URL('../../../src/cni/output.ts', import.meta.url));
  const script =
    `import(${JSON.stringify(outputModule)}).then((m) => { ` +
    `process.exitCode = m.writeError(new Error('boom'), '1.0.0'); });`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  assert.equal(child.status, 1);
  assert.equal(child.stdout, '{"cniVersion":"1.0.0","code":999,"msg":"boom","details":""}\n');
  assert.equal(child.stderr, '');
});
