// A reproducible tar writer (POSIX ustar): entries sorted by path, every parent directory present, one mtime, owner
// and group 0 without names. The same entries give the same bytes on any machine, unlike a tar of a directory tree
// (umask, mtimes, owners, readdir order and the tar version all leak in).

/**
 * @typedef {{ type: 'dir', mode: number } | { type: 'file', mode: number, data: Uint8Array }} Entry
 * Paths are relative ("etc/passwd"), without "./" or a trailing slash.
 */

const block = 512;

/** @param {Map<string, Entry>} entries  @param {number} mtime seconds since the epoch  @returns {Buffer} */
export function tarArchive(entries, mtime) {
  const all = new Map(entries);
  for (const path of entries.keys()) {
    checkPath(path);
    for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) {
      const parent = path.slice(0, at);
      if (!all.has(parent)) all.set(parent, { type: 'dir', mode: 0o755 });
      else if (all.get(parent).type !== 'dir') throw new Error(`tar: ${parent} is a file and a parent of ${path}`);
    }
  }
  const chunks = [];
  for (const path of [...all.keys()].sort(compareBytes)) {
    const entry = all.get(path);
    const size = entry.type === 'file' ? entry.data.length : 0;
    chunks.push(
      header(entry.type === 'dir' ? `${path}/` : path, entry.mode, size, mtime, entry.type === 'dir' ? '5' : '0'),
    );
    if (entry.type === 'file') {
      chunks.push(entry.data);
      if (size % block !== 0) chunks.push(Buffer.alloc(block - (size % block)));
    }
  }
  chunks.push(Buffer.alloc(2 * block));
  return Buffer.concat(chunks);
}

/** Byte order of the UTF-8 names, as GNU tar's --sort=name: independent of the locale. */
function compareBytes(a, b) {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function checkPath(path) {
  if (
    path === '' ||
    path.startsWith('/') ||
    path.endsWith('/') ||
    path.split('/').some((p) => p === '' || p === '.' || p === '..')
  ) {
    throw new Error(`tar: entry path must be relative and normalised, is ${JSON.stringify(path)}`);
  }
}

function header(name, mode, size, mtime, typeflag) {
  const h = Buffer.alloc(block);
  const bytes = Buffer.from(name);
  // ustar splits a long name at a slash into prefix (155 bytes) and name (100 bytes).
  let prefix = Buffer.alloc(0);
  let rest = bytes;
  if (bytes.length > 100) {
    const at = name.lastIndexOf('/', name.length - 2);
    if (at <= 0 || Buffer.byteLength(name.slice(0, at)) > 155 || Buffer.byteLength(name.slice(at + 1)) > 100) {
      throw new Error(`tar: name too long for ustar: ${name}`);
    }
    prefix = Buffer.from(name.slice(0, at));
    rest = Buffer.from(name.slice(at + 1));
  }
  rest.copy(h, 0);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.fill(' ', 148, 156);
  h.write(typeflag, 156, 'ascii');
  h.write('ustar\u000000', 257, 'binary');
  octal(h, 329, 8, 0);
  octal(h, 337, 8, 0);
  prefix.copy(h, 345);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'ascii');
  return h;
}

/** A NUL-terminated octal number filling `width` bytes. */
function octal(h, offset, width, value) {
  const text = value.toString(8).padStart(width - 1, '0');
  if (text.length > width - 1) throw new Error(`tar: ${value} does not fit ${width - 1} octal digits`);
  h.write(`${text}\u0000`, offset, 'ascii');
}
