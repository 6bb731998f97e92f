// Node-slice mode (`node_slice_size`): the controller cuts the range into slices and records in the network's
// NodeSlicePool which node owns which; this node allocates only from the IPPool of its own slice,
// `[<network_name>-]<node>-<slice>`, so nodes never contend for a pool. The assignment is cached beside the pool
// cache for a while (a slice changes owner only when its node leaves the cluster).
import { mkdirSync, readFileSync } from 'node:fs';
import { CniCode, CniError } from '../../cni/errors.ts';
import type { Logger } from '../../cni/log.ts';
import type { NetworkConfig, RangeConfig } from '../../config/types.ts';
import { contains, formatCidr, lastOf, masked, networkOf, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { usableSpan } from '../../ip/range.ts';
import { errorCode, messageOf } from '../local/fs-errors.ts';
import { poolPaths } from '../local/paths.ts';
import { writePoolFile } from '../local/pool-file.ts';
import { poolName } from '../names.ts';
import type { PoolRef } from '../store.ts';
import type { ApiClient } from './api.ts';
import { toCniError } from './errors.ts';
import type { CacheScope } from './pool-cache.ts';
import { isObject } from './pool-object.ts';
import { getObject } from './resources.ts';

export interface SliceContext {
  readonly api: ApiClient;
  readonly node: string;
  readonly cacheDir: string;
  readonly scope: CacheScope;
  /** How long a cached slice assignment is trusted before the NodeSlicePool is read again. */
  readonly ttlMs: number;
  readonly log: Logger;
}

/** The network has no NodeSlicePool yet, or it assigns no slice to this node (CNI code 11). */
export class NoSliceError extends CniError {
  constructor(message: string, details: string) {
    super(CniCode.TryAgainLater, message, { details });
    this.name = 'NoSliceError';
  }
}

export interface SliceAssignment {
  /** The NodeSlicePool's spec.range (the whole range that is sliced). */
  readonly range: Cidr;
  /** This node's slice. */
  readonly slice: Cidr;
}

/** This node's slice pools, one per configured range, for a network with node_slice_size. */
export async function nodeSlicePools(ctx: SliceContext, config: NetworkConfig): Promise<PoolRef[]> {
  const networkName = config.ipam.networkName;
  const networkNamed = networkName !== undefined && networkName !== '';
  const network = networkNamed ? networkName : config.name;
  const assignment = await sliceAssignment(ctx, network);
  return config.ipam.ranges.map((range) => {
    if (formatCidr(masked(range.cidr)) !== formatCidr(assignment.range)) {
      throw new CniError(
        CniCode.TryAgainLater,
        `NodeSlicePool ${network} slices ${formatCidr(assignment.range)}, not the configured range ${formatCidr(range.cidr)}`,
        { details: 'the controller has not yet resliced the network after a configuration change' },
      );
    }
    return {
      name: poolName(assignment.slice, { ...(networkNamed ? { networkName } : {}), node: ctx.node }),
      network,
      networkNamed,
      range: sliceRange(range, assignment.slice),
      resultPrefix: range.cidr.prefix,
    };
  });
}

/**
 * The range within one slice: the slice's usable span (its own network and broadcast addresses excluded, as
 * Whereabouts does), narrowed by range_start/range_end, with the exclusions and the gateway that fall inside it.
 */
export function sliceRange(range: RangeConfig, slice: Cidr): RangeConfig {
  const span = usableSpan(slice);
  const first = networkOf(slice);
  const last = lastOf(slice);
  return {
    cidr: slice,
    start: range.start > span.first ? range.start : span.first,
    end: range.end < span.last ? range.end : span.last,
    exclude: range.exclude.filter((block) => block.last >= first && block.first <= last),
    ...(range.gateway !== undefined && contains(slice, range.gateway) ? { gateway: range.gateway } : {}),
  };
}

async function sliceAssignment(ctx: SliceContext, network: string): Promise<SliceAssignment> {
  const file = poolPaths(ctx.cacheDir, { network, name: '~nodeslice' });
  const cached = readCachedAssignment(file.data, ctx, network);
  if (cached !== undefined) return cached;
  let object: unknown;
  try {
    object = await getObject(ctx.api, 'nodeslicepools', network);
  } catch (err) {
    throw toCniError(err, `NodeSlicePool ${network}`);
  }
  if (object === undefined) {
    throw new NoSliceError(
      `NodeSlicePool ${network} does not exist yet in namespace ${ctx.api.namespace}`,
      'the controller creates it from the NetworkAttachmentDefinition; retry later',
    );
  }
  const assignment = assignmentOf(object, network, ctx.node);
  try {
    mkdirSync(file.networkDir, { recursive: true, mode: 0o700 });
    const doc = {
      format: 1,
      server: ctx.scope.server,
      namespace: ctx.scope.namespace,
      nodeSlicePool: network,
      node: ctx.node,
      range: formatCidr(assignment.range),
      slice: formatCidr(assignment.slice),
      fetchedAt: Date.now(),
    };
    writePoolFile(file.data, file.tempPrefix, `${JSON.stringify(doc)}\n`, () => {});
  } catch (err) {
    // Only a cache: the next call reads the NodeSlicePool again.
    ctx.log.warning(`cannot cache the slice assignment in ${file.data}: ${messageOf(err)}`);
  }
  return assignment;
}

function readCachedAssignment(file: string, ctx: SliceContext, network: string): SliceAssignment | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') ctx.log.warning(`ignoring unreadable slice cache ${file}: ${messageOf(err)}`);
    return undefined;
  }
  if (!isObject(doc) || doc['format'] !== 1) return undefined;
  const { server, namespace, nodeSlicePool, node, range, slice, fetchedAt } = doc;
  if (server !== ctx.scope.server || namespace !== ctx.scope.namespace || nodeSlicePool !== network || node !== ctx.node) {
    return undefined;
  }
  if (typeof fetchedAt !== 'number' || Date.now() - fetchedAt > ctx.ttlMs || fetchedAt > Date.now()) return undefined;
  if (typeof range !== 'string' || typeof slice !== 'string') return undefined;
  try {
    return { range: masked(parseCidr(range)), slice: masked(parseCidr(slice)) };
  } catch (err) {
    ctx.log.warning(`ignoring unreadable slice cache ${file}: ${messageOf(err)}`);
    return undefined;
  }
}

/** Finds this node's slice in a NodeSlicePool object (Whereabouts' shape: status.allocations[{nodeName, sliceRange}]). */
export function assignmentOf(object: unknown, name: string, node: string): SliceAssignment {
  const spec = isObject(object) ? object['spec'] : undefined;
  const status = isObject(object) ? object['status'] : undefined;
  const rangeText = isObject(spec) ? spec['range'] : undefined;
  const range = parseOrUndefined(rangeText);
  if (range === undefined) {
    throw new CniError(CniCode.Internal, `NodeSlicePool ${name} has no valid spec.range (${JSON.stringify(rangeText)})`);
  }
  const allocations = isObject(status) && Array.isArray(status['allocations']) ? status['allocations'] : [];
  const mine = allocations.find((a: unknown) => isObject(a) && a['nodeName'] === node) as Record<string, unknown> | undefined;
  if (mine === undefined) {
    throw new NoSliceError(`no slice assigned to node ${node} in NodeSlicePool ${name} yet`, 'the controller assigns slices to nodes; retry later');
  }
  const slice = parseOrUndefined(mine['sliceRange']);
  if (slice === undefined || slice.family !== range.family || slice.prefix < range.prefix || !contains(range, { family: slice.family, value: slice.address })) {
    throw new CniError(CniCode.Internal, `NodeSlicePool ${name}: slice ${JSON.stringify(mine['sliceRange'])} of node ${node} is not inside ${formatCidr(range)}`);
  }
  return { range, slice };
}

function parseOrUndefined(text: unknown): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return masked(parseCidr(text));
  } catch (err) {
    if (err instanceof TypeError || err instanceof RangeError) return undefined;
    throw err;
  }
}
