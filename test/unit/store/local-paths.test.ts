import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basename, dirname, join, relative, sep } from 'node:path';
import { escapeComponent, MAX_COMPONENT, poolPaths } from '../../../src/store/local/paths.ts';

const dataDir = '/var/lib/cni/hereabouts';

function staysInside(path: string): boolean {
  const rel = relative(dataDir, path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep);
}

test('escapeComponent() keeps Whereabouts pool names readable', () => {
  assert.equal(escapeComponent('mynet-10.0.0.0-24'), 'mynet-10.0.0.0-24');
  assert.equal(escapeComponent('fd00---64'), 'fd00---64');
});

test('escapeComponent() percent-encodes "/" and other unsafe bytes', () => {
  assert.equal(escapeComponent('a/b'), 'a%2Fb');
  assert.equal(escapeComponent('a b%'), 'a%20b%25');
  assert.equal(escapeComponent('né'), 'n%C3%A9');
});

test('escapeComponent() never yields ".", ".." or a hidden name', () => {
  assert.equal(escapeComponent('.'), '%2E');
  assert.equal(escapeComponent('..'), '%2E.');
  assert.equal(escapeComponent('.hidden'), '%2Ehidden');
});

test('escapeComponent() is injective on names that differ only in escaping', () => {
  assert.notEqual(escapeComponent('a/b'), escapeComponent('a%2Fb'));
  assert.notEqual(escapeComponent('.x'), escapeComponent('%2Ex'));
});

test('escapeComponent() bounds very long names and keeps them distinct', () => {
  const a = escapeComponent(`${'x'.repeat(300)}a`);
  const b = escapeComponent(`${'x'.repeat(300)}b`);
  assert.ok(a.length <= MAX_COMPONENT + 1, `length ${a.length}`);
  assert.notEqual(a, b);
  assert.match(a, /^x{96}~[0-9a-f]{64}$/);
});

test('escapeComponent() rejects the empty name', () => {
  assert.throws(() => escapeComponent(''), /empty network or pool name/);
});

test('poolPaths() keeps "../../etc" inside data_dir as one component', () => {
  const paths = poolPaths(dataDir, { network: '../../etc', name: '../../etc/passwd' });
  assert.ok(staysInside(paths.data), paths.data);
  assert.equal(dirname(paths.networkDir), dataDir);
  assert.equal(dirname(paths.data), paths.networkDir);
  assert.equal(basename(paths.data), '%2E.%2F..%2Fetc%2Fpasswd.json');
});

test('poolPaths() puts the lock and temp files beside the pool file', () => {
  const paths = poolPaths(dataDir, { network: 'net', name: '10.0.0.0-24' });
  assert.equal(paths.data, join(dataDir, 'net', '10.0.0.0-24.json'));
  assert.equal(paths.lock, join(dataDir, 'net', '10.0.0.0-24.json.lock'));
  assert.equal(paths.tempPrefix, join(dataDir, 'net', '.10.0.0.0-24.json.tmp-'));
});
