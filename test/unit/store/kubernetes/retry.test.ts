import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONFLICT, retryOnConflict } from '../../../../src/kube/retry.ts';

test('retryOnConflict() returns the first non-conflict value and counts the conflicts before it', async () => {
  const seen: number[] = [];
  const out = await retryOnConflict((n) => (seen.push(n), Promise.resolve(n < 3 ? CONFLICT : `value ${n}`)), {
    attempts: 10,
    baseMs: 1,
    capMs: 2,
  });
  assert.deepEqual(out, { kind: 'done', value: 'value 3', conflicts: 3 });
  assert.deepEqual(seen, [0, 1, 2, 3]);
});

test('retryOnConflict() stops after the attempt count', async () => {
  let calls = 0;
  const out = await retryOnConflict(() => (calls++, Promise.resolve(CONFLICT)), { attempts: 4, baseMs: 1, capMs: 2 });
  assert.deepEqual(out, { kind: 'exhausted', conflicts: 4 });
  assert.equal(calls, 4);
});

test('retryOnConflict() stops when the time budget is spent', async () => {
  let calls = 0;
  const out = await retryOnConflict(() => (calls++, Promise.resolve(CONFLICT)), { budgetMs: 30, baseMs: 5, capMs: 10 });
  assert.equal(out.kind, 'exhausted');
  assert.ok(calls >= 2, `expected several attempts within the budget, got ${calls}`);
});

test('retryOnConflict() asks proceed() before every attempt', async () => {
  let calls = 0;
  const out = await retryOnConflict(() => (calls++, Promise.resolve(CONFLICT)), {
    attempts: 10,
    baseMs: 1,
    capMs: 2,
    proceed: () => calls < 2,
  });
  assert.deepEqual(out, { kind: 'stopped', conflicts: 2 });
});

test('retryOnConflict() refuses an unbounded loop', async () => {
  await assert.rejects(
    retryOnConflict(() => Promise.resolve(CONFLICT), {}),
    TypeError,
  );
});

test('retryOnConflict() with stepFromAttempt waits at least twice as long as the refused attempt took, doubling, up to capMs', async () => {
  const starts: number[] = [];
  const ends: number[] = [];
  const out = await retryOnConflict(
    async (n) => {
      starts.push(performance.now());
      await new Promise((resolve) => setTimeout(resolve, 40)); // a slow write, as under load
      ends.push(performance.now());
      return n < 3 ? CONFLICT : 'landed';
    },
    { attempts: 10, baseMs: 1, capMs: 200, stepFromAttempt: true },
  );
  assert.deepEqual(out, { kind: 'done', value: 'landed', conflicts: 3 });
  const waits = starts.slice(1).map((s, i) => s - (ends[i] ?? 0));
  // Equal jitter over [step/2, step]: step = 2 * 40 * 2^n ms (160, then the cap of 200).
  assert.ok((waits[0] ?? 0) >= 78, `first wait ${waits[0]} ms is not shorter than two attempts`);
  assert.ok((waits[1] ?? 0) >= 98, `second wait ${waits[1]} ms`);
  assert.ok((waits[2] ?? 0) >= 98 && (waits[2] ?? 0) < 260, `third wait ${waits[2]} ms stays within the cap`);
  const plain: number[] = [];
  let last = 0;
  await retryOnConflict(
    async (n) => {
      if (n > 0) plain.push(performance.now() - last);
      await new Promise((resolve) => setTimeout(resolve, 40));
      last = performance.now();
      return n < 1 ? CONFLICT : 'landed';
    },
    { attempts: 3, baseMs: 1, capMs: 200 },
  );
  assert.ok((plain[0] ?? Infinity) < 30, `without it the first wait stays near baseMs (${plain[0]} ms)`);
});
