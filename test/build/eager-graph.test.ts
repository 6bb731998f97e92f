// The CNI hot path must not load the Kubernetes client, YAML, metrics or a logging back-end. esbuild's metafile
// (dist/meta.json, written by `npm run build`) records every import with its kind; the modules a root pulls in
// *eagerly* are those reachable without crossing a dynamic import(), and that set must stay free of them.
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

type Graph = ReadonlyMap<string, readonly MetaImport[]>;

function loadGraph(file: string): Graph {
  if (!existsSync(file)) throw new Error(`${file} is missing: run "npm run build" (npm test does it first)`);
  const meta: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (typeof meta !== 'object' || meta === null || !('inputs' in meta)) throw new Error(`${file} has no "inputs"`);
  const inputs = meta.inputs as Record<string, { imports?: MetaImport[] }>;
  return new Map(Object.entries(inputs).map(([path, input]) => [path, input.imports ?? []]));
}

/** Every module reachable from `root` through static imports and require() calls, each with the chain to it. */
function eagerClosure(graph: Graph, root: string): Map<string, readonly string[]> {
  const chains = new Map<string, readonly string[]>([[root, [root]]]);
  const queue = [root];
  for (let module = queue.shift(); module !== undefined; module = queue.shift()) {
    for (const imp of graph.get(module) ?? []) {
      if (imp.kind === 'dynamic-import' || chains.has(imp.path)) continue;
      chains.set(imp.path, [...(chains.get(module) ?? []), imp.path]);
      if (imp.external !== true) queue.push(imp.path);
    }
  }
  return chains;
}

/** What the plugin path must never load eagerly, by package (the client also under its SEA-asset loader name). */
const forbidden: readonly { readonly what: string; readonly pattern: RegExp }[] = [
  { what: 'the Kubernetes client', pattern: /(^|[/:])@kubernetes\/client-node(\/|$)|k8s-client-loader/ },
  { what: 'a YAML parser', pattern: /(^|\/)node_modules\/(js-yaml|yaml)\// },
  { what: 'the metrics library', pattern: /(^|\/)node_modules\/prom-client\// },
  {
    what: 'a logging back-end',
    pattern:
      /(^|\/)node_modules\/(pino|pino-[\w-]+|winston|bunyan|log4js|loglevel|roarr|tslog|consola|signale|debug)\//,
  },
];

const graph = loadGraph(join(repoRoot, 'dist', 'meta.json'));
const localStoreModules = [...graph.keys()].filter((path) => path.startsWith('src/store/local/'));
const verbModules = [...graph.keys()].filter((path) => path.startsWith('src/cni/verbs/'));

/** The CNI entry, the plugin (reached from it dynamically), the verbs and the local store it opens. */
const roots = ['src/cli/main.ts', 'src/cni/plugin.ts', 'src/store/open.ts', ...verbModules, ...localStoreModules];

test('the metafile covers the CNI plugin, its verbs and the local store', () => {
  for (const root of ['src/cli/main.ts', 'src/cni/plugin.ts', 'src/store/open.ts']) {
    assert.ok(graph.has(root), `${root} is not in dist/meta.json`);
  }
  assert.ok(verbModules.length > 0, 'no src/cni/verbs/ module in dist/meta.json');
  assert.ok(localStoreModules.length > 0, 'no src/store/local/ module in dist/meta.json');
});

for (const root of roots) {
  test(`${root} eagerly loads no Kubernetes client, YAML parser, metrics library or logging back-end`, () => {
    const closure = [...eagerClosure(graph, root)];
    const offenders = forbidden.flatMap(({ what, pattern }) =>
      closure.filter(([path]) => pattern.test(path)).map(([, chain]) => `${what}: ${chain.join(' -> ')}`),
    );
    assert.deepEqual(offenders, [], `${root} loads these without a dynamic import(); move the import behind one`);
  });
}

test('the Kubernetes client is reachable from the entry point, so the checks above are not vacuous', () => {
  const everything = new Set<string>();
  const queue = ['src/cli/main.ts'];
  for (let module = queue.shift(); module !== undefined; module = queue.shift()) {
    if (everything.has(module)) continue;
    everything.add(module);
    for (const imp of graph.get(module) ?? []) if (imp.external !== true) queue.push(imp.path);
  }
  assert.ok(everything.has('sea-asset:@kubernetes/client-node'), 'nothing in src/ imports @kubernetes/client-node');
});

/** Everything reachable from `root`, dynamic imports included. */
function fullClosure(graph: Graph, root: string): Map<string, readonly string[]> {
  const chains = new Map<string, readonly string[]>([[root, [root]]]);
  const queue = [root];
  for (let module = queue.shift(); module !== undefined; module = queue.shift()) {
    for (const imp of graph.get(module) ?? []) {
      if (chains.has(imp.path)) continue;
      chains.set(imp.path, [...(chains.get(module) ?? []), imp.path]);
      if (imp.external !== true) queue.push(imp.path);
    }
  }
  return chains;
}

test('the node agent client (the plugin path when an agent serves) loads no TLS, HTTP, Kubernetes client, plugin or store', () => {
  assert.ok(graph.has('src/agent/client.ts'), 'src/agent/client.ts is not in dist/meta.json');
  const agentPath = new Map([...eagerClosure(graph, 'src/cli/main.ts'), ...fullClosure(graph, 'src/agent/client.ts')]);
  const banned =
    /^node:(tls|https|http|http2|crypto)$|@kubernetes\/client-node|k8s-client-loader|^src\/(cni\/plugin|cni\/verbs|config|store|ipam|allocator)\b/;
  const offenders = [...agentPath].filter(([path]) => banned.test(path)).map(([, chain]) => chain.join(' -> '));
  assert.deepEqual(offenders, []);
  assert.ok(agentPath.has('node:net'), 'the client is expected to reach the agent through node:net');
});
