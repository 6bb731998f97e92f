// README.md and docs/ stand alone: every relative link and every repository path they name exists in the
// repository, every #anchor names a heading of its target, and nothing points outside the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from '../../support/paths.ts';

const docs = ['README.md', 'CHANGELOG.md', ...readdirSync(join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
const TOP_DIRS = ['deploy/', 'docs/', 'src/', 'test/', 'scripts/', 'cni-conf-examples/', 'build/'];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const set = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (m !== null) set.add(m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
  }
  return set;
}

/** The text outside fenced code blocks. */
const prose = (markdown: string): string => markdown.split(/^```.*$/m).filter((_, i) => i % 2 === 0).join('\n');

test('the docs name nothing outside the repository', () => {
  for (const doc of docs) {
    const text = readFileSync(join(repoRoot, doc), 'utf8');
    assert.doesNotMatch(text, /DESIGN|\.\.\/shared|\/work\//, doc);
  }
});

test('every relative link resolves inside the repository, and its #anchor to a heading', () => {
  const broken: string[] = [];
  for (const doc of docs) {
    const text = prose(readFileSync(join(repoRoot, doc), 'utf8'));
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? join(repoRoot, doc) : resolve(dirname(join(repoRoot, doc)), path);
      if (relative(repoRoot, file).startsWith('..') || !existsSync(file)) {
        broken.push(`${doc}: ${target} (no such file in the repository)`);
        continue;
      }
      if (anchor !== undefined && !anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test('every repository path the docs name in `code` exists', () => {
  const missing: string[] = [];
  for (const doc of docs) {
    const text = readFileSync(join(repoRoot, doc), 'utf8');
    for (const m of text.matchAll(/`([^`\s]+)`/g)) {
      const path = m[1]!.replace(/[),.:]+$/, '');
      if (!TOP_DIRS.some((d) => path.startsWith(d)) || /[*<>{}$]/.test(path)) continue;
      if (!existsSync(join(repoRoot, path))) missing.push(`${doc}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});
