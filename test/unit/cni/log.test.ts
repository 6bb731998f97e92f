// The plugin's logger writes values a tenant chose (config keys, CNI_ARGS): one call must stay one line, and the
// log file must never be a link, a FIFO or a device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../src/log/logger.ts';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'hab-log-'));

test('createLogger() escapes control characters: a value with a newline cannot forge a line', () => {
  const file = join(scratch(), 'plugin.log');
  const log = createLogger({
    file,
    level: 'debug',
    context: { verb: 'ADD', container: 'c1\n{"forged":1}', ifname: 'eth0' },
  });
  log.info('pod p\n{"time":"2026-01-01T00:00:00.000Z","level":"error"} forged\r\u001b[31m\u2028\u0085end');
  const text = readFileSync(file, 'utf8');
  assert.equal(text.split('\n').length, 2, text);
  assert.match(text, /forged\\r\\u001b\[31m\\u2028\\u0085end",/);
  const entry = JSON.parse(text) as Record<string, unknown>;
  assert.equal(
    entry['msg'],
    'pod p\n{"time":"2026-01-01T00:00:00.000Z","level":"error"} forged\r\u001b[31m\u2028\u0085end',
  );
  assert.equal(entry['container'], 'c1\n{"forged":1}');
});

test('createLogger() writes the JSON line of every mode: time, level, mode "cni", msg, then the context fields', () => {
  const file = join(scratch(), 'plugin.log');
  createLogger({ file, level: 'info', context: { verb: 'DEL', container: 'c9', ifname: 'net1' } }).warning(
    'token: abc123 leaked?',
  );
  const entry = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(entry), ['time', 'level', 'mode', 'msg', 'verb', 'container', 'ifname']);
  assert.equal(entry['level'], 'warning');
  assert.equal(entry['mode'], 'cni');
  assert.equal(entry['msg'], 'token: *** leaked?');
  assert.match(String(entry['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('createLogger() creates the log file 0600', () => {
  const file = join(scratch(), 'plugin.log');
  createLogger({ file, level: 'info' }).info('x');
  assert.equal(lstatSync(file).mode & 0o777, 0o600);
});

test('createLogger() never writes through a symlink at the log path', () => {
  const dir = scratch();
  const target = join(dir, 'authorized_keys');
  writeFileSync(target, 'ssh-ed25519 AAAA operator\n');
  symlinkSync(target, join(dir, 'plugin.log'));
  const complaints: string[] = [];
  createLogger({ file: join(dir, 'plugin.log'), level: 'info', stderr: (t) => void complaints.push(t) }).info(
    'appended?',
  );
  assert.equal(readFileSync(target, 'utf8'), 'ssh-ed25519 AAAA operator\n');
  assert.match(complaints.join(''), /symbolic link/);
});

test('createLogger() does not block on a FIFO at the log path', () => {
  const dir = scratch();
  const fifo = join(dir, 'plugin.log');
  execFileSync('mkfifo', [fifo]);
  const complaints: string[] = [];
  createLogger({ file: fifo, level: 'info', stderr: (t) => void complaints.push(t) }).info('x');
  assert.match(complaints.join(''), /not a regular file/);
});
