// What an image needs to know about an ELF file: its machine, its interpreter (PT_INTERP) and the libraries it names
// (DT_NEEDED). 64-bit little-endian only: the two platforms the image is built for.

/** e_machine values, by the OCI/Go architecture name. */
export const elfMachines = { amd64: 62, arm64: 183 };

/**
 * @param {Buffer} file the whole ELF file
 * @returns {{ machine: number, interpreter: string | undefined, needed: string[] }}
 */
export function readElf(file) {
  if (file.length < 64 || file.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  if (file[4] !== 2 || file[5] !== 1)
    throw new Error(`ELF class ${file[4]}, data ${file[5]}: only 64-bit little-endian is read`);
  const machine = file.readUInt16LE(18);
  const phoff = Number(file.readBigUInt64LE(32));
  const phentsize = file.readUInt16LE(54);
  const phnum = file.readUInt16LE(56);
  const segments = [];
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    segments.push({
      type: file.readUInt32LE(at),
      offset: Number(file.readBigUInt64LE(at + 8)),
      vaddr: Number(file.readBigUInt64LE(at + 16)),
      filesz: Number(file.readBigUInt64LE(at + 32)),
    });
  }
  const interp = segments.find((s) => s.type === 3);
  const interpreter = interp === undefined ? undefined : cString(file, interp.offset);
  const dynamic = segments.find((s) => s.type === 2);
  return { machine, interpreter, needed: dynamic === undefined ? [] : neededOf(file, dynamic, segments) };
}

/** DT_NEEDED names: offsets into the string table DT_STRTAB points at (a virtual address, mapped by a PT_LOAD). */
function neededOf(file, dynamic, segments) {
  const offsets = [];
  let strtab;
  for (let at = dynamic.offset; at + 16 <= dynamic.offset + dynamic.filesz; at += 16) {
    const tag = file.readBigInt64LE(at);
    const value = Number(file.readBigUInt64LE(at + 8));
    if (tag === 0n) break;
    if (tag === 1n) offsets.push(value);
    if (tag === 5n) strtab = value;
  }
  if (offsets.length === 0) return [];
  const load = segments.find((s) => s.type === 1 && s.vaddr <= strtab && strtab < s.vaddr + s.filesz);
  if (strtab === undefined || load === undefined) throw new Error('ELF: DT_STRTAB is not in a loaded segment');
  const base = strtab - load.vaddr + load.offset;
  return offsets.map((offset) => cString(file, base + offset));
}

function cString(file, at) {
  const end = file.indexOf(0, at);
  return file.toString('utf8', at, end === -1 ? file.length : end);
}
