// `hereabouts install`'s flags as docs/install.md's table gives them, against the parser (src/cli/install.ts
// INSTALL_FLAGS): every flag has a row, and a row's defaults, where it states them as literals (one per flag of the
// row, in order), are the parser's. A default the docs describe in words ("the running executable") is not compared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_FLAGS } from '../../../src/cli/install.ts';
import { repoRoot } from '../../support/paths.ts';

interface Row {
  readonly flags: readonly string[];
  /** The row's default literals, or undefined when the cell is not just literals. */
  readonly defaults: readonly string[] | undefined;
}

/** The flag table's rows: `| \`--a\`, \`--b\` | \`x\`, \`y\` | ... |`. */
function rowsOf(text: string): Row[] {
  const rows: Row[] = [];
  for (const line of text.split('\n')) {
    const cells = /^\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|/.exec(line);
    if (cells === null) continue;
    const flags = [...(cells[1] ?? '').matchAll(/`--([a-z-]+)`/g)].map((m) => m[1] ?? '');
    if (flags.length === 0) continue;
    const cell = (cells[2] ?? '').trim();
    const literal = /^`[^`]*`(, `[^`]*`)*$/.test(cell);
    rows.push({ flags, defaults: literal ? [...cell.matchAll(/`([^`]*)`/g)].map((m) => m[1] ?? '') : undefined });
  }
  return rows;
}

const table = ((): string => {
  const doc = readFileSync(join(repoRoot, 'docs', 'install.md'), 'utf8');
  const start = doc.indexOf('Flags (`hereabouts install --help`):');
  return doc.slice(start, doc.indexOf('\n\n', doc.indexOf('| flag |', start)));
})();
const flags = INSTALL_FLAGS as Readonly<Record<string, { readonly default?: string | boolean }>>;

test('the table reader finds flags and literal defaults (so the checks below can fail)', () => {
  assert.deepEqual(rowsOf('| `--a`, `--b` | `1`, `2` | x |\n| `--c` | off | y |'), [
    { flags: ['a', 'b'], defaults: ['1', '2'] },
    { flags: ['c'], defaults: undefined },
  ]);
  assert.ok(rowsOf(table).length > 10);
});

test('every flag of hereabouts install has a row in docs/install.md', () => {
  const documented = new Set(rowsOf(table).flatMap((r) => r.flags));
  assert.deepEqual(Object.keys(flags).filter((name) => !documented.has(name)), []);
});

test("the defaults docs/install.md states as literals are the parser's", () => {
  const wrong: string[] = [];
  for (const row of rowsOf(table)) {
    if (row.defaults === undefined) continue;
    assert.equal(row.defaults.length, row.flags.length, `one default per flag: ${row.flags.join(', ')}`);
    row.flags.forEach((name, i) => {
      const parsed = flags[name]?.default;
      if (String(parsed) !== row.defaults?.[i]) wrong.push(`--${name}: docs ${row.defaults?.[i] ?? ''}, parser ${String(parsed)}`);
    });
  }
  assert.deepEqual(wrong, []);
});
