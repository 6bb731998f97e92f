// The node-local cache: the last IPPool this node saw (allocations + resourceVersion), in the local store's layout
// and format (`<cacheDir>/<network>/<pool>.json`, an IPPool spec) with the object's metadata beside it, written
// crash-safe under the pool's file lock. It is only a starting guess: every write is conditional on the
// resourceVersion, and a decision that writes nothing is confirmed against the API.
import { readFileSync, unlinkSync } from 'node:fs';
import { messageOf } from '../../errors.ts';
import { errnoOf } from '../../fs/unsafe-file.ts';
import type { HeldLock } from '../../fs/lock.ts';
import type { PoolPaths } from '../local/paths.ts';
import { writePoolFile } from '../local/pool-file.ts';
import type { Allocations, PoolRef } from '../store.ts';
import type { ContentionMarks } from './contention.ts';
import { decodeAllocations, encodeAllocations, rangeText, type PoolState } from './pool-object.ts';
import { isRecord } from '../../record.ts';

export const CACHE_FORMAT = 1;

/** Which API server and namespace the cached object came from: a cache of another cluster is never used. */
export interface CacheScope {
  readonly server: string;
  readonly namespace: string;
}

/** The cached pool and what the node's earlier processes saw of other writers on it. */
export interface CachedPool extends PoolState {
  readonly contention: ContentionMarks;
}

/** The cached pool, or undefined (no cache, another scope, or unreadable: the caller reads the API instead). */
export function readCachedPool(
  paths: PoolPaths,
  pool: PoolRef,
  scope: CacheScope,
  warn: (msg: string) => void,
): CachedPool | undefined {
  let text: string;
  try {
    text = readFileSync(paths.data, 'utf8');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    warn(`cannot read cache ${paths.data}, reading the API instead: ${messageOf(err)}`);
    return undefined;
  }
  try {
    const doc: unknown = JSON.parse(text);
    if (!isRecord(doc) || doc['format'] !== CACHE_FORMAT) return undefined;
    if (doc['server'] !== scope.server || doc['namespace'] !== scope.namespace || doc['name'] !== pool.name)
      return undefined;
    if (doc['range'] !== rangeText(pool.range.cidr) || typeof doc['resourceVersion'] !== 'string') return undefined;
    const allocations = decodeAllocations(doc['allocations'], pool.range.cidr, {
      where: paths.data,
      warn,
      strict: true,
    });
    return {
      allocations,
      resourceVersion: doc['resourceVersion'],
      fresh: false,
      contention: marksIn(doc['contention']),
    };
  } catch (err) {
    warn(`ignoring unreadable cache ${paths.data}, reading the API instead: ${messageOf(err)}`);
    return undefined;
  }
}

export function writeCachedPool(
  paths: PoolPaths,
  pool: PoolRef,
  scope: CacheScope,
  state: { readonly allocations: Allocations; readonly resourceVersion: string; readonly contention: ContentionMarks },
  lock: HeldLock,
): void {
  const contention =
    state.contention.collidedUntil === undefined && state.contention.busyUntil === undefined
      ? {}
      : { contention: state.contention };
  const doc = {
    range: rangeText(pool.range.cidr),
    allocations: encodeAllocations(pool.range.cidr, state.allocations),
    format: CACHE_FORMAT,
    name: pool.name,
    resourceVersion: state.resourceVersion,
    server: scope.server,
    namespace: scope.namespace,
    ...contention,
  };
  writePoolFile(paths.data, paths.tempPrefix, `${JSON.stringify(doc)}\n`, () => lock.assertHeld());
}

/** Contention marks as cached; anything malformed is no mark (it is only a hint). */
function marksIn(value: unknown): ContentionMarks {
  if (!isRecord(value)) return {};
  const at = (key: string): number | undefined => {
    const v = value[key];
    return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
  };
  const collidedUntil = at('collidedUntil');
  const busyUntil = at('busyUntil');
  return {
    ...(collidedUntil === undefined ? {} : { collidedUntil }),
    ...(busyUntil === undefined ? {} : { busyUntil }),
  };
}

/** Forgets the cached pool (it no longer exists in the API). */
export function dropCachedPool(paths: PoolPaths): void {
  try {
    unlinkSync(paths.data);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}
