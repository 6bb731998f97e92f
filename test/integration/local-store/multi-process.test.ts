// Real processes against one pool file: the pool lock must serialise them, a live holder keeps its lock past the
// age window, and a holder killed with SIGKILL is taken over at once (its lock names a dead pid).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { embeddedNode, repoRoot } from '../../support/paths.ts';

const PROCESSES = Number(process.env['HEREABOUTS_LOCK_PROCESSES'] ?? 64);
const STALE_MS = 8_000;

const moduleUrl = (path: string) => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);

// Shared by both children: the pool, the store and the lock options under test.
const prelude = `
  const { LocalStore } = await import(${moduleUrl('src/store/local/local-store.ts')});
  const { acquireLock } = await import(${moduleUrl('src/fs/lock.ts')});
  const { poolPaths } = await import(${moduleUrl('src/store/local/paths.ts')});
  const { firstFree } = await import(${moduleUrl('src/allocator/first-free.ts')});
  const { testRange } = await import(${moduleUrl('test/support/memory-store.ts')});
  const { existsSync } = await import('node:fs');
  const env = process.env;
  const pool = { name: '10.0.0.0-16', network: 'stress', networkNamed: false, range: testRange('10.0.0.0/16') };
  const timing = { staleMs: Number(env.STALE_MS), timeoutMs: 60000 };
`;

const claimer = `${prelude}
  process.stdout.write('ready\\n');
  while (!existsSync(env.GO_FILE)) await new Promise((r) => setTimeout(r, 5));
  // The store's lock log lines, one per line on stdout ("debug: ..." or "warning: ...").
  const log = {
    debug: (msg) => process.stdout.write('debug: ' + msg + '\\n'),
    warning: (msg) => process.stdout.write('warning: ' + msg + '\\n'),
  };
  const store = new LocalStore(env.DATA_DIR, { lock: timing, log });
  const address = await store.update(pool, (current) => {
    const address = firstFree(pool.range, current);
    const record = { containerId: env.ID, ifname: 'eth0', podRef: 'ns/' + env.ID };
    return { change: { claim: { address, record } }, value: address };
  });
  process.stdout.write('claimed ' + address + '\\n');
`;

const holder = `${prelude}
  const paths = poolPaths(env.DATA_DIR, pool);
  (await import('node:fs')).mkdirSync(paths.networkDir, { recursive: true });
  await acquireLock(paths, timing);
  process.stdout.write('locked\\n');
  setInterval(() => {}, 1000);
`;

interface Child {
  readonly proc: ChildProcess;
  output: string;
  exited: Promise<{ code: number | null; at: number }>;
}

function start(script: string, env: Record<string, string>): Child {
  const proc = spawn(embeddedNode, ['--input-type=module', '--eval', script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child: Child = {
    proc,
    output: '',
    // 'close', not 'exit': the last output ("claimed ...") may still be in the pipe when the process has exited.
    exited: new Promise((resolve) => proc.on('close', (code) => resolve({ code, at: Date.now() }))),
  };
  proc.stdout.on('data', (chunk: Buffer) => (child.output += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (child.output += chunk.toString()));
  return child;
}

async function waitFor(child: Child, marker: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!child.output.includes(marker)) {
    if (child.proc.exitCode !== null) throw new Error(`child exited before "${marker}": ${child.output}`);
    if (Date.now() > deadline) throw new Error(`child did not print "${marker}" in ${timeoutMs} ms: ${child.output}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function claimedAddresses(children: readonly Child[]): string[] {
  return children.map((c) => {
    const match = /claimed (\d+)/.exec(c.output);
    if (match?.[1] === undefined) throw new Error(`child did not claim: ${c.output}`);
    return match[1];
  });
}

function poolFile(dataDir: string): { allocations: Record<string, { id: string }> } {
  return JSON.parse(readFileSync(join(dataDir, 'stress', '10.0.0.0-16.json'), 'utf8')) as {
    allocations: Record<string, { id: string }>;
  };
}

async function startClaimers(dataDir: string, goFile: string, prefix: string): Promise<Child[]> {
  const children = Array.from({ length: PROCESSES }, (_, i) =>
    start(claimer, { DATA_DIR: dataDir, GO_FILE: goFile, ID: `${prefix}${i}`, STALE_MS: String(STALE_MS) }),
  );
  await Promise.all(children.map((c) => waitFor(c, 'ready')));
  return children;
}

test(
  `${PROCESSES} processes claiming the first free address at once each get a distinct one`,
  { timeout: 180_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'hereabouts-mp-'));
    const dataDir = join(dir, 'data');
    const goFile = join(dir, 'go');
    const children = await startClaimers(dataDir, goFile, 'c');
    const goAt = Date.now();
    writeFileSync(goFile, '');
    const exits = await Promise.all(children.map((c) => c.exited));
    t.diagnostic(
      `all ${PROCESSES} claims done ${Math.max(...exits.map((e) => e.at)) - goAt} ms after the start signal`,
    );
    assert.deepEqual(
      exits.map((e, i) => (e.code === 0 ? 0 : children[i]?.output)),
      exits.map(() => 0),
    );
    const addresses = claimedAddresses(children);
    assert.equal(new Set(addresses).size, PROCESSES);
    // First fit under a working lock packs the pool: exactly the lowest PROCESSES addresses.
    const expected = Array.from({ length: PROCESSES }, (_, i) => String(BigInt(10 << 24) + BigInt(i + 1)));
    assert.deepEqual([...addresses].sort(), [...expected].sort());
    const ids = Object.values(poolFile(dataDir).allocations).map((a) => a.id);
    assert.equal(new Set(ids).size, PROCESSES);
  },
);

test(
  'a lock holder killed with SIGKILL is taken over at once, not after the stale window',
  { timeout: 180_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'hereabouts-mp-'));
    const dataDir = join(dir, 'data');
    const goFile = join(dir, 'go');
    const lockHolder = start(holder, { DATA_DIR: dataDir, STALE_MS: String(STALE_MS) });
    await waitFor(lockHolder, 'locked');
    const children = await startClaimers(dataDir, goFile, 'k');
    writeFileSync(goFile, '');
    // Every claimer has found the lock held by the live holder and waits on it...
    await Promise.all(children.map((c) => waitFor(c, `is held by pid ${lockHolder.proc.pid} (running); waiting`)));
    // ...and it stays held well past the stale window: a live holder keeps its lock, so nobody may get through.
    await new Promise((r) => setTimeout(r, STALE_MS * 1.5));
    assert.equal(children.filter((c) => c.output.includes('claimed')).length, 0, 'a claimer got past a live lock');
    assert.ok(existsSync(join(dataDir, 'stress', '10.0.0.0-16.json.lock')));
    assert.equal(children.filter((c) => c.proc.exitCode !== null).length, 0, 'a claimer gave up or failed');
    const killedAt = Date.now();
    lockHolder.proc.kill('SIGKILL');
    const exits = await Promise.all(children.map((c) => c.exited));
    assert.deepEqual(
      exits.map((e, i) => (e.code === 0 ? 0 : children[i]?.output)),
      exits.map(() => 0),
    );
    const firstDone = Math.min(...exits.map((e) => e.at)) - killedAt;
    t.diagnostic(`claims done ${firstDone}-${Math.max(...exits.map((e) => e.at)) - killedAt} ms after the kill`);
    const addresses = claimedAddresses(children);
    assert.equal(new Set(addresses).size, PROCESSES);
    // The dead holder's lock was taken over because its pid had exited (a debug line), not once it had gone without
    // a refresh for the stale window (a warning): that is what "at once" means, however long the claims took.
    const takeovers = children.flatMap((c) => c.output.split('\n').filter((line) => line.includes('taking it over')));
    const byLiveness = new RegExp(`^debug: lock .*: pid ${lockHolder.proc.pid} has exited.*; taking it over$`);
    assert.ok(
      takeovers.some((line) => byLiveness.test(line)),
      `no claimer took the lock over from the dead holder:\n${takeovers.join('\n')}`,
    );
    assert.deepEqual(
      children.flatMap((c) => c.output.split('\n').filter((line) => line.startsWith('warning: '))),
      [],
      'no takeover by age',
    );
  },
);
