import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveNodeName } from '../../../../src/store/kubernetes/node-name.ts';
import { embeddedNode, repoRoot } from '../../../support/paths.ts';

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

test("resolveNodeName() falls back to the kernel's host name, not /etc/hostname (a container's own file)", (t) => {
  // In a pod /etc/hostname is the runtime's file, while the host name is the host's (hostNetwork shares the UTS
  // namespace): a mount and UTS namespace of our own play that pod.
  const d = dir();
  writeFileSync(join(d, 'hostname'), 'image-hostname\n');
  const script = `
    const { resolveNodeName } = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'src/store/kubernetes/node-name.ts')).href)});
    process.stdout.write(JSON.stringify(resolveNodeName({ env: {}, configDirs: [] })));
  `;
  const run = spawnSync(
    'unshare',
    [
      '--mount',
      '--uts',
      'sh',
      '-c',
      `mount --bind "$1" /etc/hostname && hostname kernel-host && exec "$2" --input-type=module -e "$3"`,
      'sh',
      join(d, 'hostname'),
      embeddedNode,
      script,
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0 && /Operation not permitted|cannot|unshare failed/i.test(run.stderr))
    return t.skip(`no mount and UTS namespace of our own here: ${run.stderr.trim()}`);
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { name: 'kernel-host', from: 'hostname' });
});
