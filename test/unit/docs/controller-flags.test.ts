// The controller's flags as docs/controller.md's table and `hereabouts controller --help` give them, against the
// parser (src/cli/controller.ts CONTROLLER_FLAGS): every flag has a row, and every default either states is the one
// the parser applies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTROLLER_FLAGS, CONTROLLER_USAGE } from '../../../src/cli/controller.ts';
import { repoRoot } from '../../support/paths.ts';

const flags = Object.entries(CONTROLLER_FLAGS) as Array<[string, { readonly default?: string | boolean }]>;
const withDefaults = flags.flatMap(([name, spec]) => (spec.default === undefined ? [] : [[name, String(spec.default)]]));

/** The docs table's rows: flag name -> its default cell. */
function docRows(text: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const m of text.matchAll(/^\| (?:`-\w`, )?`--([a-z-]+)(?: [A-Z]+)?` \|\s*([^|]*?)\s*\|/gm)) rows.set(m[1] ?? '', (m[2] ?? '').trim());
  return rows;
}

/** The help text of one flag: its line and the continuation lines under it. */
function helpOf(usage: string, flag: string): string {
  const lines = usage.split('\n');
  const at = lines.findIndex((l) => new RegExp(`^\\s+(-\\w, )?--${flag}(?=[\\s=])`).test(l));
  if (at === -1) return '';
  const more = lines.slice(at + 1).findIndex((l) => !/^\s{20,}\S/.test(l));
  return lines
    .slice(at, more === -1 ? undefined : at + 1 + more)
    .join(' ')
    .replace(/\s+/g, ' ');
}

const doc = readFileSync(join(repoRoot, 'docs', 'controller.md'), 'utf8');

test('the parser has defaults to check (so the checks below can fail)', () => {
  assert.ok(withDefaults.length > 10);
  assert.equal(docRows('| `--x-y D` | `1s` | z |').get('x-y'), '`1s`');
  assert.match(helpOf('  --a-b D   text (default 5s)\n                       more\n  --c', 'a-b'), /more/);
});

test('every flag of hereabouts controller has a row in docs/controller.md, with the default the parser applies', () => {
  const rows = docRows(doc);
  assert.deepEqual(flags.map(([name]) => name).filter((name) => !rows.has(name)), []);
  const wrong = withDefaults.filter(([name, value]) => rows.get(name ?? '') !== `\`${value ?? ''}\``);
  assert.deepEqual(wrong.map(([name, value]) => `--${name}: ${rows.get(name ?? '') ?? ''}, parser ${value ?? ''}`), []);
});

test("hereabouts controller --help states each default as the parser applies it", () => {
  const wrong = withDefaults.filter(([name, value]) => {
    const help = helpOf(CONTROLLER_USAGE, name ?? '');
    return !help.includes(`default ${value ?? ''}`) && !help.includes(`"${value ?? ''}" (default)`);
  });
  assert.deepEqual(wrong.map(([name, value]) => `--${name} (parser: ${value ?? ''}): ${helpOf(CONTROLLER_USAGE, name ?? '')}`), []);
});
