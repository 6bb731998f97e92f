// The node agent's wire format (src/agent/frame.ts): only the allowed variables travel, stdin arrives byte for byte,
// and oversized or trailing bytes are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeAnswerFrame,
  decodeRequestFrame,
  encodeAnswer,
  encodeRequest,
  forwardedEnv,
  FrameReader,
  MAX_REQUEST_BYTES,
} from '../../../src/agent/frame.ts';

test('forwardedEnv keeps CNI_*, NODENAME and HEREABOUTS_ALLOWED_DIRS, and nothing else', () => {
  const env = {
    CNI_COMMAND: 'ADD',
    CNI_ARGS: 'a=b',
    NODENAME: 'n1',
    HEREABOUTS_ALLOWED_DIRS: '/tmp',
    PATH: '/bin',
    HOME: '/root',
    HEREABOUTS_AGENT_SOCKET: '/s',
    HEREABOUTS_TIMINGS: '1',
    LD_PRELOAD: '/x.so',
  };
  assert.deepEqual(forwardedEnv(env), {
    CNI_COMMAND: 'ADD',
    CNI_ARGS: 'a=b',
    NODENAME: 'n1',
    HEREABOUTS_ALLOWED_DIRS: '/tmp',
  });
});

test('a request round-trips, stdin byte for byte; variables a client adds beyond the allow-list are dropped', () => {
  const stdin = Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d, 0xff, 0x00]);
  const frame = encodeRequest({ env: { CNI_COMMAND: 'DEL', LD_PRELOAD: '/evil.so' }, stdin, giveUpAt: 123 });
  const body = new FrameReader(MAX_REQUEST_BYTES).push(frame);
  assert.ok(body !== undefined);
  const request = decodeRequestFrame(body);
  assert.deepEqual(request.env, { CNI_COMMAND: 'DEL' });
  assert.deepEqual(request.stdin, stdin);
  assert.equal(request.giveUpAt, 123);
});

test('FrameReader assembles a frame from pieces and refuses one over its limit or bytes after it', () => {
  const frame = encodeAnswer({ code: 0, stdout: 'x\n', stderr: '' });
  const reader = new FrameReader(1024);
  assert.equal(reader.push(frame.subarray(0, 2)), undefined);
  assert.equal(reader.push(frame.subarray(2, 7)), undefined);
  const body = reader.push(frame.subarray(7));
  assert.ok(body !== undefined);
  assert.deepEqual(decodeAnswerFrame(body), { code: 0, stdout: 'x\n', stderr: '' });
  const big = Buffer.alloc(4);
  big.writeUInt32BE(2048, 0);
  assert.throws(() => new FrameReader(1024).push(big), /exceeds 1024/);
  assert.throws(() => new FrameReader(1024).push(Buffer.concat([frame, Buffer.from('!')])), /bytes after the frame/);
});

test('malformed request headers are refused, naming what is wrong', () => {
  const header = (text: string): Buffer => {
    const h = Buffer.from(text);
    const b = Buffer.alloc(4);
    b.writeUInt32BE(h.length, 0);
    return Buffer.concat([b, h]);
  };
  assert.throws(() => decodeRequestFrame(header('nope')), /not JSON/);
  assert.throws(() => decodeRequestFrame(header('{"v":2,"env":{},"giveUpAt":1}')), /protocol version 2/);
  assert.throws(
    () => decodeRequestFrame(header('{"v":1,"env":{"CNI_COMMAND":5},"giveUpAt":1}')),
    /CNI_COMMAND" is not a string/,
  );
  assert.throws(() => decodeRequestFrame(header('{"v":1,"env":{}}')), /giveUpAt/);
  assert.throws(() => decodeRequestFrame(Buffer.from([0, 0, 0, 99])), /exceeds the frame/);
});

test("a request carries the client's pid namespace, and an answer may be a refusal (the call was not run)", () => {
  const frame = encodeRequest({ env: {}, stdin: Buffer.alloc(0), giveUpAt: 1, pidns: 'pid:[4026531836]' });
  const body = new FrameReader(MAX_REQUEST_BYTES).push(frame);
  assert.ok(body !== undefined);
  assert.equal(decodeRequestFrame(body).pidns, 'pid:[4026531836]');
  const without = new FrameReader(MAX_REQUEST_BYTES).push(
    encodeRequest({ env: {}, stdin: Buffer.alloc(0), giveUpAt: 1 }),
  );
  assert.ok(without !== undefined);
  assert.equal('pidns' in decodeRequestFrame(without), false);
  const refusal = new FrameReader(1024).push(encodeAnswer({ refused: 'another pid namespace' }));
  assert.ok(refusal !== undefined);
  assert.deepEqual(decodeAnswerFrame(refusal), { refused: 'another pid namespace' });
});
