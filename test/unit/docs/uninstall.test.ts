// docs/install.md's uninstall steps against deploy/kustomization.yaml: the command that keeps the data deletes every
// other file the kustomization applies, the count of CRDs it says `delete -k` removes is the kustomization's, and the
// last step deletes each of those CRDs by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { repoRoot } from '../../support/paths.ts';

const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

const resources = (load(readFileSync(join(repoRoot, 'deploy', 'kustomization.yaml'), 'utf8')) as { resources: string[] })
  .resources;
const crdFiles = resources.filter((r) => r.startsWith('crds/'));
/** crds/<group>_<plural>.yaml names the CRD <plural>.<group>. */
const crdNames = crdFiles.map((file) => {
  const [group = '', plural = ''] = file.slice('crds/'.length, -'.yaml'.length).split('_');
  return `${plural}.${group}`;
});
const section = ((): string => {
  const doc = readFileSync(join(repoRoot, 'docs', 'install.md'), 'utf8');
  const start = doc.indexOf('## Uninstalling');
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end === -1 ? undefined : end).replaceAll(/\n\s+/g, ' ');
})();

test('the kustomization applies CRDs and other files (so the checks below can fail)', () => {
  assert.ok(crdFiles.length > 0 && resources.length > crdFiles.length, resources.join(' '));
});

test('the step that keeps the data deletes every other file the kustomization applies', () => {
  const keep = /`(kubectl delete -f [^`]+)`/.exec(section)?.[1] ?? '';
  const deleted = [...keep.matchAll(/-f deploy\/(\S+)/g)].map((m) => m[1]);
  assert.deepEqual(deleted.sort(), resources.filter((r) => !r.startsWith('crds/')).sort());
});

test('the CRDs `kubectl delete -k deploy/` removes are counted right, and the last step deletes each by name', () => {
  assert.match(section, new RegExp(`also deletes the ${WORDS[crdFiles.length] ?? ''} CRDs`));
  const named = [...section.matchAll(/kubectl delete crd ([^`]+)`/g)].flatMap((m) => (m[1] ?? '').trim().split(/\s+/));
  assert.deepEqual(named.sort(), [...crdNames].sort());
});
