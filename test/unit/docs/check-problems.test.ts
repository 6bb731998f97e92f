// docs/operations.md's tables of what `hereabouts check` reports are its kinds (src/cli/check-report.ts): every problem
// kind and every notice kind has a row, and no row names a kind the command does not report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NOTICE_KINDS, PROBLEM_KINDS } from '../../../src/cli/check-report.ts';
import { repoRoot } from '../../support/paths.ts';

/** The first cells of the table headed `| <first> | meaning |` in the check section. */
function rowsOf(first: string): string[] {
  const doc = readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8');
  const start = doc.indexOf('## `hereabouts check`');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const lines = section.split('\n');
  const header = lines.indexOf(`| ${first} | meaning |`);
  assert.ok(header !== -1, `a table headed ${first} in the check section`);
  const rows: string[] = [];
  for (const line of lines.slice(header + 2)) {
    const cell = /^\| `([a-z-]+)` \|/.exec(line)?.[1];
    if (cell === undefined) break;
    rows.push(cell);
  }
  return rows;
}

test('every problem hereabouts check reports has a row in docs/operations.md, and only those', () => {
  assert.deepEqual(rowsOf('problem').sort(), [...PROBLEM_KINDS].sort());
});

test('every notice hereabouts check reports has a row in docs/operations.md, and only those', () => {
  assert.deepEqual(rowsOf('notice').sort(), [...NOTICE_KINDS].sort());
});
