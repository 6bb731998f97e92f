// A Kubernetes-store ADD with a warm node cache must not load the Kubernetes client (nor its YAML parser): opening
// the store reaches kubeconfig.ts and the client only through the dynamic import of a connection-cache miss
// (src/kube/endpoint-cache.ts). Checked on esbuild's metafile (dist/meta.json, from `npm run build`).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../support/paths.ts';

interface MetaImport {
  readonly path: string;
  readonly kind: string;
  readonly external?: boolean;
}

const metafile = join(repoRoot, 'dist', 'meta.json');
if (!existsSync(metafile)) throw new Error(`${metafile} is missing: run "npm run build" (npm test does it first)`);
const inputs = (JSON.parse(readFileSync(metafile, 'utf8')) as { inputs: Record<string, { imports?: MetaImport[] }> })
  .inputs;

/** Modules reachable from `root` without crossing a dynamic import(), each with the chain to it. */
function eager(root: string): Map<string, readonly string[]> {
  const chains = new Map<string, readonly string[]>([[root, [root]]]);
  const queue = [root];
  for (let module = queue.shift(); module !== undefined; module = queue.shift()) {
    for (const imp of inputs[module]?.imports ?? []) {
      if (imp.kind === 'dynamic-import' || chains.has(imp.path)) continue;
      chains.set(imp.path, [...(chains.get(module) ?? []), imp.path]);
      if (imp.external !== true) queue.push(imp.path);
    }
  }
  return chains;
}

const forbidden =
  /(^|[/:])@kubernetes\/client-node(\/|$)|k8s-client-loader|(^|\/)node_modules\/(js-yaml|yaml)\/|src\/store\/kubernetes\/(kubeconfig|endpoint-recipe)\.ts$/;

test('opening the Kubernetes store loads neither the client nor kubeconfig.ts eagerly', () => {
  const root = 'src/store/kubernetes/open.ts';
  assert.ok(root in inputs, `${root} is not in dist/meta.json`);
  const hits = [...eager(root)].filter(([path]) => forbidden.test(path));
  assert.deepEqual(
    hits.map(([, chain]) => chain.join(' -> ')),
    [],
  );
});
