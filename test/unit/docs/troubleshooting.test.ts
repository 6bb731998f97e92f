// docs/troubleshooting.md explains every CNI error code the plugin can return: each CniCode that the CNI edge raises,
// and the code of each error kind (src/errors.ts) that some module of src/ raises, has a row in its table, and the
// table lists no code that nothing raises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CniCode, cniCodeOf } from '../../../src/cni/errors.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { repoRoot } from '../../support/paths.ts';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

test('every CNI error code raised in src/ has a row in docs/troubleshooting.md, and no other code does', () => {
  const code = Object.entries(CniCode) as Array<[string, number]>;
  const used = new Set<number>();
  const kinds = Object.entries(ErrorKind);
  for (const file of sources(join(repoRoot, 'src'))) {
    if (file.endsWith(join('cni', 'errors.ts')) || file.endsWith(join('src', 'errors.ts'))) continue;
    const text = readFileSync(file, 'utf8');
    for (const [name, value] of code) if (new RegExp(`CniCode\\.${name}\\b`).test(text)) used.add(value);
    for (const [name, kind] of kinds) {
      if (new RegExp(`ErrorKind\\.${name}\\b`).test(text)) used.add(cniCodeOf(new HereaboutsError(kind, name)));
    }
  }
  // Config errors are raised through configError() (code 7), in src/errors.ts itself.
  if (sources(join(repoRoot, 'src')).some((f) => /\bconfigError\(/.test(readFileSync(f, 'utf8')))) used.add(CniCode.InvalidNetworkConfig);
  const doc = readFileSync(join(repoRoot, 'docs', 'troubleshooting.md'), 'utf8');
  const rows = new Set([...doc.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1])));
  assert.deepEqual([...rows].sort((a, b) => a - b), [...used].sort((a, b) => a - b));
});

test("README.md's table of CNI error codes lists the codes docs/troubleshooting.md explains, no more and no fewer", () => {
  const codesOf = (text: string, after: string): number[] => {
    const start = text.indexOf(after);
    assert.ok(start !== -1, after);
    const table = text.slice(start).split('\n\n')[0] ?? '';
    return [...table.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1])).sort((a, b) => a - b);
  };
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const doc = readFileSync(join(repoRoot, 'docs', 'troubleshooting.md'), 'utf8');
  const inReadme = codesOf(readme, '| code | meaning |');
  assert.ok(inReadme.length > 5, `README's code table: ${inReadme.join(' ')}`);
  assert.deepEqual(inReadme, codesOf(doc, '| code | meaning | typical'));
});
