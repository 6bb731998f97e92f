// esbuild plugins for the two bundles. Each one changes how a third-party import is resolved; none touches src/.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package whose code ships as a separate, lazily loaded SEA asset (see k8s-client-loader.cjs). */
export const k8sClientPackage = '@kubernetes/client-node';

/**
 * Packages that dependencies of @kubernetes/client-node `require()` inside a try/catch and work without. They are
 * not installed; stubbing them makes the bundle hermetic (at run time nothing is looked up outside the executable)
 * and behave exactly as "not installed" under plain `node` too.
 */
const absentOptionalPackages = ['bufferutil', 'utf-8-validate', 'encoding', 'supports-color'];

/**
 * node-fetch 2 falls back to the whatwg-url package only when `require('url').URL` is missing, which it never is on
 * Node 24. whatwg-url 5 and tr46 `require('punycode')`, and Node prints a DEP0040 deprecation warning to stderr as
 * soon as that module loads; replacing the unused fallback with an empty module keeps stderr clean.
 */
const unusedFallbacks = [{ importer: /[\\/]node_modules[\\/]node-fetch[\\/]/, path: 'whatwg-url' }];

export const hermeticStubs = {
  name: 'hermetic-stubs',
  setup(build) {
    const absent = new RegExp(`^(${absentOptionalPackages.join('|')})$`);
    build.onResolve({ filter: absent }, (args) => ({ path: args.path, namespace: 'absent-optional' }));
    build.onLoad({ filter: /.*/, namespace: 'absent-optional' }, (args) => ({
      contents:
        `const e = new Error(${JSON.stringify(`Cannot find module '${args.path}'`)});` +
        ` e.code = 'MODULE_NOT_FOUND'; throw e;`,
      loader: 'js',
    }));
    for (const fallback of unusedFallbacks) {
      build.onResolve({ filter: new RegExp(`^${fallback.path}$`) }, (args) =>
        fallback.importer.test(args.importer) ? { path: args.path, namespace: 'unused-fallback' } : undefined,
      );
    }
    build.onLoad({ filter: /.*/, namespace: 'unused-fallback' }, () => ({
      contents: 'module.exports = {};',
      loader: 'js',
    }));
  },
};

/**
 * In the main bundle, `@kubernetes/client-node` becomes a small module that loads the client bundle from the
 * executable when it is first evaluated. Its metafile path keeps the package name, so the eager-graph test still
 * sees an eager import of the client.
 */
export const k8sClientLoader = {
  name: 'k8s-client-loader',
  setup(build) {
    const loaderDir = dirname(fileURLToPath(import.meta.url));
    build.onResolve({ filter: /^@kubernetes\/client-node$/ }, (args) => ({ path: args.path, namespace: 'sea-asset' }));
    build.onLoad({ filter: /.*/, namespace: 'sea-asset' }, () => ({
      contents: `module.exports = require('./k8s-client-loader.cjs').loadClient();`,
      resolveDir: loaderDir,
      loader: 'js',
    }));
  },
};

/**
 * @kubernetes/client-node's package.json does not declare `"sideEffects": false`, so esbuild keeps every module
 * its index re-exports (watch, exec, port-forward, cp, the generated API classes, ...) and their imports (readline,
 * ws, tar). Its modules only define classes and functions, so declaring them side-effect free lets esbuild drop
 * what nothing uses: for KubeConfig alone the client bundle shrinks from 650 kB to 220 kB.
 * The client's own imports are relative with explicit `.js` extensions, so they are resolved here directly;
 * `build.resolve()` for each of its 900 files would make the build 20 times slower.
 */
export const k8sClientWithoutSideEffects = {
  name: 'k8s-client-without-side-effects',
  setup(build) {
    const fromRoot = createRequire(join(build.initialOptions.absWorkingDir ?? process.cwd(), 'package.json'));
    const entryFile = fromRoot.resolve(k8sClientPackage);
    const packageDir = dirname(fromRoot.resolve(`${k8sClientPackage}/package.json`));
    const inClient = (file) => file.startsWith(`${packageDir}${sep}`);
    build.onResolve({ filter: /^@kubernetes\/client-node$/ }, () => ({ path: entryFile, sideEffects: false }));
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!inClient(args.importer)) return undefined;
      const file = resolve(args.resolveDir, args.path);
      return existsSync(file) ? { path: file, sideEffects: false } : undefined;
    });
  },
};

/**
 * Built-in modules that the client's dependencies load at the top level but use only on some paths (node-fetch:
 * zlib, for compressed responses; socks-proxy-agent: dns). Each becomes an object whose properties load the real
 * module on first access; zlib alone takes 3-6 ms to load. `exportNames` maps each module to its property names,
 * taken from the embedded Node (see builtinExportNames). child_process is not deferred: the client's ExecAuth reads
 * `child_process.spawn` in its constructor, which runs whenever a KubeConfig is made.
 */
export function lazyBuiltins(exportNames) {
  const names = Object.keys(exportNames);
  const filter = new RegExp(`^(node:)?(${names.join('|')})$`);
  return {
    name: 'lazy-builtins',
    setup(build) {
      build.onResolve({ filter }, (args) =>
        /[\\/]node_modules[\\/]/.test(args.importer)
          ? { path: args.path.replace(/^node:/, ''), namespace: 'lazy-builtin' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => ({
        contents: lazyModuleSource(args.path, exportNames[args.path]),
        loader: 'js',
      }));
    },
  };
}

function lazyModuleSource(name, keys) {
  return `let loaded;
const load = () => (loaded ??= require(${JSON.stringify(`node:${name}`)}));
for (const key of ${JSON.stringify(keys)}) {
  Object.defineProperty(exports, key, { enumerable: true, get: () => load()[key] });
}
`;
}

/** The modules lazyBuiltins defers; kept here so build.mjs can ask the embedded Node for their export names. */
export const deferredBuiltins = ['zlib', 'dns'];
