// One folder per node: during a rolling update the old and the new DaemonSet pod run side by side (maxSurge), and
// both folding calls-stats would count every call twice. The holder writes its id into fold.lock and touches it on
// every fold; another pod takes the lock only when it is released (SIGTERM) or not touched for staleMs (a killed pod).
import { closeSync, lstatSync, openSync, renameSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { readBoundedIfPresent } from '../fs/read-bounded.ts';
import { errnoOf } from '../fs/unsafe-file.ts';

export class FoldLock {
  readonly #path: string;
  readonly #id: string;
  readonly #staleMs: number;

  constructor(path: string, options: { id: string; staleMs: number }) {
    this.#path = path;
    this.#id = options.id;
    this.#staleMs = options.staleMs;
  }

  /** Whether this process holds the lock now (taking it when it is free or stale). */
  hold(): boolean {
    if (this.#create()) return true;
    if (this.#holder() === this.#id) {
      const now = new Date();
      utimesSync(this.#path, now, now);
      return true;
    }
    let mtimeMs: number;
    try {
      mtimeMs = lstatSync(this.#path).mtimeMs;
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return this.#create();
      throw err;
    }
    if (Date.now() - mtimeMs < this.#staleMs) return false;
    const aside = `${this.#path}.stale-${this.#id}`;
    try {
      renameSync(this.#path, aside);
      unlinkSync(aside);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err; // another pod moved it first
    }
    return this.#create();
  }

  release(): void {
    if (this.#holder() !== this.#id) return;
    try {
      unlinkSync(this.#path);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
  }

  #create(): boolean {
    let fd: number;
    try {
      fd = openSync(this.#path, 'wx', 0o600);
    } catch (err) {
      if (errnoOf(err) === 'EEXIST') return false;
      throw err;
    }
    try {
      writeSync(fd, this.#id);
    } finally {
      closeSync(fd);
    }
    return true;
  }

  #holder(): string | undefined {
    return readBoundedIfPresent(this.#path, { maxBytes: 4096 })?.toString('utf8');
  }
}
