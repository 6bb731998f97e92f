// The import graph of src/ as the TypeScript compiler reads it (static imports, re-exports and dynamic import()),
// and the layout rules of DESIGN §2 over it. Pure functions over a graph, so the rules are tested on small graphs
// that break them as well as on the real one.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { repoRoot } from './paths.ts';

/** Top to bottom. An import may only point to a lower layer (or stay in its own folder); folders that share a
 * layer are siblings and import nothing of each other. Ground files (src/*.ts) are the last layer. */
export const LAYERS: readonly (readonly string[])[] = [
  ['cli'],
  ['install'],
  ['agent'],
  ['controller', 'cni'],
  ['ipam'],
  ['allocator'],
  ['store'],
  ['kube'],
  ['config'],
  ['ip'],
  ['log'],
  ['fs'],
  ['errors.ts', 'record.ts', 'clock.ts', 'build-info.ts'],
];

/** The modules of src/store/kubernetes that other folders may import; the rest (the raw writers) are private. */
export const STORE_PUBLIC: ReadonlySet<string> = new Set(
  ['open.ts', 'objects.ts', 'pool-object.ts', 'writer.ts'].map((f) => `src/store/kubernetes/${f}`),
);

export type Graph = ReadonlyMap<string, readonly string[]>;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** file -> the src/ files it imports, as repo-relative paths ('src/cni/output.ts'). */
export function importGraph(root = repoRoot): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const abs of sources(join(root, 'src'))) {
    const info = ts.preProcessFile(readFileSync(abs, 'utf8'), true, true);
    const deps = info.importedFiles
      .map((f) => f.fileName)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => relative(root, resolve(dirname(abs), spec)));
    graph.set(relative(root, abs), [...new Set(deps)]);
  }
  return graph;
}

/** 'src/controller/orphans/x.ts' -> 'controller'; a ground file 'src/errors.ts' -> 'errors.ts'. */
export function folderOf(file: string): string {
  return file.split('/')[1] ?? file;
}

export function layerOf(folder: string): number | undefined {
  const i = LAYERS.findIndex((layer) => layer.includes(folder));
  return i < 0 ? undefined : i;
}

/** Every import that points up, or sideways to a sibling folder. */
export function layerViolations(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    const from = folderOf(file);
    for (const dep of deps) {
      const to = folderOf(dep);
      if (to === from) continue;
      const a = layerOf(from);
      const b = layerOf(to);
      if (a === undefined || b === undefined || b <= a) out.push(`${file} -> ${dep} (${from} may not import ${to})`);
    }
  }
  return out;
}

/** Strongly connected sets of more than one folder (Tarjan), each sorted. */
export function folderCycles(graph: Graph): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const [file, deps] of graph) {
    const from = folderOf(file);
    const set = edges.get(from) ?? new Set<string>();
    edges.set(from, set);
    for (const dep of deps) if (folderOf(dep) !== from) set.add(folderOf(dep));
  }
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** Imports of a private module of src/store/kubernetes from outside that folder. */
export function privateWriterImports(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    if (file.startsWith('src/store/kubernetes/')) continue;
    for (const dep of deps)
      if (dep.startsWith('src/store/kubernetes/') && !STORE_PUBLIC.has(dep)) out.push(`${file} -> ${dep}`);
  }
  return out;
}

/**
 * Modules outside the store that send a write (POST, PUT, PATCH, DELETE) and also build a whereabouts object's
 * path: the one way left to write an IPPool, a reservation or a NodeSlicePool past the store's writer.
 */
export function rawWhereaboutsWrites(root = repoRoot): string[] {
  return sources(join(root, 'src'))
    .map((abs) => ({ file: relative(root, abs), text: readFileSync(abs, 'utf8') }))
    .filter(({ file }) => !file.startsWith('src/store/kubernetes/'))
    .filter(
      ({ text }) =>
        /method:\s*'(POST|PUT|PATCH|DELETE)'/.test(text) &&
        /objectPath\(|\/apis\/whereabouts\.cni\.cncf\.io|\$\{GROUP\}/.test(text),
    )
    .map(({ file }) => file);
}
