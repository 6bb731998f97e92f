// esbuild step. Two CommonJS bundles, both run by the embedded Node:
//   dist/hereabouts.cjs  src/cli/main.ts and everything it imports, except @kubernetes/client-node
//   dist/k8s-client.cjs  the client (only the exports src/ imports), loaded on first use by k8s-client-loader.cjs
// Plain JS so that it runs on the system Node 20 as well as the embedded Node 24.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import {
  deferredBuiltins,
  hermeticStubs,
  k8sClientLoader,
  k8sClientPackage,
  k8sClientWithoutSideEffects,
  lazyBuiltins,
} from './plugins.mjs';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  minify: true,
  treeShaking: true,
  sourcemap: 'linked',
  legalComments: 'external',
  metafile: true,
  logLevel: 'silent',
};

/** Bundles the entry point; `dist/meta.json` is what test/build/eager-graph.test.ts inspects. */
export async function bundleMain({ root, entry, outfile, metafile, define }) {
  const result = await esbuild.build({
    ...common,
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    define,
    plugins: [hermeticStubs, k8sClientLoader],
  });
  await finish(result, metafile);
}

/**
 * The names src/ imports from @kubernetes/client-node, so that the client bundle keeps only what they need.
 * Found by bundling the entry as ESM with the client external: esbuild then writes one clean import statement for
 * it (types erased, aliases resolved). `undefined` when src/ takes the whole namespace; `[]` when nothing imports it.
 */
export async function clientImports({ root, entry }) {
  const result = await esbuild.build({
    ...common,
    format: 'esm',
    minify: false,
    sourcemap: false,
    legalComments: 'none',
    metafile: false,
    write: false,
    absWorkingDir: root,
    entryPoints: [entry],
    outfile: 'analysis.mjs',
    external: [k8sClientPackage],
    plugins: [hermeticStubs],
  });
  const code = result.outputFiles.map((file) => file.text).join('\n');
  const from = String.raw`from\s*"@kubernetes/client-node"`;
  if (
    new RegExp(
      String.raw`import\s*\*\s*as\s*[\w$]+\s*${from}|import\s+[\w$]+\s*(,\s*\{[^}]*\})?\s*${from}|export\s*\*\s*(as\s*[\w$]+\s*)?${from}|(require|import)\("@kubernetes/client-node"\)`,
    ).test(code)
  ) {
    return undefined;
  }
  const names = new Set();
  for (const match of code.matchAll(new RegExp(String.raw`(?:import|export)\s*\{([^}]*)\}\s*${from}`, 'g'))) {
    for (const specifier of (match[1] ?? '').split(',')) {
      const name = specifier.trim().split(/\s+as\s+/)[0];
      if (name !== undefined && name !== '') names.add(name);
    }
  }
  return [...names].sort();
}

/** Bundles the client with `names` exported (all of it when `names` is undefined). */
export async function bundleClient({ root, names, outfile, metafile, builtinExports }) {
  const contents =
    names === undefined
      ? `export * from ${JSON.stringify(k8sClientPackage)};`
      : `export { ${names.join(', ')} } from ${JSON.stringify(k8sClientPackage)};`;
  const result = await esbuild.build({
    ...common,
    absWorkingDir: root,
    stdin: { contents, resolveDir: root, sourcefile: 'k8s-client-entry.js', loader: 'js' },
    outfile,
    plugins: [hermeticStubs, k8sClientWithoutSideEffects, lazyBuiltins(builtinExports)],
  });
  await finish(result, metafile);
}

/** Property names of the built-ins lazyBuiltins defers, as the embedded Node has them. */
export function builtinExportNames(node) {
  const script = `const names = {}; for (const m of ${JSON.stringify(deferredBuiltins)}) names[m] = Object.getOwnPropertyNames(require(m)).filter((k) => k !== 'default'); process.stdout.write(JSON.stringify(names));`;
  return JSON.parse(execFileSync(node, ['-e', script], { encoding: 'utf8', env: {} }));
}

/**
 * Fails on any esbuild warning (an `import.meta` that is empty in CommonJS, a require that cannot be resolved: each
 * is a bug in the executable) and on any run-time require of something that is not a Node built-in (inside the
 * executable `require` reaches nothing else).
 */
async function finish(result, metafile) {
  if (result.warnings.length > 0) {
    const text = await esbuild.formatMessages(result.warnings, { kind: 'warning' });
    throw new Error(`esbuild reported ${result.warnings.length} warning(s):\n${text.join('\n')}`);
  }
  writeFileSync(metafile, JSON.stringify(result.metafile));
  const strays = new Set();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imp of output.imports) {
      if (imp.external && !isBuiltin(imp.path)) strays.add(imp.path);
    }
  }
  if (strays.size > 0) throw new Error(`bundle requires non-built-in modules at run time: ${[...strays].join(', ')}`);
}

/** `git rev-parse --short HEAD`, or "unknown" outside a git checkout (e.g. a source tarball). */
export function gitCommit(root) {
  try {
    const out = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.trim() || 'unknown';
  } catch {
    // No git binary or not a repository: the build still works and `hereabouts version` says so.
    return 'unknown';
  }
}

export function packageVersion(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (typeof pkg.version !== 'string') throw new Error('package.json has no "version"');
  return pkg.version;
}
