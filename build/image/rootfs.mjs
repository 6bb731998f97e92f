// The files of the hereabouts image for one platform: the executable, its ELF interpreter and the shared libraries it
// needs (the closure of DT_NEEDED, found in the sysroot the way the loader searches its default paths), /etc/passwd
// and /etc/group with root and nonroot (65532), /tmp. What distroless/cc carries, and nothing else.
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, isAbsolute, join, posix } from 'node:path';
import { elfMachines, readElf } from './elf.mjs';

const triplets = { amd64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** The loader's default search path on Debian, for the platform's multiarch triplet. */
export function librarySearchPath(arch) {
  const t = triplets[arch];
  return [`/lib/${t}`, `/usr/lib/${t}`, '/lib64', '/usr/lib64', '/lib', '/usr/lib'];
}

/**
 * Reads `path` (absolute, as the target sees it) from `sysroot`, following symlinks inside the sysroot: an absolute
 * link target means the sysroot's root, not the host's. Returns undefined when it is not there.
 */
export function readIn(sysroot, path) {
  for (let hops = 0; hops < 40; hops++) {
    let stat;
    try {
      stat = lstatSync(join(sysroot, path));
    } catch {
      return undefined;
    }
    if (!stat.isSymbolicLink()) return stat.isFile() ? readFileSync(join(sysroot, path)) : undefined;
    const target = readlinkSync(join(sysroot, path));
    path = isAbsolute(target) ? target : posix.join(posix.dirname(path), target);
  }
  throw new Error(`${join(sysroot, path)}: too many levels of symbolic links`);
}

/**
 * @param {{ arch: 'amd64' | 'arm64', executable: string, sysroot: string }} platform
 * @returns {Map<string, import('./tar.mjs').Entry>} the layer's entries
 */
export function rootfsEntries({ arch, executable, sysroot }) {
  const exe = readFileSync(executable);
  const elf = readElf(exe);
  if (elf.machine !== elfMachines[arch]) {
    throw new Error(`${executable} is ELF machine ${elf.machine}, not ${arch} (${elfMachines[arch]})`);
  }
  if (elf.interpreter === undefined) throw new Error(`${executable} has no ELF interpreter (PT_INTERP)`);
  const entries = new Map();
  entries.set('hereabouts', { type: 'file', mode: 0o755, data: exe });
  for (const [path, data] of sharedObjects(elf, arch, sysroot))
    entries.set(path.slice(1), { type: 'file', mode: 0o755, data });
  entries.set('etc/passwd', {
    type: 'file',
    mode: 0o644,
    data: Buffer.from(
      'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
    ),
  });
  entries.set('etc/group', { type: 'file', mode: 0o644, data: Buffer.from('root:x:0:\nnonroot:x:65532:\n') });
  entries.set('home/nonroot', { type: 'dir', mode: 0o755 });
  entries.set('tmp', { type: 'dir', mode: 0o1777 });
  return entries;
}

/** The interpreter at its PT_INTERP path and every library of the DT_NEEDED closure where the loader finds it. */
function sharedObjects(elf, arch, sysroot) {
  const found = new Map();
  const interpreter = readIn(sysroot, elf.interpreter);
  if (interpreter === undefined) throw new Error(`ELF interpreter ${elf.interpreter} not found in ${sysroot}`);
  found.set(elf.interpreter, interpreter);
  const seen = new Set([basename(elf.interpreter)]); // the loader is already loaded under its own soname
  const queue = [...elf.needed];
  while (queue.length > 0) {
    const name = queue.shift();
    if (seen.has(name)) continue;
    seen.add(name);
    const hit = librarySearchPath(arch)
      .map((dir) => ({ path: posix.join(dir, name), data: readIn(sysroot, posix.join(dir, name)) }))
      .find((candidate) => candidate.data !== undefined && readElf(candidate.data).machine === elfMachines[arch]);
    if (hit === undefined)
      throw new Error(`${name} (${arch}) not found in ${sysroot} under ${librarySearchPath(arch).join(', ')}`);
    found.set(hit.path, hit.data);
    queue.push(...readElf(hit.data).needed);
  }
  return found;
}
