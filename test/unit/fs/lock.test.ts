// The pool lock is stale only when its holder is provably dead; a live holder keeps it however long it stalls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { acquireLock, tryAcquireLock, type LockLog } from '../../../src/fs/lock.ts';
import { inspect, removeIfStill } from '../../../src/fs/lock-files.ts';
import type { LockOwner } from '../../../src/fs/lock-owner.ts';
import { poolPaths } from '../../../src/store/local/paths.ts';
import { embeddedNode, repoRoot } from '../../support/paths.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const pool = { network: 'net1', name: '10.0.0.0-24' };
const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
const pidns = readlinkSync('/proc/self/ns/pid');

function tempPaths() {
  const paths = poolPaths(join(mkdtempSync(join(tmpdir(), 'hab-lock-')), 'data'), pool);
  mkdirSync(paths.networkDir, { recursive: true });
  return paths;
}

function startOf(pid: number): string {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

/** A lock file as another process would have left it. */
function plantLock(path: string, owner: Record<string, unknown>, ageMs = 0): void {
  writeFileSync(path, JSON.stringify({ token: `planted-${Math.random()}`, ...owner }));
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
}

function exitedPid(): number {
  const run = spawnSync('true');
  assert.ok(run.pid > 0);
  return run.pid;
}

const isCode = (code: number, pattern: RegExp) => (err: unknown) =>
  err instanceof HereaboutsError && cniCodeOf(err) === code && pattern.test(err.message);

/** What acquireLock() logs, in order, as "debug: ..." and "warning: ...". */
function recordingLog(): { lines: string[]; log: LockLog } {
  const lines: string[] = [];
  return {
    lines,
    log: { debug: (m) => lines.push(`debug: ${m}`), warning: (m) => lines.push(`warning: ${m}`) },
  };
}

test('a lock whose holder has exited is taken over at once, well inside the age window', async () => {
  const paths = tempPaths();
  const pid = exitedPid();
  plantLock(paths.lock, { pid, start: '1', pidns, boot: bootId });
  const { lines, log } = recordingLog();
  // The window is short enough that a waiter judging by age alone would take the lock over in this test too, with a
  // warning: the log below tells the two apart, whatever the time it all took.
  const lock = await acquireLock(paths, { staleMs: 2_000, timeoutMs: 5_000 }, { log });
  // Taken over on the first look (no "waiting"), because its pid has exited (a debug line, not the age warning).
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0] ?? '', new RegExp(`^debug: lock .*: pid ${pid} has exited.*; taking it over$`));
  lock.assertHeld();
  await lock.release();
  assert.equal(existsSync(paths.lock), false);
});

test('a lock whose pid now belongs to a process started at another time is taken over', async () => {
  const paths = tempPaths();
  plantLock(paths.lock, { pid: process.pid, start: String(Number(startOf(process.pid)) + 1), pidns, boot: bootId });
  const lock = await acquireLock(paths, { staleMs: 60_000, timeoutMs: 2_000 });
  await lock.release();
});

test('a lock taken before the last boot is taken over', async () => {
  const paths = tempPaths();
  plantLock(paths.lock, { pid: process.pid, start: startOf(process.pid), pidns, boot: 'another-boot' });
  const lock = await acquireLock(paths, { staleMs: 60_000, timeoutMs: 2_000 });
  await lock.release();
});

test('a live holder keeps its lock past the age window: the waiter gives up with code 11 naming it', async () => {
  const paths = tempPaths();
  plantLock(paths.lock, { pid: process.pid, start: startOf(process.pid), pidns, boot: bootId }, 60_000);
  await assert.rejects(acquireLock(paths, { staleMs: 100, timeoutMs: 400 }), (err: unknown) => {
    return (
      isCode(11, /waiting for the lock/)(err) &&
      err instanceof HereaboutsError &&
      /pid \d+ \(running\)/.test(err.details)
    );
  });
  assert.equal((JSON.parse(readFileSync(paths.lock, 'utf8')) as LockOwner).pid, process.pid, 'the lock is untouched');
});

test('a holder stopped with SIGSTOP past the age window keeps its lock', async () => {
  const paths = tempPaths();
  const holder = spawn(
    embeddedNode,
    [
      '--input-type=module',
      '-e',
      `
    const { acquireLock } = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'src/fs/lock.ts')).href)});
    await acquireLock(${JSON.stringify(paths)}, { staleMs: 1000, timeoutMs: 5000 });
    process.stdout.write('locked\\n');
    setInterval(() => {}, 1000);
  `,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once('data', () => resolve());
      holder.once('exit', (code) => reject(new Error(`holder exited early (${code})`)));
    });
    holder.kill('SIGSTOP');
    await assert.rejects(acquireLock(paths, { staleMs: 300, timeoutMs: 1_500 }), isCode(11, /waiting for the lock/));
    assert.equal((JSON.parse(readFileSync(paths.lock, 'utf8')) as LockOwner).pid, holder.pid);
  } finally {
    holder.kill('SIGKILL');
  }
});

test('a lock from another pid namespace is judged by age: kept while fresh, taken over with a warning once stale', async () => {
  const paths = tempPaths();
  const foreign = { pid: 1, start: '1', pidns: 'pid:[1]', boot: bootId };
  plantLock(paths.lock, foreign);
  await assert.rejects(acquireLock(paths, { staleMs: 5_000, timeoutMs: 200 }), isCode(11, /waiting/));
  plantLock(paths.lock, foreign, 10_000);
  const warnings: string[] = [];
  const lock = await acquireLock(
    paths,
    { staleMs: 5_000, timeoutMs: 1_000 },
    { log: { debug: () => {}, warning: (m) => warnings.push(m) } },
  );
  await lock.release();
  assert.match(warnings.join('\n'), /another pid namespace.*taking it over/);
});

test('a lock directory left by an older hereabouts is judged by age', async () => {
  const paths = tempPaths();
  mkdirSync(paths.lock);
  await assert.rejects(acquireLock(paths, { staleMs: 5_000, timeoutMs: 200 }), isCode(11, /waiting/));
  const past = new Date(Date.now() - 10_000);
  utimesSync(paths.lock, past, past);
  const lock = await acquireLock(paths, { staleMs: 5_000, timeoutMs: 1_000 });
  await lock.release();
});

test('assertHeld() fails with code 11 once the lock file names another holder, and release() leaves that lock alone', async () => {
  const paths = tempPaths();
  const lock = await acquireLock(paths, { staleMs: 10_000, timeoutMs: 1_000 });
  lock.assertHeld();
  plantLock(paths.lock, { pid: process.pid, start: startOf(process.pid), pidns, boot: bootId, token: 'someone-else' });
  assert.throws(() => lock.assertHeld(), isCode(11, /lost the lock/));
  await lock.release();
  assert.equal((JSON.parse(readFileSync(paths.lock, 'utf8')) as LockOwner).token, 'someone-else');
});

test('the lock file names its holder: pid, start time, pid namespace and boot', async () => {
  const paths = tempPaths();
  const lock = await acquireLock(paths, { staleMs: 10_000, timeoutMs: 1_000 });
  const owner = JSON.parse(readFileSync(paths.lock, 'utf8')) as LockOwner;
  assert.deepEqual(
    [owner.pid, owner.start, owner.pidns, owner.boot],
    [process.pid, startOf(process.pid), pidns, bootId],
  );
  await lock.release();
});

test("liveness() calls a missing pid unknown (not dead) when another user's processes may be hidden from us", async () => {
  const { liveness } = await import('../../../src/fs/lock-owner.ts');
  const owner = { pid: exitedPid(), start: '1', pidns, boot: bootId, token: 't' };
  assert.equal(liveness(owner).state, 'dead');
  assert.equal(liveness(owner, { pidsMayBeHidden: true }).state, 'unknown');
});

test("release() never removes a lock taken over while it looked: a reclaimer's lock stays", async () => {
  const paths = tempPaths();
  const timing = { staleMs: 10_000, timeoutMs: 1_000 };
  const lock = await acquireLock(paths, timing);
  const seen = inspect(paths.lock);
  assert.equal(seen.kind, 'owner');
  // A reclaimer that judged this lock stale (a waiter in another pid namespace does, by age) removes it and takes the
  // lock at the worst moment: right after release() read the lock to see whose it is.
  const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
  const original = fs.readFileSync;
  let fired = false as boolean; // set by the interposer while release() runs
  let takenOver = false as boolean;
  fs.readFileSync = function (this: unknown, ...args: Parameters<typeof original>) {
    const out = original.apply(this, args);
    if (!fired && args[0] === paths.lock) {
      fired = true;
      takenOver = removeIfStill(paths.lock, seen, timing, 0) && tryAcquireLock(paths, timing) !== undefined;
    }
    return out;
  } as typeof original;
  syncBuiltinESMExports();
  try {
    await lock.release();
  } finally {
    fs.readFileSync = original;
    syncBuiltinESMExports();
  }
  assert.ok(fired, 'release() read the lock');
  assert.equal(existsSync(paths.lock), takenOver, takenOver ? "release() removed the new holder's lock" : 'released');
  assert.deepEqual(
    readdirSync(paths.networkDir).filter((n) => n.includes('.reclaim-') || n.includes('.tmp-')),
    [],
  );
});
