// The generated hostile corpus (corpus.ts) on the local store: most of it in-process, through runPlugin (the function
// the executable's CNI mode runs, with its real file-system effects in a sandbox), and every 16th case through the
// packaged executable under /usr/bin/time. Each answer must be a CNI error JSON or a valid result, no stack trace, no
// internal error, within a time bound; no file outside the operator-allowed directory changes; the executable's peak
// RSS stays < 256 MiB (measured per process; the in-process RSS, which holds the test runner's garbage, is reported).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPlugin } from '../../src/cni/plugin.ts';
import { requireBinary } from '../support/paths.ts';
import { envOf, generate, makeSandbox, type HostileCase, type Sandbox } from './corpus.ts';
import { changes, judge, protectedState, type Verdict } from './judge.ts';

const COUNT = 5200;
const EXECUTABLE_EVERY = 16;
const BOUND_MS = 5000;
const RSS_LIMIT = 256 * 1024 * 1024;

async function inProcess(s: Sandbox, c: HostileCase): Promise<Verdict> {
  let stdout = '';
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), BOUND_MS)));
  const run = runPlugin({
    env: envOf(s, c),
    stdin: Buffer.from(c.stdin),
    stdout: (t) => void (stdout += t),
    stderr: () => undefined,
  });
  const exit = await Promise.race([run, bound]);
  clearTimeout(timer);
  if (exit === 'timeout') return { ok: false, code: -1, why: `no answer within ${BOUND_MS} ms` };
  return judge(c.verb, exit, stdout);
}

function viaExecutable(s: Sandbox, c: HostileCase, scratch: string): Promise<Verdict & { rss: number }> {
  const rssFile = join(scratch, `rss-${c.id}`);
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', '%M', '-o', rssFile, requireBinary()], {
      env: envOf(s, c),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let stdout = '';
    let killed = false;
    const timer = setTimeout(() => ((killed = true), child.kill('SIGKILL')), BOUND_MS * 2);
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const rss = Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()) * 1024;
      if (killed) resolve({ ok: false, code: -1, why: 'killed after the time bound', rss });
      else resolve({ ...judge(c.verb, code, stdout), rss });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(c.stdin);
  });
}

test(
  `${COUNT} hostile configs on the local store: CNI answers only, nothing outside the allowed directory changes, bounded time and memory`,
  // Only a guard against a hung run: each case has its own bound (BOUND_MS), which is the property under test. The
  // whole run takes ~50 s on a quiet 2-core machine and several times that under load; that is not a failure.
  { timeout: 900_000 },
  async (t) => {
    const s = makeSandbox();
    const scratch = mkdtempSync(join(tmpdir(), 'hab-corpus-rss-'));
    const before = protectedState(s);
    const codes = new Map<number, number>();
    const failures: string[] = [];
    let maxRss = 0;
    let viaExe = 0;
    let exeMaxRss = 0;
    const started = Date.now();
    let count = 0;
    const exeCases: HostileCase[] = [];
    for (const c of generate(s, COUNT)) {
      count++;
      // Every 16th case, and every 4th of the memory-heavy ones, also through the executable (its RSS is measured).
      if (c.id % EXECUTABLE_EVERY === 0 || (c.id % 4 === 0 && /huge|nested 20000|many/.test(c.what.join(' '))))
        exeCases.push(c);
      const verdict = await inProcess(s, c);
      codes.set(verdict.code, (codes.get(verdict.code) ?? 0) + 1);
      if (!verdict.ok) failures.push(`#${c.id} ${c.verb} [${c.what.join('; ')}]: ${verdict.why}`);
      if (c.id % 250 === 0) maxRss = Math.max(maxRss, process.memoryUsage().rss);
    }
    const inProcessMs = Date.now() - started;
    for (let i = 0; i < exeCases.length; i += 3) {
      const batch = exeCases.slice(i, i + 3);
      for (const [k, verdict] of (await Promise.all(batch.map((c) => viaExecutable(s, c, scratch)))).entries()) {
        const c = batch[k] as HostileCase;
        viaExe++;
        exeMaxRss = Math.max(exeMaxRss, verdict.rss);
        if (!verdict.ok) failures.push(`executable #${c.id} ${c.verb} [${c.what.join('; ')}]: ${verdict.why}`);
        if (verdict.rss >= RSS_LIMIT) failures.push(`executable #${c.id}: RSS ${verdict.rss} bytes`);
      }
    }
    const changed = changes(before, protectedState(s));
    t.diagnostic(
      `corpus: ${count} configs in-process (${inProcessMs} ms, max RSS ${(maxRss / 1048576).toFixed(0)} MiB), ` +
        `${viaExe} through the executable (max RSS ${(exeMaxRss / 1048576).toFixed(0)} MiB); answers by code: ` +
        [...codes]
          .sort(([a], [b]) => a - b)
          .map(([code, n]) => `${code}:${n}`)
          .join(' '),
    );
    rmSync(scratch, { recursive: true, force: true });
    assert.ok(count >= 5000, `only ${count} configs`);
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} bad answers`);
    assert.deepEqual(changed, [], 'files changed outside the allowed directory');
    rmSync(s.root, { recursive: true, force: true });
  },
);
