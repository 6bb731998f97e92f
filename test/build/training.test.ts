// The build's code-cache training (build/train-main-cache.mjs, build/train-code-cache.mjs, run by build/build.mjs with
// the embedded Node and its flags): it must run the CNI verbs for real (a cache of error paths only is worth little),
// and the CNI path's cache must be the same bytes every time, or no two builds of one commit are the same image.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

requireBinary(); // the build wrote the bundles these scripts train on
const flagsModule = '../../build/train-flags.mjs'; // plain JS without types: imported by name, typed here
const { embeddedFlags } = (await import(flagsModule)) as { embeddedFlags: readonly string[] };
const dir = mkdtempSync(join(tmpdir(), 'hereabouts-training-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function train(script: string, input: string, output: string): string {
  const run = spawnSync(embeddedNode, [...embeddedFlags, join(repoRoot, 'build', script), join(repoRoot, 'dist', input), output], { cwd: repoRoot, env: {}, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.equal(run.stderr, '');
  return run.stdout;
}

test('training runs ADD, CHECK and DEL on the local store successfully (only the deliberate config error fails)', () => {
  const lines = train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'main.cache')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const errors = lines.filter((l) => 'code' in l);
  assert.deepEqual(errors.map((e) => e['msg']), ['ipam.range: range "not-a-cidr": bad start address "not"']);
  assert.ok(lines.some((l) => Array.isArray(l['ips'])), 'no ADD result among the training runs');
});

test('the trained CNI code cache is the same bytes on every run', () => {
  train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'a.cache'));
  train('train-main-cache.mjs', 'hereabouts.cjs', join(dir, 'b.cache'));
  assert.ok(readFileSync(join(dir, 'a.cache')).equals(readFileSync(join(dir, 'b.cache'))), 'hereabouts.cache differs between two runs');
});
