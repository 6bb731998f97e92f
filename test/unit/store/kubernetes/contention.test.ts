import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContentionMemory } from '../../../../src/store/kubernetes/contention.ts';

test('a pool counts as contended from its collision until the memory runs out', () => {
  const memory = new ContentionMemory(1_000);
  assert.equal(memory.contended('ns/p', 0), false);
  memory.mark('ns/p', 100);
  assert.equal(memory.contended('ns/p', 100), true);
  assert.equal(memory.contended('ns/p', 1_099), true);
  assert.equal(memory.contended('ns/other', 500), false);
  assert.equal(memory.contended('ns/p', 1_100), false);
  assert.equal(memory.contended('ns/p', 200), false, 'forgotten once expired');
});

test('a later collision extends the memory', () => {
  const memory = new ContentionMemory(1_000);
  memory.mark('ns/p', 0);
  memory.mark('ns/p', 900);
  assert.equal(memory.contended('ns/p', 1_500), true);
});

test('the memory is bounded: the pool least recently marked is forgotten first', () => {
  const memory = new ContentionMemory(1_000_000);
  for (let i = 0; i <= 1_024; i++) memory.mark(`ns/p${i}`, i);
  assert.equal(memory.contended('ns/p0', 2_000), false);
  assert.equal(memory.contended('ns/p1', 2_000), true);
  assert.equal(memory.contended('ns/p1024', 2_000), true);
});

test('a mark taken over from the node cache lasts what is left of it, at most the memory span, and never shortens one', () => {
  const memory = new ContentionMemory(1_000);
  memory.mark('ns/p', 0, 300);
  assert.equal(memory.remainingMs('ns/p', 100), 200);
  memory.mark('ns/p', 100, 50);
  assert.equal(memory.remainingMs('ns/p', 100), 200, 'a shorter mark keeps the longer one');
  memory.mark('ns/far', 0, 10_000_000);
  assert.equal(memory.remainingMs('ns/far', 0), 1_000, 'a wall-clock time far ahead counts as a fresh mark');
  assert.equal(memory.remainingMs('ns/p', 300), 0);
  assert.equal(memory.remainingMs('ns/none', 0), 0);
});
