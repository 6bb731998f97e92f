// A full file system while a lock is taken: the attempt fails with an error that says so, and leaves no temp file
// beside the pool (the lock's owner record is written to a temp file first, then linked to the lock's name).
// Needs root for a small tmpfs of its own.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock } from '../../../src/fs/lock.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';
import { LocalStore } from '../../../src/store/local/local-store.ts';
import { poolPaths } from '../../../src/store/local/paths.ts';
import { firstFree } from '../../../src/allocator/first-free.ts';
import type { Allocations } from '../../../src/store/store.ts';
import { testRange } from '../../support/memory-store.ts';

/** A fresh 256 KiB tmpfs, unmounted after the test; undefined when this process may not mount one. */
function smallTmpfs(t: TestContext): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'hab-enospc-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  t.after(() => {
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Writes until the file system refuses another byte. */
function fillUp(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
  // The last partial block too.
  const tail = openSync(join(dir, 'filler-tail'), 'w');
  try {
    for (;;) writeSync(tail, Buffer.alloc(1, 1));
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(tail);
  }
}

const temps = (dir: string): string[] => readdirSync(dir).filter((name) => name.includes('.tmp-'));

test('a lock attempt on a full file system fails with code 5 naming ENOSPC and leaves no temp file', async (t) => {
  const root = smallTmpfs(t);
  if (root === undefined) return t.skip('cannot mount a tmpfs here (needs root)');
  const paths = poolPaths(join(root, 'data'), { network: 'net1', name: '10.0.0.0-24' });
  mkdirSync(paths.networkDir, { recursive: true });
  fillUp(root);
  await assert.rejects(
    acquireLock(paths, { staleMs: 10_000, timeoutMs: 1_000 }),
    (err: unknown) =>
      err instanceof HereaboutsError && cniCodeOf(err) === 5 && /cannot create lock .*no space left/i.test(err.message),
  );
  assert.deepEqual(temps(paths.networkDir), []);
});

test("an ADD on the local store of a full file system fails and leaves no temp file in the pool's directory", async (t) => {
  const root = smallTmpfs(t);
  if (root === undefined) return t.skip('cannot mount a tmpfs here (needs root)');
  const store = new LocalStore(join(root, 'data'), { lock: { timeoutMs: 1_000 } });
  const pool = { name: '10.0.0.0-24', network: 'net1', networkNamed: false, range: testRange('10.0.0.0/24') };
  const claim = (id: string) => (current: Allocations) => {
    const address = firstFree(pool.range, current);
    assert.ok(address !== undefined, 'the pool has room');
    return {
      change: { claim: { address, record: { containerId: id, ifname: 'eth0', podRef: `ns/${id}` } } },
      value: address,
    };
  };
  await store.update(pool, claim('first'));
  fillUp(root);
  await assert.rejects(store.update(pool, claim('second')), (err: unknown) => {
    return err instanceof HereaboutsError && cniCodeOf(err) === 5 && /no space left/i.test(err.message);
  });
  const dir = poolPaths(join(root, 'data'), pool).networkDir;
  assert.deepEqual(temps(dir), []);
  assert.deepEqual(readdirSync(dir).sort(), ['10.0.0.0-24.json']);
});
