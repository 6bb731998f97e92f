// The call-stats record: what the plugin appends is what the folder reads back, and a torn record is never
// mistaken for a whole one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRecord, networkOf, parseRecord } from '../../../src/cni/call-record.ts';

test('formatRecord() and parseRecord() round-trip a call', () => {
  const line = formatRecord({ verb: 'ADD', outcome: '11', micros: 1234.6, network: 'net-a.1' });
  assert.equal(line, '#1 ADD 11 1235 net-a.1\n');
  assert.deepEqual(parseRecord(line.slice(0, -1)), { verb: 'ADD', outcome: '11', micros: 1235, network: 'net-a.1' });
});

test('a network name that is not a CNI name is recorded as "-" (nothing to escape, no newline)', () => {
  assert.equal(networkOf('a b'), '-');
  assert.equal(networkOf('x\n#1 ADD ok 1 forged'), '-');
  assert.equal(networkOf('a'.repeat(300)), '-');
  assert.equal(networkOf(undefined), '-');
  assert.equal(formatRecord({ verb: 'DEL', outcome: 'ok', micros: 5, network: '{evil="1"}' }), '#1 DEL ok 5 -\n');
});

test('parseRecord() reads only what follows the last "#": a fragment torn by a killed writer is dropped', () => {
  assert.deepEqual(parseRecord('#1 ADD ok 12#1 DEL ok 5 net'), {
    verb: 'DEL',
    outcome: 'ok',
    micros: 5,
    network: 'net',
  });
  assert.equal(parseRecord('#1 ADD ok 12'), undefined);
  assert.equal(parseRecord('#1 ADD ok'), undefined);
  assert.equal(parseRecord('garbage'), undefined);
  assert.equal(parseRecord('#2 ADD ok 1 net'), undefined);
});
