// Temp files are swept only when their writer is provably gone: judged by its pid in its own pid namespace. A
// sweeper that cannot judge the writer (another pid namespace) leaves the file, and a live writer keeps its temp file
// however long it stalls. Real writers (writeFileAtomic stalled before its rename); the other namespace is real too
// (unshare, as root).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sweepStaleTemps, tempSuffix } from '../../../src/fs/stale-temps.ts';
import { embeddedNode, repoRoot } from '../../support/paths.ts';

const moduleUrl = (path: string): string => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hab-temps-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Writer {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** A writer that replaces `file` with writeFileAtomic and stalls after the temp file is durable, until `go` exists. */
async function stalledWriter(t: TestContext, file: string, go: string): Promise<Writer> {
  const script = `
    const { writeFileAtomic } = await import(${moduleUrl('src/fs/atomic-write.ts')});
    const { existsSync, writeSync } = await import('node:fs');
    const pause = new Int32Array(new SharedArrayBuffer(4));
    writeFileAtomic(${JSON.stringify(file)}, 'new\\n', { mode: 0o600, beforeCommit: () => {
      writeSync(1, 'written\\n');
      while (!existsSync(${JSON.stringify(go)})) Atomics.wait(pause, 0, 0, 20);
    } });
    writeSync(1, 'committed\\n');
  `;
  const child = spawn(embeddedNode, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let text = '';
  child.stdout.on('data', (b: Buffer) => (text += b.toString()));
  child.stderr.on('data', (b: Buffer) => (text += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => {
      if (text.includes('written')) resolve();
    });
    void exited.then((code) => reject(new Error(`the writer exited (${code}): ${text}`)));
  });
  return { child, output: () => text, exited };
}

const tempsIn = (dir: string): string[] => readdirSync(dir).filter((n) => n.includes('.tmp-'));

test("a sweeper in another pid namespace leaves a live writer's temp file, and the write completes", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'pool.json');
  writeFileSync(file, 'old\n');
  const go = join(dir, 'go');
  const writer = await stalledWriter(t, file, go);
  const [temp] = tempsIn(dir);
  assert.ok(temp !== undefined, 'the writer has its temp file');
  const script = `
    const { sweepStaleTemps } = await import(${moduleUrl('src/fs/stale-temps.ts')});
    process.stdout.write(JSON.stringify(sweepStaleTemps(${JSON.stringify(dir)})));
  `;
  const sweep = spawnSync(
    'unshare',
    ['--pid', '--fork', '--mount-proc', '--kill-child', embeddedNode, '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  );
  if (sweep.status !== 0 && /Operation not permitted|cannot/i.test(sweep.stderr))
    return t.skip(`no pid namespace of our own here: ${sweep.stderr.trim()}`);
  assert.equal(sweep.status, 0, sweep.stderr);
  assert.deepEqual(JSON.parse(sweep.stdout), [], 'the sweeper removed nothing');
  assert.deepEqual(tempsIn(dir), [temp]);
  writeFileSync(go, '');
  assert.equal(await writer.exited, 0, writer.output());
  assert.equal(readFileSync(file, 'utf8'), 'new\n');
});

test("a killed writer's temp file is swept at once by a sweeper in its pid namespace", async (t) => {
  const dir = tempDir(t);
  const writer = await stalledWriter(t, join(dir, 'pool.json'), join(dir, 'never'));
  const [temp] = tempsIn(dir);
  writer.child.kill('SIGKILL');
  await writer.exited;
  assert.deepEqual(sweepStaleTemps(dir), [temp]);
  assert.deepEqual(tempsIn(dir), []);
});

test('a live writer keeps its temp file however long it stalls', (t) => {
  // The longest-lived writer at hand: pid 1 of this namespace, as if it had written the file 11 minutes ago (once a
  // window after which a live writer's temp file counted as abandoned).
  const dir = tempDir(t);
  const stat = readFileSync('/proc/1/stat', 'utf8');
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const btime = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
  const writtenMs = Date.now() - 11 * 60_000;
  if (btime * 1000 + ticks * 10 + 1000 > writtenMs) return t.skip('pid 1 started less than 11 minutes ago');
  const name = `.pool.json.tmp-${tempSuffix(1)}`;
  closeSync(openSync(join(dir, name), 'w'));
  utimesSync(join(dir, name), writtenMs / 1000, writtenMs / 1000);
  assert.deepEqual(sweepStaleTemps(dir), []);
  assert.deepEqual(tempsIn(dir), [name]);
});

test('a temp file whose pid now belongs to a process started after it was written is swept', (t) => {
  const dir = tempDir(t);
  const later = spawn('sleep', ['60']);
  t.after(() => later.kill('SIGKILL'));
  assert.ok(later.pid !== undefined);
  const name = `.pool.json.tmp-${tempSuffix(later.pid)}`;
  const path = join(dir, name);
  closeSync(openSync(path, 'w'));
  const hourAgo = (Date.now() - 3_600_000) / 1000;
  utimesSync(path, hourAgo, hourAgo);
  assert.deepEqual(sweepStaleTemps(dir), [name]);
});

test('a temp file that names another pid namespace is never swept, however old', (t) => {
  const dir = tempDir(t);
  const dead = spawnSync('true').pid;
  const name = `.pool.json.tmp-${dead}-4026530001-abcdef`;
  const path = join(dir, name);
  closeSync(openSync(path, 'w'));
  const dayAgo = (Date.now() - 86_400_000) / 1000;
  utimesSync(path, dayAgo, dayAgo);
  assert.deepEqual(sweepStaleTemps(dir), []);
  assert.deepEqual(tempsIn(dir), [name]);
});
