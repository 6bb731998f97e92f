// Overlapping-range reservations of the local store (`enable_overlapping_ranges`), the counterpart of Kubernetes'
// OverlappingRangeIPReservations: one file per reserved address, `<network dir>/reservations/<name>`, named like the
// Kubernetes object (the address, prefixed with network_name when set). Pools of one network whose ranges overlap
// thus refuse each other's addresses. The scope is the network directory (network_name, else the CNI network name),
// as for the pools themselves.
//
// Crash safety: a claim is reserved (durably) before the pool file commits it, and a release drops the reservation
// only after the pool file no longer holds the address. A crash between the two leaves a reservation whose pool does
// not hold its address; the next claimer of that address takes it over, after locking the owning pool (without
// waiting: a busy pool's reservation counts as held) and finding the address free there.
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncDir } from '../../fs/atomic-write.ts';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { formatIP } from '../../ip/address.ts';
import { formatCidr, masked, parseCidr } from '../../ip/cidr.ts';
import { reservationName } from '../../config/names.ts';
import type { AllocationRecord, PoolRef } from '../store.ts';
import { writeFileAtomic } from '../../fs/atomic-write.ts';
import { messageOf } from '../../errors.ts';
import { errnoOf } from '../../fs/unsafe-file.ts';
import { tryAcquireLock, type LockLog, type LockTiming } from '../../fs/lock.ts';
import { escapeComponent, poolPaths } from './paths.ts';
import { readPoolFile } from './pool-file.ts';

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

export interface ReservationContext {
  readonly dataDir: string;
  readonly timing: LockTiming;
  readonly log?: LockLog;
}

interface Reservation {
  /** The pool (in the same network directory) whose record holds, or is about to hold, the address. */
  readonly pool: string;
  readonly range: string;
  readonly containerid: string;
  readonly podref: string;
  readonly ifname: string;
}

/**
 * Reserves `address` for a claim in `pool` (whose lock the caller holds): 'taken' when a pool of an overlapping
 * range holds it, or may be about to (its lock is busy), or the reservation cannot be read.
 */
export function reserve(
  ctx: ReservationContext,
  pool: PoolRef,
  address: bigint,
  record: AllocationRecord,
): 'reserved' | 'taken' {
  const file = reservationFile(ctx.dataDir, pool, address);
  const content = encode(pool, record);
  ensureDir(dirname(file));
  if (createDurable(file, content)) return 'reserved';
  const existing = readReservation(file);
  if (existing === undefined) {
    ctx.log?.warning(`reservation ${file} is unreadable; ${describe(pool, address)} stays reserved`);
    return 'taken';
  }
  if (existing.pool === pool.name) {
    // Left by an earlier update of this very pool that did not commit (we hold its lock, and it does not hold the
    // address, or the plan would not claim it).
    replace(file, content);
    return 'reserved';
  }
  return takeOverIfLeaked(ctx, pool, address, { file, existing, content }) ? 'reserved' : 'taken';
}

/** Drops the reservation of a released address, if it is this pool's (call after the pool file committed). */
export function unreserve(ctx: ReservationContext, pool: PoolRef, address: bigint): void {
  const file = reservationFile(ctx.dataDir, pool, address);
  const existing = readReservation(file);
  if (existing?.pool !== pool.name) return;
  try {
    unlinkSync(file);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') {
      // The address is free in the pool; its leftover reservation is taken over by the next claimer.
      ctx.log?.warning(
        `released ${describe(pool, address)} but could not remove its reservation ${file}: ${messageOf(err)}`,
      );
    }
  }
}

/** Keeps the reservation of a held address in step with its record (a re-ADD records a new container). */
export function refreshReservation(
  ctx: ReservationContext,
  pool: PoolRef,
  address: bigint,
  record: AllocationRecord,
): void {
  const file = reservationFile(ctx.dataDir, pool, address);
  const existing = readReservation(file);
  if (existing !== undefined && existing.pool !== pool.name) {
    ctx.log?.warning(`${describe(pool, address)} is also reserved for pool ${existing.pool}; left as it is`);
    return;
  }
  if (existing?.containerid === record.containerId && existing.podref === record.podRef) return;
  ensureDir(dirname(file));
  replace(file, encode(pool, record));
}

function takeOverIfLeaked(
  ctx: ReservationContext,
  pool: PoolRef,
  address: bigint,
  found: { readonly file: string; readonly existing: Reservation; readonly content: string },
): boolean {
  let range;
  try {
    range = masked(parseCidr(found.existing.range));
  } catch {
    ctx.log?.warning(`reservation ${found.file} names an unreadable range; ${describe(pool, address)} stays reserved`);
    return false;
  }
  const owner = { network: pool.network, name: found.existing.pool };
  const lock = tryAcquireLock(poolPaths(ctx.dataDir, owner), ctx.timing, ctx.log === undefined ? {} : { log: ctx.log });
  if (lock === undefined) return false; // its pool is being written: the address may be about to be committed there
  try {
    if (readPoolFile(poolPaths(ctx.dataDir, owner).data, range).has(address)) return false;
    ctx.log?.debug(
      `reservation of ${describe(pool, address)} was left by pool ${owner.name}, which does not hold it; taking it over`,
    );
    replace(found.file, found.content);
    return true;
  } finally {
    void lock.release();
  }
}

function reservationFile(dataDir: string, pool: PoolRef, address: bigint): string {
  const ip = { family: pool.range.cidr.family, value: address };
  const name = reservationName(ip, pool.networkNamed ? pool.network : undefined);
  return join(poolPaths(dataDir, pool).networkDir, 'reservations', escapeComponent(name));
}

function encode(pool: PoolRef, record: AllocationRecord): string {
  const doc: Reservation = {
    pool: pool.name,
    range: formatCidr(masked(pool.range.cidr)),
    containerid: record.containerId,
    podref: record.podRef,
    ifname: record.ifname,
  };
  return `${JSON.stringify(doc)}\n`;
}

function readReservation(file: string): Reservation | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    if (err instanceof SyntaxError) return undefined;
    throw new HereaboutsError(ErrorKind.Io, `cannot read reservation ${file}: ${messageOf(err)}`, { cause: err });
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const { pool, range, containerid, podref, ifname } = doc as Record<string, unknown>;
  const strings = [pool, range, containerid, podref, ifname];
  if (!strings.every((s): s is string => typeof s === 'string') || pool === '') return undefined;
  return {
    pool: pool as string,
    range: range as string,
    containerid: containerid as string,
    podref: podref as string,
    ifname: ifname as string,
  };
}

/** Creates `file` only if absent, durable before it appears (temp + fsync, link, fsync of the directory). */
function createDurable(file: string, content: string): boolean {
  const dir = dirname(file);
  const temp = join(dir, `.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  try {
    writeFileSync(temp, content, { mode: FILE_MODE, flag: 'wx', flush: true });
    linkSync(temp, file);
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw new HereaboutsError(ErrorKind.Io, `cannot create reservation ${file}: ${messageOf(err)}`, { cause: err });
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // A stray hidden temp file is harmless; the reservation itself is what matters.
    }
  }
  fsyncDir(dir);
  return true;
}

function replace(file: string, content: string): void {
  try {
    writeFileAtomic(file, content, { mode: FILE_MODE });
  } catch (err) {
    throw new HereaboutsError(ErrorKind.Io, `cannot write reservation ${file}: ${messageOf(err)}`, { cause: err });
  }
}

function ensureDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  } catch (err) {
    throw new HereaboutsError(ErrorKind.Io, `cannot create ${dir}: ${messageOf(err)}`, { cause: err });
  }
}

function describe(pool: PoolRef, address: bigint): string {
  return `${formatIP({ family: pool.range.cidr.family, value: address })} (pool ${pool.name})`;
}
