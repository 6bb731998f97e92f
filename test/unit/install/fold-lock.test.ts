// One folder per node: a second DaemonSet pod (rolling update) waits while the first holds fold.lock and touches it,
// and takes it over when it is released or goes stale (a killed pod).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FoldLock } from '../../../src/install/fold-lock.ts';

const lockPath = (): string => join(mkdtempSync(join(tmpdir(), 'hab-foldlock-')), 'fold.lock');

test('the holder keeps the lock; another waits until it is released', () => {
  const path = lockPath();
  const old = new FoldLock(path, { id: 'old', staleMs: 30_000 });
  const fresh = new FoldLock(path, { id: 'new', staleMs: 30_000 });
  assert.equal(old.hold(), true);
  assert.equal(fresh.hold(), false);
  assert.equal(old.hold(), true, 'holding again touches it');
  old.release();
  assert.equal(existsSync(path), false);
  assert.equal(fresh.hold(), true);
  assert.equal(old.hold(), false);
});

test('a lock not touched for staleMs (its pod was killed) is taken over', () => {
  const path = lockPath();
  const dead = new FoldLock(path, { id: 'dead', staleMs: 30_000 });
  assert.equal(dead.hold(), true);
  const past = new Date(Date.now() - 60_000);
  utimesSync(path, past, past);
  const next = new FoldLock(path, { id: 'next', staleMs: 30_000 });
  assert.equal(next.hold(), true);
  assert.equal(dead.hold(), false);
  dead.release(); // not the holder: leaves the new holder's lock alone
  assert.equal(next.hold(), true);
});
