// The Events the controller emits (src/controller: every `.emit(object, type, reason, ...)` whose reason is a literal
// or a constant) are each named in docs/controller.md's "Logs and events" section. Reasons read from a condition
// (a claim's) are the conditions docs/capi.md lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../../support/paths.ts';

const sources = readdirSync(join(repoRoot, 'src', 'controller'), { withFileTypes: true, recursive: true })
  .filter((e) => e.isFile() && e.name.endsWith('.ts'))
  .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));
const all = sources.join('\n');

/**
 * The reasons `text` emits: the literals of each reason expression (a conditional gives two), and constants resolved
 * where some source defines them. A reason read from a value (a claim's condition) is not a name to find here.
 */
function emitted(text: string, everywhere: string): string[] {
  const reasons: string[] = [];
  for (const m of text.matchAll(/\.emit\(\s*[^;]*?,\s*'(?:Normal|Warning)',\s*([^,]+),/gs)) {
    const expression = (m[1] ?? '').trim();
    const literals = [...expression.matchAll(/'([A-Z]\w+)'/g)].map((l) => l[1] ?? '');
    if (literals.length > 0) reasons.push(...literals);
    else if (/^[A-Z][A-Z_]+$/.test(expression)) {
      const value = new RegExp(`const ${expression} = '([A-Z]\\w+)'`).exec(everywhere)?.[1];
      assert.ok(value !== undefined, `the constant ${expression} is defined as a reason`);
      reasons.push(value);
    }
  }
  return [...new Set(reasons)].sort();
}

const section = ((): string => {
  const doc = readFileSync(join(repoRoot, 'docs', 'controller.md'), 'utf8');
  const start = doc.indexOf('## Logs and events');
  return doc.slice(start, doc.indexOf('\n## ', start + 1));
})();

test('the extraction finds literal and constant reasons (so the check below can fail)', () => {
  const sample =
    "await x.emit(\n  obj,\n  'Warning',\n  'SomeReason',\n  m);\nawait y.emit(o, 'Normal', OTHER_REASON, m);\n" +
    "await z.emit(o, 'Normal', left ? 'Gone' : 'Kept', m);\nawait w.emit(o, 'Warning', ready.reason, m);";
  assert.deepEqual(emitted(sample, "const OTHER_REASON = 'Other';"), ['Gone', 'Kept', 'Other', 'SomeReason']);
  assert.ok(emitted(all, all).length >= 10, emitted(all, all).join(' '));
});

test("every Event reason the controller emits is named in docs/controller.md's Logs and events", () => {
  assert.deepEqual(
    emitted(all, all).filter((reason) => !section.includes(`\`${reason}\``)),
    [],
    relative(repoRoot, join(repoRoot, 'docs', 'controller.md')),
  );
});
