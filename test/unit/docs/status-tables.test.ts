// The `hereabouts status` tables the docs show are what the command prints for the rows they show: formatTable()
// (src/cli/status-report.ts) given those rows reproduces each table line for line, so a column the docs leave out,
// add, reorder or misalign fails here. Cells hold no spaces; a column a table leaves out reads as 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatTable, type PoolRow, type SliceRow, type StatusReport } from '../../../src/cli/status-report.ts';
import { repoRoot } from '../../support/paths.ts';

interface Shown {
  readonly where: string;
  readonly text: string;
}

/** Every table in the docs that starts as `status` prints one: its lines up to the end of the code block. */
function shownTables(): Shown[] {
  const files = ['README.md', ...readdirSync(join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  const shown: Shown[] = [];
  for (const file of files) {
    const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (!/^namespace \S+: \d+ pool\(s\)$/.test(line)) return;
      const end = lines.indexOf('```', i);
      shown.push({ where: `${file}:${i + 1}`, text: `${lines.slice(i, end).join('\n')}\n` });
    });
  }
  return shown;
}

/** Reads a shown table back into the report it shows. */
function reportOf(text: string): StatusReport {
  const [title = '', ...rest] = text.trimEnd().split('\n');
  const namespace = /^namespace (\S+):/.exec(title)?.[1] ?? '';
  const blank = rest.indexOf('');
  const poolLines = blank === -1 ? rest : rest.slice(0, blank);
  const [header = '', ...rows] = poolLines;
  const columns = header.split(/\s+/);
  const pools: PoolRow[] = rows.map((row) => {
    const cells = row.split(/\s+/);
    const cell = (name: string): string => cells[columns.indexOf(name)] ?? '0';
    const count = (name: string): number => Number(cell(name));
    const big = (name: string): bigint | null => (cell(name) === '?' ? null : BigInt(cell(name)));
    const node = cell('NODE');
    return {
      name: cell('POOL'),
      range: cell('RANGE'),
      capacity: big('CAPACITY'),
      used: count('USED'),
      warm: count('WARM'),
      claims: count('CLAIMS'),
      prefixes: count('PREFIXES'),
      sticky: count('STICKY'),
      free: big('FREE'),
      orphans: cell('ORPHANS') === '?' ? null : count('ORPHANS'),
      ...(node === '-' || node === '0' ? {} : { node }),
      problems: [],
    };
  });
  const after = blank === -1 ? [] : rest.slice(blank + 1);
  const slices: SliceRow[] = [];
  const warnings: string[] = [];
  if (after[0] === 'node slices:') {
    for (const row of after.slice(2)) {
      if (row.startsWith('warning: ')) warnings.push(row.slice('warning: '.length));
      else {
        const [network = '', range = '', sliceSize = '', assigned = '0', free = '0'] = row.split(/\s+/);
        slices.push({ network, range, sliceSize, assigned: Number(assigned), free: Number(free), nodes: [] });
      }
    }
  }
  return { namespace, pools, slices, warnings };
}

test('the docs show status tables (so the check below reads some)', () => {
  assert.ok(shownTables().length >= 2, JSON.stringify(shownTables().map((s) => s.where)));
});

test('every status table in the docs is what hereabouts status prints for its rows', () => {
  for (const { where, text } of shownTables()) assert.equal(text, formatTable(reportOf(text)), where);
});

test('the check catches a table without a column the command prints', () => {
  const printed = formatTable({
    namespace: 'demo',
    pools: [{ name: 'p', range: '10.0.0.0/24', capacity: 254n, used: 1, warm: 0, claims: 0, prefixes: 0, sticky: 0, free: 253n, orphans: 0, problems: [] }],
    slices: [],
    warnings: [],
  });
  const withoutWarm = printed.replace(/ WARM +/, ' ').replace(/(1 +)0 +/, '$1');
  assert.notEqual(withoutWarm, printed);
  assert.notEqual(formatTable(reportOf(withoutWarm)), withoutWarm);
  assert.equal(formatTable(reportOf(printed)), printed);
});
