// Many plugin processes at once on one network, as kubelet does when a node fills up: unique addresses, clean
// release, and a process killed while holding the pool lock is taken over at once (its lock names a dead pid).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { retryLockWaits, runCni, type CniOutcome } from '../support/cni.ts';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

const bin = requireBinary();
const PROCESSES = Number(process.env['HEREABOUTS_CONCURRENT_PROCESSES'] ?? 200);

function conf(dataDir: string, logFile?: string): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'burst',
    type: 'bridge',
    ipam: {
      type: 'hereabouts',
      datastore: 'local',
      data_dir: dataDir,
      range: '10.50.0.0/16',
      ...(logFile === undefined ? {} : { log_file: logFile, log_level: 'debug' }),
    },
  };
}

/** The messages a plugin process logged about the pool lock, with their level. */
function lockLogLines(logFile: string): Array<{ level?: string; msg: string }> {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level?: string; msg?: string })
    .flatMap((l) => (/^lock /.test(l.msg ?? '') ? [{ level: l.level, msg: l.msg ?? '' }] : []));
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Calls answered code 11 after waiting out the pool lock, and run again (retryLockWaits). */
let lockRetries = 0;

function call(command: 'ADD' | 'DEL', dataDir: string, i: number): Promise<CniOutcome> {
  return retryLockWaits(
    () => callOnce(command, dataDir, i),
    () => lockRetries++,
  );
}

function callOnce(command: 'ADD' | 'DEL', dataDir: string, i: number, logFile?: string): Promise<CniOutcome> {
  return runCni(
    bin,
    {
      command,
      containerId: `burst-${i}`,
      netns: '/var/run/netns/x',
      ifname: 'eth0',
      path: '/usr/lib/cni',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=load;K8S_POD_NAME=p${i}`,
    },
    conf(dataDir, logFile),
    { timeoutMs: 120_000 },
  );
}

function poolAllocations(dataDir: string): Record<string, { id: string }> {
  const dir = join(dataDir, 'burst');
  const file = readdirSync(dir).find((f) => f.endsWith('.json'));
  assert.ok(file !== undefined, 'the pool file exists');
  return (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { allocations: Record<string, { id: string }> })
    .allocations;
}

const addressOf = (out: CniOutcome): string => (out.json?.['ips'] as Array<{ address: string }>)[0]!.address;

describe('concurrent plugin processes on one network', { timeout: 600_000 }, () => {
  test(`${PROCESSES} ADD processes at once get ${PROCESSES} distinct addresses; ${PROCESSES} DELs leave nothing`, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hab-burst-'));
    try {
      const adds = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => call('ADD', dataDir, i)));
      for (const out of adds) assert.equal(out.code, 0, out.stdout + out.stderr);
      const addresses = adds.map(addressOf);
      assert.equal(new Set(addresses).size, PROCESSES, 'every address is distinct');
      const stored = poolAllocations(dataDir);
      assert.equal(Object.keys(stored).length, PROCESSES);
      // What each process printed is what the store recorded for its container.
      adds.forEach((out, i) => {
        const offset =
          addressOf(out)
            .split('/')[0]!
            .split('.')
            .map(Number)
            .reduce((a, b) => a * 256 + b, 0) -
          (10 * 2 ** 24 + 50 * 2 ** 16);
        assert.equal(stored[String(offset)]?.id, `burst-${i}`);
      });
      const dels = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => call('DEL', dataDir, i)));
      for (const out of dels) assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.deepEqual(poolAllocations(dataDir), {});
      t.diagnostic(`${lockRetries} of ${2 * PROCESSES} calls run again after a lock wait (code 11)`);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a process SIGKILLed while holding the pool lock is taken over at once, not after a stale window', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hab-kill-'));
    try {
      assert.equal((await call('ADD', dataDir, 0)).code, 0); // creates the pool
      // A stand-in for a plugin process frozen inside its critical section: it takes the very same lock.
      const holder = spawn(
        embeddedNode,
        [
          '--input-type=module',
          '-e',
          `
        import { acquireLock, DEFAULT_LOCK_TIMING } from ${JSON.stringify(join(repoRoot, 'src/fs/lock.ts'))};
        import { poolPaths } from ${JSON.stringify(join(repoRoot, 'src/store/local/paths.ts'))};
        await acquireLock(poolPaths(${JSON.stringify(dataDir)}, { network: 'burst', name: '10.50.0.0-16' }), DEFAULT_LOCK_TIMING);
        process.stdout.write('locked\\n');
        setInterval(() => {}, 1000);
      `,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((resolve, reject) => {
        holder.stdout.once('data', () => resolve());
        holder.once('exit', (code) => reject(new Error(`lock holder exited early (${code})`)));
      });
      // Run once, not again after a code 11: a waiter that timed out is a failure here, not something to retry.
      const logFile = join(dataDir, 'waiting.log');
      let done: CniOutcome | undefined;
      const waiting = callOnce('ADD', dataDir, 1, logFile).then((out) => (done = out));
      await until(
        'the ADD to wait on the held lock',
        () =>
          done !== undefined ||
          lockLogLines(logFile).some((l) => l.msg.endsWith(`is held by pid ${holder.pid} (running); waiting`)),
      );
      assert.equal(done, undefined, `the ADD got past a live holder's lock: ${JSON.stringify(done?.json)}`);
      holder.kill('SIGKILL');
      const out = await waiting;
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.equal(addressOf(out), '10.50.0.2/16', 'no duplicate of the first address');
      // Taken over because the holder's pid has exited (a debug line), not once its lock had gone without a refresh
      // for the stale window (a warning), however long the ADD took.
      const lines = lockLogLines(logFile);
      assert.ok(
        lines.some(
          (l) => l.level === 'debug' && new RegExp(`: pid ${holder.pid} has exited.*; taking it over$`).test(l.msg),
        ),
        JSON.stringify(lines),
      );
      assert.deepEqual(
        lines.filter((l) => l.level !== 'debug'),
        [],
        'no takeover by age',
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('ADD processes SIGKILLed at random moments never cause a duplicate', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hab-chaos-'));
    try {
      assert.equal((await call('ADD', dataDir, 0)).code, 0); // the pool exists even if every process below is killed early
      const runs = Array.from({ length: 60 }, (_, i) => {
        const child = runCni(
          bin,
          { command: 'ADD', containerId: `chaos-${i}`, netns: '/x', ifname: 'eth0', path: '/usr/lib/cni' },
          conf(dataDir),
          {
            timeoutMs: 20 + Math.floor(Math.random() * 600), // killed with SIGKILL at a random point
          },
        );
        return child;
      });
      const outcomes = await Promise.all(runs);
      const succeeded = outcomes.filter((o) => o.code === 0);
      const printed = succeeded.map(addressOf);
      assert.equal(new Set(printed).size, printed.length, 'no address printed twice');
      // Every address a process printed is recorded for that process; killed ones leaked at most their own.
      const stored = poolAllocations(dataDir);
      const ids = Object.values(stored).map((a) => a.id);
      assert.equal(new Set(ids).size, ids.length, 'no container holds two addresses');
      const survivor = await call('ADD', dataDir, 999);
      assert.equal(survivor.code, 0, survivor.stdout);
      assert.ok(!printed.includes(addressOf(survivor)));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
