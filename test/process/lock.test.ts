// The pool lock against the packaged executable: a holder frozen inside its read-plan-write (SIGSTOP, as a CPU
// throttle or an fsync stall would) keeps its lock for as long as it lives, so an ADD waiting meanwhile never gets
// the address the frozen holder is about to commit; a holder that dies is taken over at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

const bin = requireBinary();
/** The executable's lock timing before liveness: a lock untouched this long was taken over. */
const OLD_STALE_MS = 10_000;

const moduleUrl = (path: string) => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);

function conf(dataDir: string, logFile: string): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'frozen',
    type: 'bridge',
    ipam: {
      type: 'hereabouts',
      datastore: 'local',
      data_dir: dataDir,
      range: '10.77.0.0/24',
      log_file: logFile,
      log_level: 'debug',
    },
  };
}

/**
 * A plugin process stand-in that takes the pool lock through the store, reads the pool, plans the first free
 * address, prints it, then blocks synchronously (no timer can run) until GO_FILE exists, and commits.
 */
function startHolder(dataDir: string, goFile: string): ChildProcess & { output: string } {
  const script = `
    const { LocalStore } = await import(${moduleUrl('src/store/local/local-store.ts')});
    const { firstFree } = await import(${moduleUrl('src/allocator/first-free.ts')});
    const { testRange } = await import(${moduleUrl('test/support/memory-store.ts')});
    const { existsSync, writeSync } = await import('node:fs');
    const pool = { name: '10.77.0.0-24', network: 'frozen', networkNamed: false, range: testRange('10.77.0.0/24') };
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const address = await new LocalStore(${JSON.stringify(dataDir)}).update(pool, (current) => {
      const address = firstFree(pool.range, current);
      writeSync(1, 'planned ' + address + '\\n');
      while (!existsSync(${JSON.stringify(goFile)})) Atomics.wait(pause, 0, 0, 20);
      return { change: { claim: { address, record: { containerId: 'frozen', ifname: 'eth0', podRef: 'ns/frozen' } } }, value: address };
    });
    writeSync(1, 'committed ' + address + '\\n');
  `;
  const child = spawn(embeddedNode, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { output: string };
  child.output = '';
  child.stdout?.on('data', (b: Buffer) => (child.output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (child.output += b.toString()));
  return child;
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The JSON lines of a plugin log file. */
function logLines(file: string): Array<{ level?: string; msg?: string }> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level?: string; msg?: string });
}

const addressOf = (out: CniOutcome): string | undefined =>
  (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;
const toIPv4 = (value: bigint): string => [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.');

test(
  'an ADD waiting on a holder frozen (SIGSTOP) past the old stale window never gets the address it is committing',
  { timeout: 90_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hab-frozen-'));
    const dataDir = join(dir, 'data');
    const logFile = join(dir, 'add.log');
    const goFile = join(dir, 'go');
    const holder = startHolder(dataDir, goFile);
    try {
      await until('the holder to plan', () => holder.output.includes('planned'));
      const planned = toIPv4(BigInt(/planned (\d+)/.exec(holder.output)?.[1] ?? '0'));
      holder.kill('SIGSTOP');
      const stoppedAt = Date.now();
      let done: CniOutcome | undefined;
      const add = runCni(
        bin,
        { command: 'ADD', containerId: 'waiter', netns: '/x', ifname: 'eth0', path: '/x' },
        conf(dataDir, logFile),
        { timeoutMs: 60_000 },
      ).then((out) => (done = out));
      // The ADD reached the lock and found it held: from here on it is waiting, not starting up.
      await until(
        'the ADD to wait on the lock',
        () =>
          done !== undefined ||
          (existsSync(logFile) && /is held by pid \d+ \(running\)/.test(readFileSync(logFile, 'utf8'))),
      );
      // Stay frozen past the window after which the lock used to be taken over.
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + OLD_STALE_MS + 1_500 - Date.now())));
      assert.equal(done, undefined, `the ADD finished while the holder was frozen: ${JSON.stringify(done?.json)}`);
      holder.kill('SIGCONT');
      writeFileSync(goFile, '');
      await until('the holder to commit', () => holder.output.includes('committed'));
      const out = await add;
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.notEqual(addressOf(out), `${planned}/24`, "the waiting ADD got the frozen holder's address");
      assert.equal(addressOf(out), '10.77.0.2/24');
      const stored = JSON.parse(readFileSync(join(dataDir, 'frozen', '10.77.0.0-24.json'), 'utf8')) as {
        allocations: Record<string, { id: string }>;
      };
      assert.deepEqual(Object.fromEntries(Object.entries(stored.allocations).map(([k, v]) => [k, v.id])), {
        '1': 'frozen',
        '2': 'waiter',
      });
    } finally {
      holder.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a holder SIGKILLed inside its read-plan-write is taken over at once (not after a stale window)',
  { timeout: 60_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hab-killed-'));
    const dataDir = join(dir, 'data');
    const logFile = join(dir, 'add.log');
    const holder = startHolder(dataDir, join(dir, 'never'));
    try {
      await until('the holder to plan', () => holder.output.includes('planned'));
      let done: CniOutcome | undefined;
      const add = runCni(
        bin,
        { command: 'ADD', containerId: 'waiter', netns: '/x', ifname: 'eth0', path: '/x' },
        conf(dataDir, logFile),
        { timeoutMs: 40_000 },
      ).then((out) => (done = out));
      await until(
        'the ADD to wait on the lock',
        () => done !== undefined || (existsSync(logFile) && /is held by pid/.test(readFileSync(logFile, 'utf8'))),
      );
      assert.equal(done, undefined, `the ADD got past a live holder's lock: ${JSON.stringify(done?.json)}`);
      holder.kill('SIGKILL');
      const out = await add;
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.equal(addressOf(out), '10.77.0.1/24', 'the killed holder committed nothing');
      // Taken over because the holder's pid has exited (a debug line), not once the lock had aged past the stale
      // window (a warning), however long the ADD took.
      const lockLines = logLines(logFile).filter((l) => /^lock /.test(l.msg ?? ''));
      assert.ok(
        lockLines.some(
          (l) =>
            l.level === 'debug' && new RegExp(`: pid ${holder.pid} has exited.*; taking it over$`).test(l.msg ?? ''),
        ),
        JSON.stringify(lockLines),
      );
      assert.deepEqual(
        lockLines.filter((l) => l.level !== 'debug'),
        [],
        'no takeover by age',
      );
    } finally {
      holder.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
