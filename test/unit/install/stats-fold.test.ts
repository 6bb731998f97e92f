// The folder counts every whole record of the call-stats file once: across folds, across a rotation (a writer that
// opened the file before the rename still appends to the renamed one), across a restart (the saved offset), and it
// skips a torn tail instead of mis-reading it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, openSync, closeSync, writeSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatsFolder } from '../../../src/install/stats-fold.ts';
import { formatRecord, type CallRecord } from '../../../src/cni/call-record.ts';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'hab-fold-'));
const line = (i: number, network = 'n'): string =>
  formatRecord({ verb: i % 2 === 0 ? 'ADD' : 'DEL', outcome: 'ok', micros: i, network });

function folder(dir: string, seen: CallRecord[], clock: { now: number }, maxBytes = 1 << 20): StatsFolder {
  return new StatsFolder({ dir, maxBytes, drainMs: 1000, now: () => clock.now }, (r) => void seen.push(r));
}

test('fold() reads only what was appended since the last fold, and waits for a record without its newline', () => {
  const dir = scratch();
  const seen: CallRecord[] = [];
  const f = folder(dir, seen, { now: 0 });
  appendFileSync(join(dir, 'calls'), line(1) + line(2));
  assert.equal(f.fold().records, 2);
  appendFileSync(join(dir, 'calls'), line(3) + '#1 ADD ok 4');
  assert.equal(f.fold().records, 1);
  appendFileSync(join(dir, 'calls'), ' n\n');
  assert.deepEqual(f.fold(), { records: 1, skipped: 0, rotated: false });
  assert.deepEqual(
    seen.map((r) => r.micros),
    [1, 2, 3, 4],
  );
});

test('a torn fragment followed by a whole record: the record counts, the fragment is skipped', () => {
  const dir = scratch();
  const seen: CallRecord[] = [];
  appendFileSync(join(dir, 'calls'), '#1 ADD ok 12' + line(7));
  assert.deepEqual(folder(dir, seen, { now: 0 }).fold(), { records: 1, skipped: 0, rotated: false });
  assert.equal(seen[0]?.micros, 7);
});

test('rotation: lines written to the renamed file by a writer that opened it before are counted, once', () => {
  const dir = scratch();
  const seen: CallRecord[] = [];
  const clock = { now: 0 };
  const f = folder(dir, seen, clock, 64);
  const calls = join(dir, 'calls');
  for (let i = 0; i < 5; i++) appendFileSync(calls, line(i));
  // A plugin that opened calls before the rotation and writes after it.
  const late = openSync(calls, constants.O_WRONLY | constants.O_APPEND);
  const result = f.fold();
  assert.equal(result.records, 5);
  assert.equal(result.rotated, true);
  assert.ok(existsSync(join(dir, 'calls.1')) && !existsSync(calls));
  writeSync(late, line(100) + '#1 ADD ok 9');
  closeSync(late);
  appendFileSync(calls, line(200)); // a plugin after the rotation: a new file
  assert.equal(f.fold().records, 2);
  clock.now = 2000; // past drainMs: the last read of calls.1 takes the torn tail as skipped, then removes it
  assert.deepEqual(f.fold(), { records: 0, skipped: 1, rotated: false });
  assert.equal(existsSync(join(dir, 'calls.1')), false);
  assert.deepEqual(
    seen.map((r) => r.micros).sort((a, b) => a - b),
    [0, 1, 2, 3, 4, 100, 200],
  );
});

test('a new folder (a restarted pod) resumes at the saved offset instead of counting the file again', () => {
  const dir = scratch();
  const seen: CallRecord[] = [];
  appendFileSync(join(dir, 'calls'), line(1) + line(2));
  folder(dir, seen, { now: 0 }).fold();
  appendFileSync(join(dir, 'calls'), line(3));
  const again: CallRecord[] = [];
  assert.equal(folder(dir, again, { now: 0 }).fold().records, 1);
  assert.deepEqual(
    again.map((r) => r.micros),
    [3],
  );
});

test('a calls.1 the saved state does not know is drained, not overwritten by the next rotation', () => {
  const dir = scratch();
  const seen: CallRecord[] = [];
  appendFileSync(join(dir, 'calls.1'), line(1));
  appendFileSync(join(dir, 'calls'), line(2) + line(3));
  const clock = { now: 0 };
  const f = folder(dir, seen, clock, 10);
  assert.equal(f.fold().rotated, false, 'no rotation while calls.1 drains');
  clock.now = 5000;
  f.fold();
  assert.deepEqual(seen.map((r) => r.micros).sort(), [1, 2, 3]);
});
