// The RBAC the docs describe names every resource deploy/ grants: the controller's section of docs/controller.md
// against deploy/rbac-controller.yaml, the node's paragraph of docs/install.md against deploy/rbac-node.yaml, so a
// permission added to the manifests without a word in the docs fails here (verbs are checked by
// test/integration/deploy/rbac.test.ts against the API server).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { repoRoot } from '../../support/paths.ts';

interface Rule {
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** Every resource (without a subresource) and resource name the roles of a deploy/ file grant. */
function granted(file: string): string[] {
  const objects = loadAll(readFileSync(join(repoRoot, 'deploy', file), 'utf8')) as Array<{ rules?: Rule[] }>;
  const names = new Set<string>();
  for (const rule of objects.flatMap((o) => o.rules ?? [])) {
    for (const resource of rule.resources ?? []) names.add(resource.split('/')[0] ?? resource);
    for (const name of rule.resourceNames ?? []) names.add(name);
  }
  return [...names];
}

/** The resources of `names` that `text` never names (a plural may be written singular, in any case). */
function unnamed(names: readonly string[], text: string): string[] {
  const lower = text.toLowerCase().replaceAll('-', '');
  return names.filter((n) => !lower.includes(n.toLowerCase().replaceAll('-', '').replace(/s$/, '')));
}

const section = (file: string, from: string, to: string): string => {
  const text = readFileSync(join(repoRoot, 'docs', file), 'utf8');
  const start = text.indexOf(from);
  assert.ok(start !== -1, `${from} in docs/${file}`);
  return text.slice(start, text.indexOf(to, start + from.length));
};

test('deploy/ grants resources (so the checks below can fail)', () => {
  assert.ok(granted('rbac-controller.yaml').includes('ippools'));
  assert.deepEqual(unnamed(['ippools', 'widgets'], 'get IPPools'), ['widgets']);
});

test("docs/controller.md's RBAC section names every resource deploy/rbac-controller.yaml grants", () => {
  assert.deepEqual(unnamed(granted('rbac-controller.yaml'), section('controller.md', '## RBAC', '\n## ')), []);
});

test("docs/install.md's node paragraph names every resource deploy/rbac-node.yaml grants", () => {
  assert.deepEqual(unnamed(granted('rbac-node.yaml'), section('install.md', 'The **node** identity', '\n\n')), []);
});
