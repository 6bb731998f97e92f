import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveNodeName } from '../../../../src/store/kubernetes/node-name.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'hereabouts-nodename-'));

test('resolveNodeName() prefers NODENAME, trimmed', () => {
  assert.deepEqual(resolveNodeName({ env: { NODENAME: ' worker-1\n' }, configDirs: [] }), {
    name: 'worker-1',
    from: 'NODENAME',
  });
});

test('resolveNodeName() reads the nodename file beside the flat config file', () => {
  const d = dir();
  writeFileSync(join(d, 'nodename'), 'worker-2\n');
  const found = resolveNodeName({ env: {}, configurationPath: join(d, 'whereabouts.conf'), configDirs: [] });
  assert.deepEqual(found, { name: 'worker-2', from: join(d, 'nodename') });
});

test('resolveNodeName() reads the nodename file in a configuration_path directory', () => {
  const d = dir();
  writeFileSync(join(d, 'nodename'), 'worker-3');
  assert.equal(resolveNodeName({ env: {}, configurationPath: d, configDirs: [] }).name, 'worker-3');
});

test("resolveNodeName() searches the installers' directories after configuration_path", () => {
  const d = dir();
  writeFileSync(join(d, 'nodename'), 'worker-4');
  assert.equal(resolveNodeName({ env: {}, configDirs: [join(d, 'missing'), d] }).name, 'worker-4');
});

test('resolveNodeName() falls back to the host name', () => {
  const found = resolveNodeName({ env: {}, configDirs: [], hostname: () => 'host-5' });
  assert.equal(found.from, 'hostname');
  assert.ok(found.name !== '');
});
