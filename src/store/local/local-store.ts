// The embedded store (`"datastore": "local"`): `<data_dir>/<network>/<pool>.json`, every read-modify-write under
// the pool's file lock, every write crash-safe. Imports stay on node:fs and node:path: this is the CNI hot path.
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import type { Allocations, Plan, PoolRef, Store } from '../store.ts';
import { KeyedQueue } from '../keyed-queue.ts';
import { applyChange } from './apply-change.ts';
import { messageOf } from '../../errors.ts';
import { acquireLock, DEFAULT_LOCK_TIMING, type HeldLock, type LockLog, type LockTiming } from '../../fs/lock.ts';
import { poolPaths, preparePoolDir, type PoolPaths } from './paths.ts';
import { encodePool, readPoolFile, writePoolFile } from './pool-file.ts';
import { refreshReservation, reserve, unreserve, type ReservationContext } from './reservations.ts';

export const DIR_MODE = 0o700;
export const DEFAULT_DATA_DIR = '/var/lib/cni/hereabouts';

export interface LocalStoreOptions {
  /** Lock staleness and wait budget; defaults suit ~200 concurrent CNI processes on one node. */
  readonly lock?: Partial<LockTiming>;
  /** Where lock waits and takeovers are reported. */
  readonly log?: LockLog;
  /** enable_overlapping_ranges: reserve each claimed address so that pools of overlapping ranges refuse it. */
  readonly reservations?: boolean;
}

export class LocalStore implements Store {
  readonly node: undefined = undefined;
  readonly dataDir: string;
  readonly #timing: LockTiming;
  readonly #log: LockLog | undefined;
  readonly #reservations: boolean;
  /** In-process queue per pool: the file lock excludes processes, this spares our own callers its polling. */
  readonly #queue = new KeyedQueue();

  constructor(dataDir: string, options: LocalStoreOptions = {}) {
    this.dataDir = resolve(dataDir);
    this.#timing = { ...DEFAULT_LOCK_TIMING, ...options.lock };
    this.#log = options.log;
    this.#reservations = options.reservations ?? false;
  }

  async update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
    const paths = poolPaths(this.dataDir, pool);
    return this.#queue.run(paths.data, async () => {
      try {
        this.#ensureDir(paths.networkDir);
      } catch (err) {
        throw new HereaboutsError(ErrorKind.Io, `cannot create ${paths.networkDir}: ${messageOf(err)}`, { cause: err });
      }
      const lock = await acquireLock(paths, this.#timing, this.#log === undefined ? {} : { log: this.#log });
      try {
        return this.#locked(pool, paths, lock, plan);
      } finally {
        await lock.release();
      }
    });
  }

  /** Nothing else writes this pool while we hold its lock; only a reservation held elsewhere makes the plan run again. */
  #locked<T>(pool: PoolRef, paths: PoolPaths, lock: HeldLock, plan: Plan<T>): T {
    const current = readPoolFile(paths.data, pool.range.cidr);
    const refused = new Set<bigint>();
    const ctx: ReservationContext = {
      dataDir: this.dataDir,
      timing: this.#timing,
      ...(this.#log === undefined ? {} : { log: this.#log }),
    };
    for (;;) {
      const planned = plan(current, refused);
      const change = planned.change;
      if (change === null) return planned.value;
      const claim = change.claim;
      // Several claims in one write are the node agent's warm refill, which only the Kubernetes store serves.
      if ((change.moreClaims ?? []).length > 0)
        throw new HereaboutsError(
          ErrorKind.Internal,
          `pool ${pool.name}: the local store claims one address per write`,
        );
      // Reserved before the commit: a crash in between leaves a reservation the next claimer takes over, never an
      // address committed without one.
      if (this.#reservations && claim !== undefined && reserve(ctx, pool, claim.address, claim.record) === 'taken') {
        refused.add(claim.address);
        continue;
      }
      const next = applyChange(pool, current, change);
      writePoolFile(paths.data, paths.tempPrefix, encodePool(pool.range.cidr, next), () => lock.assertHeld());
      if (this.#reservations) {
        for (const address of change.release ?? []) unreserve(ctx, pool, address);
        for (const { address, record } of change.update ?? []) refreshReservation(ctx, pool, address, record);
      }
      return planned.value;
    }
  }

  async read(pool: PoolRef): Promise<Allocations> {
    // Writers replace the file by rename, so an unlocked read sees one whole version.
    return readPoolFile(poolPaths(this.dataDir, pool).data, pool.range.cidr);
  }

  async status(pools: readonly PoolRef[]): Promise<void> {
    const dirs = new Set(pools.map((pool) => poolPaths(this.dataDir, pool).networkDir));
    if (dirs.size === 0) dirs.add(this.dataDir);
    for (const dir of dirs) {
      try {
        this.#ensureDir(dir);
        probeWritable(dir);
      } catch (err) {
        const msg = `local store directory ${dir} is not writable: ${messageOf(err)}`;
        throw new HereaboutsError(ErrorKind.NotReady, msg, { cause: err });
      }
    }
    for (const pool of pools) {
      try {
        await this.read(pool);
      } catch (err) {
        const msg = `pool ${pool.name} cannot be read: ${messageOf(err)}`;
        throw new HereaboutsError(ErrorKind.NotReady, msg, { cause: err });
      }
    }
  }

  async close(): Promise<void> {
    await this.#queue.drain();
  }

  /** Creates `dir` under data_dir, refusing links and directories that are not the plugin's own (paths.ts). */
  #ensureDir(dir: string): void {
    preparePoolDir(this.dataDir, dir);
  }
}

function probeWritable(dir: string): void {
  const probe = join(dir, `.probe-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  const fd = openSync(probe, 'wx', 0o600);
  try {
    writeSync(fd, 'ok');
  } finally {
    closeSync(fd);
    unlinkSync(probe);
  }
}
