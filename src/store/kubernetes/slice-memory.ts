// What this node remembers of a network's NodeSlicePool, beside the pool cache (`<cacheDir>/<network>/~nodeslice.json`):
// the reading of the object at one generation (its slice, its draining slices) and every slice this node has used
// and not yet seen released, so DEL and GC still find a pool that the NodeSlicePool no longer names. Only a cache
// for the reading (a request always reads the NodeSlicePool, never older than the version remembered here); the held
// slices are what only this node knows.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf } from '../../errors.ts';
import { errnoOf } from '../../fs/unsafe-file.ts';
import { poolPaths } from '../local/paths.ts';
import { writePoolFile } from '../local/pool-file.ts';
import type { Logger } from '../../log/logger.ts';
import { masked, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { poolName } from '../../config/names.ts';
import { CACHE_FORMAT, type CacheScope } from './pool-cache.ts';
import { isRecord } from '../../record.ts';

const FORMAT = 2;

export interface SliceMemory {
  /** The NodeSlicePool's metadata.uid: a generation means nothing in another incarnation of it. */
  readonly uid?: string;
  /** The NodeSlicePool's metadata.generation the reading below was made at. */
  readonly generation: number | undefined;
  /** Its metadata.resourceVersion then: the next read is served from the API server's cache, never older than it. */
  readonly resourceVersion?: string;
  readonly range: string;
  readonly sliceSize: number;
  readonly slice?: string;
  readonly draining: readonly string[];
  /** Slices this node allocated from (or was given) that no release has seen the controller let go of. */
  readonly held: readonly string[];
}

interface MemoryContext {
  readonly node: string;
  readonly cacheDir: string;
  readonly scope: CacheScope;
  readonly log: Logger;
}

const fileOf = (ctx: MemoryContext, network: string) => poolPaths(ctx.cacheDir, { network, name: '~nodeslice' });
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

export function readSliceMemory(ctx: MemoryContext, network: string): SliceMemory | undefined {
  const file = fileOf(ctx, network).data;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') ctx.log.warning(`ignoring unreadable slice cache ${file}: ${messageOf(err)}`);
    return undefined;
  }
  // Another format (an older version's), another cluster, namespace or node: not ours to trust.
  if (!isRecord(doc) || doc['format'] !== FORMAT) return undefined;
  if (
    doc['server'] !== ctx.scope.server ||
    doc['namespace'] !== ctx.scope.namespace ||
    doc['nodeSlicePool'] !== network ||
    doc['node'] !== ctx.node
  )
    return undefined;
  const { uid, generation, resourceVersion, range, sliceSize, slice, draining, held } = doc;
  if (
    (generation !== undefined && typeof generation !== 'number') ||
    typeof range !== 'string' ||
    typeof sliceSize !== 'number'
  )
    return undefined;
  if ((slice !== undefined && typeof slice !== 'string') || !strings(draining) || !strings(held)) return undefined;
  if (uid !== undefined && typeof uid !== 'string') return undefined;
  // Written by a version that did not record it, or not one the API server could parse: the next read takes any version.
  const version = typeof resourceVersion === 'string' && /^[1-9]\d*$/.test(resourceVersion) ? { resourceVersion } : {};
  return {
    ...(uid === undefined ? {} : { uid }),
    generation,
    ...version,
    range,
    sliceSize,
    ...(slice === undefined ? {} : { slice }),
    draining,
    held,
  };
}

export function writeSliceMemory(ctx: MemoryContext, network: string, memory: SliceMemory): void {
  const file = fileOf(ctx, network);
  const doc = {
    format: FORMAT,
    server: ctx.scope.server,
    namespace: ctx.scope.namespace,
    nodeSlicePool: network,
    node: ctx.node,
    ...memory,
  };
  try {
    mkdirSync(file.networkDir, { recursive: true, mode: 0o700 });
    writePoolFile(file.data, file.tempPrefix, `${JSON.stringify(doc)}\n`, () => {});
  } catch (err) {
    // The reading is read again next time; only held slices the NodeSlicePool no longer lists are lost.
    ctx.log.warning(`cannot cache the slice assignment in ${file.data}: ${messageOf(err)}`);
  }
}

/**
 * The slices of the pools this node has cached for the network (`<cacheDir>/<network>/*.json` of this node's
 * slice pools) that held something when last seen: a node upgraded from a version that kept no memory of its
 * slices, or one whose memory was lost, still finds them.
 */
export function cachedSlices(ctx: MemoryContext, network: string, networkName: string | undefined): Cidr[] {
  const dir = fileOf(ctx, network).networkDir;
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json') && !n.startsWith('.'));
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') ctx.log.warning(`cannot list the pool cache ${dir}: ${messageOf(err)}`);
    return [];
  }
  const found: Cidr[] = [];
  for (const name of names) {
    try {
      const doc: unknown = JSON.parse(readFileSync(join(dir, name), 'utf8'));
      if (
        !isRecord(doc) ||
        doc['format'] !== CACHE_FORMAT ||
        doc['server'] !== ctx.scope.server ||
        doc['namespace'] !== ctx.scope.namespace
      )
        continue;
      if (typeof doc['range'] !== 'string' || typeof doc['name'] !== 'string') continue;
      // Empty when last seen: this node's own writes always pass through this cache, so nothing of it is there.
      if (!isRecord(doc['allocations']) || Object.keys(doc['allocations']).length === 0) continue;
      const slice = masked(parseCidr(doc['range']));
      // Only this node's slice pools of this network: the name says whose it is.
      if (doc['name'] === poolName(slice, { ...(networkName === undefined ? {} : { networkName }), node: ctx.node }))
        found.push(slice);
    } catch (err) {
      // Not a pool cache file of ours (or torn): it names no pool to look in.
      if (
        !(err instanceof SyntaxError || err instanceof TypeError || err instanceof RangeError) &&
        errnoOf(err) === undefined
      )
        throw err;
    }
  }
  return found;
}
