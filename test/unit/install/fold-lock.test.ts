// One folder per node: a second DaemonSet pod (rolling update) waits while the first holds fold.lock, and takes it
// over when it is released or its holder is gone: at once when the holder's pid shows it dead, by age when the
// holder ran in another pid namespace (a pod without hostPID) and stopped refreshing the lock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FoldLock } from '../../../src/install/fold-lock.ts';
import { repoRoot } from '../../support/paths.ts';

const lockPath = (): string => join(mkdtempSync(join(tmpdir(), 'hab-foldlock-')), 'fold.lock');

test('the holder keeps the lock; another waits until it is released', () => {
  const path = lockPath();
  const old = new FoldLock(path, { staleMs: 30_000 });
  const fresh = new FoldLock(path, { staleMs: 30_000 });
  assert.equal(old.hold(), true);
  assert.equal(fresh.hold(), false);
  assert.equal(old.hold(), true, 'holding again keeps it');
  old.release();
  assert.equal(existsSync(path), false);
  assert.equal(fresh.hold(), true);
  assert.equal(old.hold(), false);
});

test('a lock whose holder was killed is taken over at once', () => {
  const path = lockPath();
  const lockModule = pathToFileURL(join(repoRoot, 'src/install/fold-lock.ts')).href;
  // The holder takes the lock and exits without releasing it, as a SIGKILLed pod would.
  const holder = spawnSync(process.execPath, [
    '--input-type=module',
    '-e',
    `
    const { FoldLock } = await import(${JSON.stringify(lockModule)});
    if (!new FoldLock(${JSON.stringify(path)}, { staleMs: 30000 }).hold()) process.exit(3);
    process.kill(process.pid, 'SIGKILL');`,
  ]);
  assert.equal(holder.signal, 'SIGKILL', holder.stderr.toString());
  assert.equal(existsSync(path), true, 'the killed holder left its lock behind');
  assert.equal(new FoldLock(path, { staleMs: 30_000 }).hold(), true);
});

test('a lock of a holder in another pid namespace, not refreshed for staleMs, is taken over', () => {
  const path = lockPath();
  const foreign = { pid: 4242, start: '1', pidns: 'pid:[1]', token: 'other-pod' };
  writeFileSync(path, `${JSON.stringify(foreign)}\n`);
  const next = new FoldLock(path, { staleMs: 30_000 });
  assert.equal(next.hold(), false, 'refreshed recently: its holder may still run');
  const past = new Date(Date.now() - 60_000);
  utimesSync(path, past, past);
  assert.equal(next.hold(), true);
  next.release();
  assert.equal(existsSync(path), false);
});
