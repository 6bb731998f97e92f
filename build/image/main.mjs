// Assembles the hereabouts image without Docker or a registry, reproducibly (same inputs, same bytes).
// Usage:
//   node build/image/main.mjs --ref <registry/name:tag> [--oci <dir>] [--archives <dir>]
//        --platform <amd64|arm64>=<executable>[:<sysroot>] ...
//   --oci       an OCI image layout with one image index listing every platform (push it with skopeo, crane, oras)
//   --archives  <dir>/hereabouts-linux-<arch>.tar, a docker-archive per platform (docker load, ctr images import)
//   sysroot     where the platform's shared libraries are found (default /: the host's, for the host's platform)
// SOURCE_DATE_EPOCH (default 0) is every file's mtime and the image's `created`.
// scripts/image/multiarch.sh runs the whole chain: both executables, the arm64 libraries, this.
import { renameSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { dockerArchive, platformImage, writeOciLayout } from './oci.mjs';
import { rootfsEntries } from './rootfs.mjs';

export const imageConfig = {
  Entrypoint: ['/hereabouts'],
  Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
};

export function parseArgs(argv) {
  const options = { platforms: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--ref') options.ref = value;
    else if (flag === '--oci') options.oci = resolve(value);
    else if (flag === '--archives') options.archives = resolve(value);
    else if (flag === '--platform') {
      const match = /^(amd64|arm64)=([^:]+)(?::(.+))?$/.exec(value);
      if (match === null) throw new Error(`--platform must be <amd64|arm64>=<executable>[:<sysroot>], is ${value}`);
      options.platforms.push({ arch: match[1], executable: resolve(match[2]), sysroot: resolve(match[3] ?? '/') });
    } else throw new Error(`unknown option ${flag}`);
  }
  if (options.ref === undefined || options.platforms.length === 0)
    throw new Error('--ref and at least one --platform are required');
  if (options.oci === undefined && options.archives === undefined)
    throw new Error('--oci or --archives (or both) is required');
  if (new Set(options.platforms.map((p) => p.arch)).size !== options.platforms.length)
    throw new Error('a --platform is given twice');
  return options;
}

export function sourceDateEpoch(env) {
  const value = env.SOURCE_DATE_EPOCH ?? '0';
  if (!/^\d+$/.test(value)) throw new Error(`SOURCE_DATE_EPOCH must be seconds since the epoch, is ${value}`);
  return Number(value);
}

function main(argv) {
  const options = parseArgs(argv);
  const epoch = sourceDateEpoch(process.env);
  const images = options.platforms.map((platform) =>
    platformImage({ arch: platform.arch, entries: rootfsEntries(platform), epoch, config: imageConfig }),
  );
  if (options.oci !== undefined) {
    const digest = writeOciLayout(options.oci, options.ref, images);
    process.stdout.write(`${options.oci} ${options.ref}@${digest}\n`);
  }
  if (options.archives !== undefined) {
    mkdirSync(options.archives, { recursive: true });
    for (const image of images) {
      const file = join(options.archives, `hereabouts-linux-${image.arch}.tar`);
      writeFileSync(`${file}.new`, dockerArchive(options.ref, image));
      renameSync(`${file}.new`, file);
      process.stdout.write(`${file} ${options.ref} (linux/${image.arch})\n`);
    }
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`build/image: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
