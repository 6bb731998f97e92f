// Folds the node's call-stats file (src/cni/call-record.ts) into counters: reads what was appended since the last
// fold, hands every whole record to `sink`, and remembers how far it got (fold-state.json, written atomically) so a
// restarted DaemonSet pod resumes instead of counting the file again. Writers never wait for it.
//
// Rotation without losing or double-counting a line: when the file grows past maxBytes it is renamed to calls.1.
// Plugins that opened it before the rename append to calls.1, later ones create a new calls. calls.1 is read on from
// the same offset for drainMs (a plugin holds the file open for one write), then removed. Offsets are per inode.
// Only bytes up to the last newline are consumed: a record still being written (or torn by a killed writer) waits,
// and a torn fragment never becomes part of a record (parseRecord reads from the last "#").
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic-write.ts';
import { readBoundedIfPresent } from '../fs/read-bounded.ts';
import { errnoOf } from '../fs/unsafe-file.ts';
import { parseRecord, STATS_FILE, type CallRecord } from '../cni/call-record.ts';

export const STATE_FILE = 'fold-state.json';
export const ROTATED_FILE = `${STATS_FILE}.1`;
/** At most this much is read per file and fold; the rest waits for the next fold. */
const READ_CHUNK = 4 * 1024 * 1024;

interface Position {
  readonly ino: number;
  readonly offset: number;
}

interface FoldState {
  readonly current?: Position;
  /** calls.1 and when it was renamed (wall clock: it must mean the same after a restart). */
  readonly draining?: Position & { readonly since: number };
}

export interface FoldOptions {
  readonly dir: string;
  readonly maxBytes: number;
  readonly drainMs: number;
  readonly now?: () => number;
}

export interface FoldResult {
  readonly records: number;
  /** Lines that were not a record (torn by a killed writer, or not ours). */
  readonly skipped: number;
  /** The file was rotated in this fold. */
  readonly rotated: boolean;
}

export class StatsFolder {
  readonly #options: FoldOptions;
  readonly #sink: (record: CallRecord) => void;
  #state: FoldState;

  constructor(options: FoldOptions, sink: (record: CallRecord) => void) {
    this.#options = options;
    this.#sink = sink;
    this.#state = loadState(join(options.dir, STATE_FILE));
    // A calls.1 the state does not know (the state was lost): drain it rather than let a rotation replace it.
    const orphan = this.#state.draining === undefined ? inodeOf(join(options.dir, ROTATED_FILE)) : undefined;
    if (orphan !== undefined)
      this.#state = { ...this.#state, draining: { ino: orphan, offset: 0, since: (options.now ?? Date.now)() } };
  }

  /** One fold; throws only for what the operator must fix (the directory unreadable, a state it cannot write). */
  fold(): FoldResult {
    const { dir } = this.#options;
    const now = (this.#options.now ?? Date.now)();
    const before = JSON.stringify(this.#state);
    let records = 0;
    let skipped = 0;
    let rotated = false;
    const count = (r: { records: number; skipped: number }): void => {
      records += r.records;
      skipped += r.skipped;
    };

    let draining = this.#state.draining;
    if (draining !== undefined) {
      const path = join(dir, ROTATED_FILE);
      const done = now - draining.since >= this.#options.drainMs;
      const read = this.#read(path, draining, done);
      count(read);
      if (done || read.position === undefined) {
        if (read.position !== undefined) removeIfSame(path, read.position.ino);
        draining = undefined;
      } else {
        draining = { ...read.position, since: draining.since };
      }
    }

    const path = join(dir, STATS_FILE);
    const read = this.#read(path, this.#state.current, false);
    count(read);
    let current = read.position;
    if (current !== undefined && draining === undefined && current.offset >= this.#options.maxBytes) {
      renameSync(path, join(dir, ROTATED_FILE));
      draining = { ...current, since: now };
      current = undefined;
      rotated = true;
    }

    this.#state = { ...(current === undefined ? {} : { current }), ...(draining === undefined ? {} : { draining }) };
    if (JSON.stringify(this.#state) !== before)
      writeFileAtomic(join(dir, STATE_FILE), `${JSON.stringify(this.#state)}\n`, { mode: 0o600 });
    return { records, skipped, rotated };
  }

  /**
   * Reads `path` on from `from` (when it is still the same inode; from 0 otherwise) up to the last newline, or to
   * the end when `final` (a torn tail then counts as skipped). Position undefined: there is no such file.
   */
  #read(
    path: string,
    from: Position | undefined,
    final: boolean,
  ): { position?: Position; records: number; skipped: number } {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return { records: 0, skipped: 0 };
      throw err;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new Error(`${path} is not a regular file`);
      const ino = st.ino;
      // Another inode (recreated by someone else) or a shorter file (truncated): it is new to us.
      let offset = from !== undefined && from.ino === ino && from.offset <= st.size ? from.offset : 0;
      let records = 0;
      let skipped = 0;
      for (;;) {
        const want = Math.min(READ_CHUNK, st.size - offset);
        if (want <= 0) break;
        const buf = Buffer.alloc(want);
        const got = readSync(fd, buf, 0, want, offset);
        const text = buf.subarray(0, got);
        const end = text.lastIndexOf(0x0a) + 1;
        if (end === 0) {
          // No newline in what is left: a record still being written waits, unless this is the last read of a
          // drained file (torn by a killed writer) or a whole chunk without one (not ours): then it is skipped.
          if (final || got === READ_CHUNK) {
            skipped++;
            offset += got;
          }
          break;
        }
        for (const line of text.subarray(0, end).toString('latin1').split('\n')) {
          if (line === '') continue;
          const record = parseRecord(line);
          if (record === undefined) skipped++;
          else {
            records++;
            this.#sink(record);
          }
        }
        offset += end;
      }
      return { position: { ino, offset }, records, skipped };
    } finally {
      closeSync(fd);
    }
  }
}

function loadState(path: string): FoldState {
  const data = readBoundedIfPresent(path, { maxBytes: 64 * 1024 });
  if (data === undefined) return {};
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    const pos = (v: unknown): Position | undefined =>
      typeof v === 'object' &&
      v !== null &&
      'ino' in v &&
      'offset' in v &&
      typeof v.ino === 'number' &&
      typeof v.offset === 'number'
        ? { ino: v.ino, offset: v.offset }
        : undefined;
    if (typeof value !== 'object' || value === null) return {};
    const current = 'current' in value ? pos(value.current) : undefined;
    const d = 'draining' in value ? value.draining : undefined;
    const draining = pos(d);
    const since = typeof d === 'object' && d !== null && 'since' in d && typeof d.since === 'number' ? d.since : 0;
    return {
      ...(current === undefined ? {} : { current }),
      ...(draining === undefined ? {} : { draining: { ...draining, since } }),
    };
  } catch {
    return {}; // unreadable state: start over (a restarted pod's counters start at zero anyway)
  }
}

function inodeOf(path: string): number | undefined {
  try {
    return lstatSync(path).ino;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Removes calls.1 only if it is still the file we drained (never one a newer rotation put there). */
function removeIfSame(path: string, ino: number): void {
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let same: boolean;
    try {
      same = fstatSync(fd).ino === ino;
    } finally {
      closeSync(fd);
    }
    if (same) unlinkSync(path);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}
