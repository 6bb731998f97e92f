// The installer on a node where something planted links, FIFOs or huge files in its directories, and where NODENAME
// carries a newline: it must neither write through a link, nor block, nor crash, nor write the newline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  ftruncateSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';
import { fakeNode, installArgs, type FakeNode, type PodEnv } from '../integration/install/host.ts';
import { requireBinary } from '../support/paths.ts';
import { STALE_TEMP_MS } from '../../src/install/binary.ts';
import { tempSuffix } from '../../src/fs/stale-temps.ts';

const env: PodEnv = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '6443', NODENAME: 'node-1' };
const sa = {
  token: 'sa-token',
  ca: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
  namespace: 'kube-system',
};

/** `install --once` with a bound: a blocked installer is killed and reported as such. */
function installOnce(
  node: FakeNode,
  podEnv: PodEnv = env,
): { code: number | null; signal: NodeJS.Signals | null; stderr: string } {
  const run = spawnSync(requireBinary(), [...installArgs(node), '--once'], {
    env: { ...podEnv },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: run.status, signal: run.signal, stderr: run.stderr };
}

test('install refuses to write through a planted hereabouts.d symlink', () => {
  const node = fakeNode(sa);
  const elsewhere = join(node.root, 'etc-shadow-dir');
  mkdirSync(elsewhere);
  symlinkSync(elsewhere, node.filesDir);
  const run = installOnce(node);
  assert.notEqual(run.code, 0, run.stderr);
  assert.match(run.stderr, /hereabouts\.d.*symbolic link/);
  assert.deepEqual(readdirSync(elsewhere), []);
  rmSync(node.root, { recursive: true, force: true });
});

test('install does not block on a FIFO at hereabouts.d/token: it replaces it with the token', () => {
  const node = fakeNode(sa);
  mkdirSync(node.filesDir, { mode: 0o700 });
  execFileSync('mkfifo', ['-m', '0600', join(node.filesDir, 'token')]); // 0600: what the installer writes, so it reads it
  const run = installOnce(node);
  assert.equal(run.signal, null, 'the installer blocked and was killed');
  assert.equal(run.code, 0, run.stderr);
  assert.ok(lstatSync(join(node.filesDir, 'token')).isFile());
  assert.equal(readFileSync(join(node.filesDir, 'token'), 'utf8'), 'sa-token');
  rmSync(node.root, { recursive: true, force: true });
});

test('install survives a 600 MiB file reached through a symlink at hereabouts.d/token, and replaces the link', () => {
  const node = fakeNode(sa);
  mkdirSync(node.filesDir, { mode: 0o700 });
  const huge = join(node.root, 'huge');
  const fd = openSync(huge, 'w', 0o600);
  ftruncateSync(fd, 600 * 1024 * 1024); // sparse: costs no disk
  closeSync(fd);
  symlinkSync(huge, join(node.filesDir, 'token'));
  const run = installOnce(node);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(lstatSync(join(node.filesDir, 'token')).isFile());
  assert.equal(readFileSync(join(node.filesDir, 'token'), 'utf8'), 'sa-token');
  rmSync(node.root, { recursive: true, force: true });
});

test('install rejects a NODENAME with a newline and writes no nodename file', () => {
  const node = fakeNode(sa);
  const run = installOnce(node, { ...env, NODENAME: 'node-1\nevil: line' });
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /NODENAME "node-1\\nevil: line" is not a Kubernetes node name/);
  assert.equal(existsSync(join(node.filesDir, 'nodename')), false);
  rmSync(node.root, { recursive: true, force: true });
});

test('install sweeps temp files a killed installer left in hereabouts.d and the bin dir', () => {
  const node = fakeNode(sa);
  mkdirSync(node.filesDir, { mode: 0o700 });
  // pid_max, in this pid namespace: a writer that is provably gone.
  const stale = [
    join(node.filesDir, `.token.tmp-${tempSuffix(4194303)}`),
    join(node.binDir, '.hereabouts.tmp-4194303-abc123'),
  ];
  for (const file of stale) closeSync(openSync(file, 'w'));
  // The bin dir is shared with the other pod's installer during a rolling update: only an old temp file is a leftover.
  const old = (Date.now() - STALE_TEMP_MS - 60_000) / 1000;
  utimesSync(stale[1] as string, old, old);
  const fresh = join(node.binDir, '.hereabouts.tmp-4194302-def456');
  closeSync(openSync(fresh, 'w'));
  const run = installOnce(node);
  assert.equal(run.code, 0, run.stderr);
  for (const file of stale) assert.equal(existsSync(file), false, file);
  assert.equal(existsSync(fresh), true, "a fresh temp file in the bin dir may be another installer's and stays");
  rmSync(node.root, { recursive: true, force: true });
});
