// The node agent's journal of warm-set hand-outs (DESIGN §11): an ADD answered from a warm address is durable here
// before the answer leaves, while the IPPool record still names the agent; the record is rewritten to name the pod
// afterwards, in grouped writes. A DEL answered the same way is durable here before its record goes back to the
// agent. Replayed before the agent serves again, so a rewrite a crash interrupted is finished, and an address handed
// out is never handed out a second time.
//
// One line per entry, `<crc32 of the JSON, 8 hex digits> <JSON>\n`, appended with O_APPEND and made durable with one
// fdatasync per append (a group of entries shares it). A crash mid-append leaves at most a torn last line without its
// newline: dropped on replay (its append was never acknowledged). An append that fails (ENOSPC, EIO: part of it may be
// written) is cut back off the file before it throws, or the next append would complete the fragment into a line
// replay refuses; if that cut fails, the journal takes no more appends. A complete line whose checksum or shape is
// wrong is corruption, not a crash: replay refuses it rather than guess which hand-outs are pending. compact()
// rewrites the file with only the pending hand-outs (write temp + fsync + rename).
import { closeSync, constants, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ErrorKind, HereaboutsError, messageOf } from '../../../errors.ts';
import { writeFileAtomic } from '../../../fs/atomic-write.ts';
import { writeFd } from '../../../fs/fd-write.ts';
import { readBoundedIfPresent } from '../../../fs/read-bounded.ts';
import { isRecord } from '../../../record.ts';

export const JOURNAL_FILE = 'warm-journal';
const FILE_MODE = 0o600;
/** A journal is compacted long before this; a larger file is not this journal's. */
const MAX_BYTES = 64 * 1024 * 1024;

/** Who an address was handed to (CNI's attachment, and the pod). */
export interface JournalAttachment {
  readonly containerId: string;
  readonly ifname: string;
  readonly podRef: string;
  readonly podUid?: string;
  /** A sticky address's binding (store.ts AllocationRecord.binding). */
  readonly binding?: string;
}

/**
 * handed-out: a warm address answered an ADD for `attachment` (its record is to name the pod); released: a DEL of
 * `attachment` was answered (its record is to be released); settled: the pool holds what the entry before
 * asked for. Entries are keyed by pool and address: the latest one of a key is what is pending.
 */
export type JournalEntry =
  | {
      readonly op: 'handed-out' | 'released';
      readonly pool: string;
      readonly address: string;
      readonly attachment: JournalAttachment;
      readonly at: string;
      /** The pool itself (pool-ref-json.ts): a new agent finishes the write before any call names the pool. */
      readonly ref?: Readonly<Record<string, unknown>>;
    }
  | { readonly op: 'settled'; readonly pool: string; readonly address: string };

export type HandOut = Extract<JournalEntry, { op: 'handed-out' | 'released' }>;

const keyOf = (entry: { readonly pool: string; readonly address: string }): string =>
  `${entry.pool}\u0000${entry.address}`;

export class Journal {
  readonly #path: string;
  #fd: number;
  /** Hand-outs not yet renamed or returned, by pool and address, in journal order. */
  readonly #pending = new Map<string, HandOut>();
  /** Lines in the file: compaction pays off once most of them are settled. */
  #lines = 0;
  /** Why the file may end in a fragment of a failed append: appending after it would complete it into a bad line. */
  #torn: string | undefined;

  /** Opens the journal in `dir` (the agent's own directory), replaying what it holds; a torn last line is dropped. */
  static open(dir: string): Journal {
    return new Journal(join(dir, JOURNAL_FILE));
  }

  private constructor(path: string) {
    this.#path = path;
    this.#fd = openAppend(path);
    try {
      this.#replay();
    } catch (err) {
      closeSync(this.#fd);
      throw err;
    }
  }

  /** Hand-outs and releases the pool may not show yet, oldest first. */
  pending(): HandOut[] {
    return [...this.#pending.values()];
  }

  /** Lines in the file now (settled ones included until compact()). */
  get lines(): number {
    return this.#lines;
  }

  /**
   * Makes `entries` durable, in order, with one write and one fdatasync; only then does the journal reflect them.
   * `durable: false` skips the fdatasync, for entries whose loss in a power cut costs nothing (settled ones: their
   * writes are made again, idempotently, on replay); the next durable append makes them durable too.
   */
  append(entries: readonly JournalEntry[], options: { readonly durable?: boolean } = {}): void {
    if (entries.length === 0) return;
    if (this.#torn !== undefined)
      throw new HereaboutsError(ErrorKind.Io, `journal ${this.#path} takes no more appends: ${this.#torn}`);
    const size = fstatSync(this.#fd).size;
    try {
      writeFd(this.#fd, entries.map(lineOf).join(''));
      if (options.durable !== false) fdatasyncSync(this.#fd);
    } catch (err) {
      this.#cutBack(size, err);
      throw err;
    }
    for (const entry of entries) this.#apply(entry);
    this.#lines += entries.length;
  }

  /** Rewrites the file with only the pending entries (crash-safe: the old file or the new one). */
  compact(): void {
    const pending = this.pending();
    writeFileAtomic(this.#path, pending.map(lineOf).join(''), { mode: FILE_MODE });
    closeSync(this.#fd);
    this.#fd = openAppend(this.#path);
    this.#lines = pending.length;
    this.#torn = undefined; // the new file holds no fragment
  }

  close(): void {
    closeSync(this.#fd);
  }

  /** Cuts a failed append (a prefix of it may be in the file) back off the file, which held `size` bytes before it. */
  #cutBack(size: number, failure: unknown): void {
    try {
      ftruncateSync(this.#fd, size);
      fdatasyncSync(this.#fd);
    } catch (err) {
      this.#torn = `an append failed (${messageOf(failure)}) and cutting it back off failed (${messageOf(err)})`;
      throw new HereaboutsError(ErrorKind.Io, `journal ${this.#path} may be torn: ${this.#torn}`, { cause: failure });
    }
  }

  #apply(entry: JournalEntry): void {
    this.#pending.delete(keyOf(entry)); // the latest entry of a key last, in journal order
    if (entry.op !== 'settled') this.#pending.set(keyOf(entry), entry);
  }

  #replay(): void {
    const size = fstatSync(this.#fd).size;
    if (size > MAX_BYTES)
      throw new HereaboutsError(ErrorKind.Corrupt, `journal ${this.#path} is ${size} bytes, over ${MAX_BYTES}`);
    const buf = Buffer.alloc(size);
    for (let read = 0; read < size;) {
      const n = readSync(this.#fd, buf, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    // Everything after the last newline is an append that never completed: it was never acknowledged.
    const complete = buf.lastIndexOf(0x0a) + 1;
    const lines = buf.subarray(0, complete).toString('utf8').split('\n').slice(0, -1);
    lines.forEach((line, i) => this.#apply(parseLine(line, `${this.#path} line ${i + 1}`)));
    this.#lines = lines.length;
    if (complete < size) {
      ftruncateSync(this.#fd, complete);
      fdatasyncSync(this.#fd);
    }
  }
}

function openAppend(path: string): number {
  const flags = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
  try {
    const fd = openSync(path, flags, FILE_MODE);
    if (!fstatSync(fd).isFile()) {
      closeSync(fd);
      throw new Error('not a regular file');
    }
    return fd;
  } catch (err) {
    throw new HereaboutsError(ErrorKind.Io, `cannot open journal ${path}: ${messageOf(err)}`, { cause: err });
  }
}

function lineOf(entry: JournalEntry): string {
  const json = JSON.stringify(entry);
  return `${checksum(json)} ${json}\n`;
}

const checksum = (json: string): string => crc32(json).toString(16).padStart(8, '0');

function parseLine(line: string, where: string): JournalEntry {
  const corrupt = (why: string) =>
    new HereaboutsError(ErrorKind.Corrupt, `journal ${where}: ${why}`, {
      details: 'the journal is damaged: replaying a guess of it could hand an address out twice',
    });
  const json = line.slice(9);
  if (line[8] !== ' ' || checksum(json) !== line.slice(0, 8)) throw corrupt('checksum mismatch');
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw corrupt('not JSON');
  }
  const entry = entryOf(value);
  if (entry === undefined) throw corrupt('not a journal entry');
  return entry;
}

function entryOf(value: unknown): JournalEntry | undefined {
  if (!isRecord(value)) return undefined;
  const { op, pool, address } = value;
  if (typeof pool !== 'string' || typeof address !== 'string') return undefined;
  if (op === 'settled') return { op, pool, address };
  if ((op !== 'handed-out' && op !== 'released') || typeof value['at'] !== 'string') return undefined;
  const attachment = value['attachment'];
  if (!isRecord(attachment)) return undefined;
  const { containerId, ifname, podRef, podUid, binding } = attachment;
  if (typeof containerId !== 'string' || typeof ifname !== 'string' || typeof podRef !== 'string') return undefined;
  if (podUid !== undefined && typeof podUid !== 'string') return undefined;
  if (binding !== undefined && typeof binding !== 'string') return undefined;
  const ref = value['ref'];
  if (ref !== undefined && !isRecord(ref)) return undefined;
  return {
    op,
    pool,
    address,
    at: value['at'],
    attachment: journalAttachment({ containerId, ifname, podRef, podUid, binding }),
    ...(ref === undefined ? {} : { ref }),
  };
}

/** What a journal entry keeps of a record: its attachment, without the optional fields it does not have. */
export function journalAttachment(record: {
  readonly containerId: string;
  readonly ifname: string;
  readonly podRef: string;
  readonly podUid?: string | undefined;
  readonly binding?: string | undefined;
}): JournalAttachment {
  const { containerId, ifname, podRef, podUid, binding } = record;
  return {
    containerId,
    ifname,
    podRef,
    ...(podUid === undefined ? {} : { podUid }),
    ...(binding === undefined ? {} : { binding }),
  };
}

/**
 * The hand-outs and releases pending in the journal in `dir`, read without changing the file (a process that does not
 * hold the journal's lock: a plugin answering a DEL while no agent serves). A torn last line is not read; undefined
 * when there is no journal.
 */
export function readPending(dir: string): HandOut[] | undefined {
  const path = join(dir, JOURNAL_FILE);
  const bytes = readBoundedIfPresent(path, { maxBytes: MAX_BYTES });
  if (bytes === undefined) return undefined;
  const text = bytes.toString('utf8');
  const pending = new Map<string, HandOut>();
  const lines = text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .slice(0, -1);
  lines.forEach((line, i) => {
    const entry = parseLine(line, `${path} line ${i + 1}`);
    pending.delete(keyOf(entry));
    if (entry.op !== 'settled') pending.set(keyOf(entry), entry);
  });
  return [...pending.values()];
}
