import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONFLICT, retryOnConflict } from '../../../../src/store/kubernetes/retry.ts';

test('retryOnConflict() returns the first non-conflict value and counts the conflicts before it', async () => {
  const seen: number[] = [];
  const out = await retryOnConflict(async (n) => (seen.push(n), n < 3 ? CONFLICT : `value ${n}`), { attempts: 10, baseMs: 1, capMs: 2 });
  assert.deepEqual(out, { kind: 'done', value: 'value 3', conflicts: 3 });
  assert.deepEqual(seen, [0, 1, 2, 3]);
});

test('retryOnConflict() stops after the attempt count', async () => {
  let calls = 0;
  const out = await retryOnConflict(async () => (calls++, CONFLICT), { attempts: 4, baseMs: 1, capMs: 2 });
  assert.deepEqual(out, { kind: 'exhausted', conflicts: 4 });
  assert.equal(calls, 4);
});

test('retryOnConflict() stops when the time budget is spent', async () => {
  let calls = 0;
  const out = await retryOnConflict(async () => (calls++, CONFLICT), { budgetMs: 30, baseMs: 5, capMs: 10 });
  assert.equal(out.kind, 'exhausted');
  assert.ok(calls >= 2, `expected several attempts within the budget, got ${calls}`);
});

test('retryOnConflict() asks proceed() before every attempt', async () => {
  let calls = 0;
  const out = await retryOnConflict(async () => (calls++, CONFLICT), { attempts: 10, baseMs: 1, capMs: 2, proceed: () => calls < 2 });
  assert.deepEqual(out, { kind: 'stopped', conflicts: 2 });
});

test('retryOnConflict() refuses an unbounded loop', async () => {
  await assert.rejects(retryOnConflict(async () => CONFLICT, {}), TypeError);
});
