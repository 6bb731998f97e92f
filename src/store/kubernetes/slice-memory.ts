// What this node remembers of a network's NodeSlicePool, beside the pool cache (`<cacheDir>/<network>/~nodeslice.json`):
// the reading of the object at one generation (its slice, its draining slices) and every slice this node has used
// and not yet seen released, so DEL and GC still find a pool that the NodeSlicePool no longer names. Only a cache
// for the reading (a request always reads the NodeSlicePool); the held slices are what only this node knows.
import { mkdirSync, readFileSync } from 'node:fs';
import { errorCode, messageOf } from '../local/fs-errors.ts';
import { poolPaths } from '../local/paths.ts';
import { writePoolFile } from '../local/pool-file.ts';
import type { Logger } from '../../cni/log.ts';
import type { CacheScope } from './pool-cache.ts';
import { isObject } from './pool-object.ts';

const FORMAT = 2;

export interface SliceMemory {
  /** The NodeSlicePool's metadata.generation the reading below was made at. */
  readonly generation: number | undefined;
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
    if (errorCode(err) !== 'ENOENT') ctx.log.warning(`ignoring unreadable slice cache ${file}: ${messageOf(err)}`);
    return undefined;
  }
  // Another format (an older version's), another cluster, namespace or node: not ours to trust.
  if (!isObject(doc) || doc['format'] !== FORMAT) return undefined;
  if (doc['server'] !== ctx.scope.server || doc['namespace'] !== ctx.scope.namespace || doc['nodeSlicePool'] !== network || doc['node'] !== ctx.node) return undefined;
  const { generation, range, sliceSize, slice, draining, held } = doc;
  if ((generation !== undefined && typeof generation !== 'number') || typeof range !== 'string' || typeof sliceSize !== 'number') return undefined;
  if ((slice !== undefined && typeof slice !== 'string') || !strings(draining) || !strings(held)) return undefined;
  return { generation, range, sliceSize, ...(slice === undefined ? {} : { slice }), draining, held };
}

export function writeSliceMemory(ctx: MemoryContext, network: string, memory: SliceMemory): void {
  const file = fileOf(ctx, network);
  const doc = { format: FORMAT, server: ctx.scope.server, namespace: ctx.scope.namespace, nodeSlicePool: network, node: ctx.node, ...memory };
  try {
    mkdirSync(file.networkDir, { recursive: true, mode: 0o700 });
    writePoolFile(file.data, file.tempPrefix, `${JSON.stringify(doc)}\n`, () => {});
  } catch (err) {
    // The reading is read again next time; only held slices the NodeSlicePool no longer lists are lost.
    ctx.log.warning(`cannot cache the slice assignment in ${file.data}: ${messageOf(err)}`);
  }
}
