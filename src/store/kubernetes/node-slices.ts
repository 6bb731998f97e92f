// Node-slice mode (`node_slice_size`): the controller cuts the range into slices and records in the network's
// NodeSlicePool which node owns which; this node allocates only from the IPPool of its own slice,
// `[<network_name>-]<node>-<slice>`, so nodes never contend for a pool.
//
// Slices move: a node that left loses its slice, a reslice (new range or slice size) gives every node a new one,
// and the old slices drain (status.draining) until their pools are empty. So every request reads the NodeSlicePool
// (one GET; the node cache is keyed to its generation and slice size, never trusted for a time), ADD refuses a
// slice that drains, and DEL and GC look in every slice pool this node may still hold: its slice, its draining
// slices, and the slices it remembers having used (a reslice by a controller that keeps no draining list).
// The GET is served from the API server's watch cache, at least as new as the version this node last read: a view
// some milliseconds old is as safe as a request that stalled that long, since a claim in a slice that was given away
// is refused by the pool's retire mark (docs/safety.md), and it costs the API server no etcd read.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import type { Logger } from '../../log/logger.ts';
import type { NetworkConfig, RangeConfig } from '../../config/types.ts';
import { contains, formatCidr, lastOf, masked, networkOf, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { usableSpan } from '../../ip/range.ts';
import { poolName } from '../../config/names.ts';
import type { PoolPurpose, PoolRef } from '../store.ts';
import type { ApiClient } from '../../kube/api.ts';
import { toStoreError } from './api-errors.ts';
import { monotonicMs } from '../../clock.ts';
import type { WriteMemory } from './contention.ts';
import type { CacheScope } from './pool-cache.ts';

import { getObject } from './objects.ts';
import { STICKY_AREA_NODE } from '../sticky-binding.ts';
import { cachedSlices, readSliceMemory, writeSliceMemory, type SliceMemory } from './slice-memory.ts';
import { isRecord } from '../../record.ts';

export interface SliceContext {
  readonly api: ApiClient;
  readonly node: string;
  readonly cacheDir: string;
  readonly scope: CacheScope;
  readonly log: Logger;
  /** The host's memory: a reading that gave this node a usable slice is reused for SLICING_REUSE_MS by ADDs. */
  readonly memory?: WriteMemory;
}

/**
 * How long an ADD may allocate from a NodeSlicePool reading this host made earlier. A slice marked draining meanwhile
 * is then still allocated from for at most this long: the controller waits DEFAULT_DRAIN_GRACE_MS (60 s) after the
 * mark, longer than this plus an ADD's budget, before it confirms the slice's pool empty.
 */
export const SLICING_REUSE_MS = 5_000;

/** The network has no NodeSlicePool yet, or it assigns no usable slice to this node (CNI code 11). */
export class NoSliceError extends HereaboutsError {
  constructor(message: string, details: string) {
    super(ErrorKind.Unavailable, message, { details });
    this.name = 'NoSliceError';
  }
}

/** What a NodeSlicePool says about one node. */
export interface NodeSlicing {
  /** metadata.generation (it moves with every change of spec or status: the CRD has no status subresource). */
  readonly generation: number | undefined;
  readonly resourceVersion: string | undefined;
  readonly uid: string | undefined;
  /** spec.range: the whole range that is sliced. */
  readonly range: Cidr;
  readonly sliceSize: number;
  /** This node's slice, if it has one. */
  readonly slice?: Cidr;
  /** This node's slices in status.draining (its own slice among them when that drains). */
  readonly draining: readonly Cidr[];
  /** The object has status.draining: a controller that keeps slices until their pools are empty wrote it. */
  readonly tracksDraining: boolean;
}

interface Network {
  readonly name: string;
  readonly networkName?: string;
}

function networkOfConfig(config: NetworkConfig): Network {
  const networkName = config.ipam.networkName;
  return networkName !== undefined && networkName !== '' ? { name: networkName, networkName } : { name: config.name };
}

/** This node's slice pools for a network with node_slice_size: the one to allocate from, or all to release from. */
export async function nodeSlicePools(
  ctx: SliceContext,
  config: NetworkConfig,
  purpose: PoolPurpose,
): Promise<PoolRef[]> {
  const network = networkOfConfig(config);
  const key = `${ctx.scope.server}|${ctx.api.namespace}|${network.name}`;
  const recent = purpose === 'allocate' ? ctx.memory?.slicings.get(key) : undefined;
  if (recent !== undefined && monotonicMs() - recent.atMs < SLICING_REUSE_MS) {
    const slicing = slicingOf(recent.object, network.name, ctx.node);
    return allocatingPools(ctx.node, network, config, usableSlice(slicing, config, network.name, ctx.node));
  }
  const memory = readSliceMemory(ctx, network.name);
  const readAtMs = monotonicMs();
  let object: unknown;
  try {
    object = await getObject(ctx.api, 'nodeslicepools', network.name, { notOlderThan: memory?.resourceVersion ?? '0' });
  } catch (err) {
    throw toStoreError(err, `NodeSlicePool ${network.name}`);
  }
  if (purpose === 'release') return releasePools(ctx, config, network, object, memory);
  if (object === undefined) {
    throw new NoSliceError(
      `NodeSlicePool ${network.name} does not exist yet in namespace ${ctx.api.namespace}`,
      'the controller creates it from the NetworkAttachmentDefinition; retry later',
    );
  }
  const slicing = slicingOf(object, network.name, ctx.node, memory);
  const slice = usableSlice(slicing, config, network.name, ctx.node);
  remember(ctx, network.name, memory, slicing, [slice]);
  ctx.memory?.slicings.set(key, { object, atMs: readAtMs });
  return allocatingPools(ctx.node, network, config, slice);
}

/**
 * The pool a sticky ADD allocates from on a sticky network with node_slice_size: the sticky area's slice, which the
 * controller assigns to STICKY_AREA_NODE (docs/sticky.md). Every node allocates there; nothing of it is remembered as
 * this node's (a DEL never releases a bound record, and GC never collects one).
 */
export async function stickyAreaPools(ctx: SliceContext, config: NetworkConfig): Promise<PoolRef[]> {
  const network = networkOfConfig(config);
  let object: unknown;
  try {
    object = await getObject(ctx.api, 'nodeslicepools', network.name, { notOlderThan: '0' });
  } catch (err) {
    throw toStoreError(err, `NodeSlicePool ${network.name}`);
  }
  if (object === undefined) {
    throw new NoSliceError(
      `NodeSlicePool ${network.name} does not exist yet in namespace ${ctx.api.namespace}`,
      'the controller creates it from the NetworkAttachmentDefinition; retry later',
    );
  }
  return [stickyAreaPool(object, config)];
}

/** The sticky area's pool by a NodeSlicePool object (the controller pre-binds StatefulSets' listed addresses there). */
export function stickyAreaPool(object: unknown, config: NetworkConfig): PoolRef {
  const network = networkOfConfig(config);
  const slicing = slicingOf(object, network.name, STICKY_AREA_NODE);
  if (slicing.slice === undefined) {
    throw new NoSliceError(
      `NodeSlicePool ${network.name} has no sticky area (no slice for ${STICKY_AREA_NODE})`,
      'the controller assigns one to a network whose NetworkAttachmentDefinition sets "sticky"; retry later',
    );
  }
  const slice = usableSlice(slicing, config, network.name, STICKY_AREA_NODE);
  const [pool] = allocatingPools(STICKY_AREA_NODE, network, config, slice);
  if (pool === undefined) throw new NoSliceError(`no pool for the sticky area of ${network.name}`, '');
  return pool;
}

/** The pool an ADD allocates from in `node`'s slice. */
function allocatingPools(node: string, network: Network, config: NetworkConfig, slice: Cidr): PoolRef[] {
  return [{ ...slicePool(node, network, config, slice), sliceNode: node }];
}

/** Whether the slicing gives its node `slice` to allocate from: its slice, and not draining. */
export function allocatesFrom(slicing: NodeSlicing, slice: Cidr): boolean {
  const text = formatCidr(slice);
  return (
    slicing.slice !== undefined &&
    formatCidr(slicing.slice) === text &&
    !slicing.draining.some((d) => formatCidr(d) === text)
  );
}

/** The slice ADD may allocate from: the configured slicing's, this node's, not draining. */
function usableSlice(slicing: NodeSlicing, config: NetworkConfig, network: string, node: string): Cidr {
  for (const range of config.ipam.ranges) {
    const configured = formatCidr(masked(range.cidr));
    if (configured !== formatCidr(slicing.range) || config.ipam.nodeSliceSize !== slicing.sliceSize) {
      throw new NoSliceError(
        `NodeSlicePool ${network} slices ${formatCidr(slicing.range)} by /${slicing.sliceSize}, not ${configured} by /${config.ipam.nodeSliceSize} as configured`,
        'the controller has not yet resliced the network after a configuration change',
      );
    }
  }
  const slice = slicing.slice;
  if (slice === undefined) {
    throw new NoSliceError(
      `no slice assigned to node ${node} in NodeSlicePool ${network} yet`,
      'the controller assigns slices to nodes; retry later',
    );
  }
  if (!allocatesFrom(slicing, slice)) {
    throw new NoSliceError(
      `slice ${formatCidr(slice)} of node ${node} in NodeSlicePool ${network} is draining`,
      'the controller releases it once its pool is empty and assigns this node another slice; retry later',
    );
  }
  return slice;
}

/** Every pool this node may hold something in: its slice, its draining slices, the slices it remembers or has cached. */
function releasePools(
  ctx: SliceContext,
  config: NetworkConfig,
  network: Network,
  object: unknown,
  memory: SliceMemory | undefined,
): PoolRef[] {
  const cached = cachedSlices(ctx, network.name, network.networkName);
  const held = (memory?.held ?? []).map(parseOrUndefined).filter((c): c is Cidr => c !== undefined);
  const remembered = [...held, ...cached];
  if (object === undefined) return unique(remembered).map((slice) => slicePool(ctx.node, network, config, slice));
  const slicing = slicingOf(object, network.name, ctx.node, memory);
  const listed = [...(slicing.slice === undefined ? [] : [slicing.slice]), ...slicing.draining];
  // Slices the controller no longer lists were confirmed empty by it, when it keeps a draining list at all; the
  // pools this node has cached are looked in regardless (a pool of a version that kept no memory).
  const slices = unique([...listed, ...(slicing.tracksDraining ? [] : remembered), ...cached]);
  remember(ctx, network.name, memory, slicing, slices, { prune: true });
  // The slice the node allocates from is named as an ADD names it: the node agent keys a pool's warm set by the
  // settings it is named with, and a DEL named otherwise ran apart from the set (a new sandbox's ADD then got a
  // warm address instead of the one its DEL released). The others are only released from.
  const current = slicing.slice === undefined ? undefined : formatCidr(slicing.slice);
  return slices.map((slice) =>
    formatCidr(slice) === current
      ? { ...slicePool(ctx.node, network, config, slice), sliceNode: ctx.node }
      : slicePool(ctx.node, network, config, slice),
  );
}

function unique(slices: readonly Cidr[]): Cidr[] {
  return [...new Map(slices.map((slice) => [formatCidr(slice), slice])).values()];
}

function slicePool(node: string, network: Network, config: NetworkConfig, slice: Cidr): PoolRef {
  const range = config.ipam.ranges.find(
    (r) =>
      r.cidr.family === slice.family && contains(masked(r.cidr), { family: slice.family, value: networkOf(slice) }),
  );
  return {
    name: poolName(slice, { ...(network.networkName === undefined ? {} : { networkName: network.networkName }), node }),
    network: network.name,
    networkNamed: network.networkName !== undefined,
    // A slice of an earlier range: only released from, so its whole usable span will do.
    range: range === undefined ? wholeSlice(slice) : sliceRange(range, slice),
    ...(range === undefined ? {} : { resultPrefix: range.cidr.prefix }),
  };
}

function wholeSlice(slice: Cidr): RangeConfig {
  const span = usableSpan(slice);
  return { cidr: slice, start: span.first, end: span.last, exclude: [] };
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

/** Records the slices this node uses (and forgets, on a release, what the NodeSlicePool no longer lists). */
function remember(
  ctx: SliceContext,
  network: string,
  memory: SliceMemory | undefined,
  slicing: NodeSlicing,
  slices: readonly Cidr[],
  options: { prune?: boolean } = {},
): void {
  const held = new Set([...(options.prune === true ? [] : (memory?.held ?? [])), ...slices.map(formatCidr)]);
  const next: SliceMemory = {
    ...(slicing.uid === undefined ? {} : { uid: slicing.uid }),
    generation: slicing.generation,
    ...(slicing.resourceVersion === undefined ? {} : { resourceVersion: slicing.resourceVersion }),
    range: formatCidr(slicing.range),
    sliceSize: slicing.sliceSize,
    ...(slicing.slice === undefined ? {} : { slice: formatCidr(slicing.slice) }),
    draining: slicing.draining.map(formatCidr),
    held: [...held].sort(),
  };
  if (memory !== undefined && JSON.stringify(memory) === JSON.stringify(next)) return;
  writeSliceMemory(ctx, network, next);
}

/**
 * What a NodeSlicePool object (Whereabouts' shape: spec{range, sliceSize}, status.allocations[{nodeName,
 * sliceRange}], plus our optional status.draining[{nodeName, sliceRange, reason}]) says about `node`. The node's
 * remembered reading is reused when the object is the one it was read from (its uid: a NodeSlicePool deleted and
 * re-created starts its generations again) at the same generation and slicing.
 */
export function slicingOf(object: unknown, name: string, node: string, memory?: SliceMemory): NodeSlicing {
  const metadata = isRecord(object) ? object['metadata'] : undefined;
  const spec = isRecord(object) ? object['spec'] : undefined;
  const status = isRecord(object) ? object['status'] : undefined;
  const rangeText = isRecord(spec) ? spec['range'] : undefined;
  const range = parseOrUndefined(rangeText);
  if (range === undefined) {
    throw new HereaboutsError(
      ErrorKind.Internal,
      `NodeSlicePool ${name} has no valid spec.range (${JSON.stringify(rangeText)})`,
    );
  }
  const sizeText = isRecord(spec) ? spec['sliceSize'] : undefined;
  const sizeString = typeof sizeText === 'string' || typeof sizeText === 'number' ? String(sizeText) : '';
  const sliceSize = Number(sizeString.replace(/^\//, ''));
  if (
    !Number.isInteger(sliceSize) ||
    sliceSize < range.prefix ||
    sliceSize > (range.family === 4 ? 32 : 128) ||
    sizeString === ''
  ) {
    throw new HereaboutsError(
      ErrorKind.Internal,
      `NodeSlicePool ${name} has no valid spec.sliceSize (${JSON.stringify(sizeText)}) for ${formatCidr(range)}`,
    );
  }
  const generation =
    isRecord(metadata) && typeof metadata['generation'] === 'number' ? metadata['generation'] : undefined;
  const uid = isRecord(metadata) && typeof metadata['uid'] === 'string' ? metadata['uid'] : undefined;
  const resourceVersion =
    isRecord(metadata) && typeof metadata['resourceVersion'] === 'string' ? metadata['resourceVersion'] : undefined;
  const tracksDraining = isRecord(status) && Array.isArray(status['draining']);
  if (
    memory !== undefined &&
    generation !== undefined &&
    uid !== undefined &&
    memory.uid === uid &&
    memory.generation === generation &&
    memory.sliceSize === sliceSize &&
    memory.range === formatCidr(range)
  ) {
    return {
      generation,
      resourceVersion,
      uid,
      range,
      sliceSize,
      ...(memory.slice === undefined ? {} : { slice: masked(parseCidr(memory.slice)) }),
      draining: memory.draining.map((d) => masked(parseCidr(d))),
      tracksDraining,
    };
  }
  const mineIn = (list: unknown): unknown[] =>
    (Array.isArray(list) ? list : [])
      .filter((e: unknown): e is Record<string, unknown> => isRecord(e) && e['nodeName'] === node)
      .map((e) => e['sliceRange']);
  const [assigned] = mineIn(isRecord(status) ? status['allocations'] : undefined);
  const slice = assigned === undefined ? undefined : sliceOf(assigned, range, { name, node, within: true });
  // A draining slice may be of an earlier range or slice size.
  const draining = mineIn(isRecord(status) ? status['draining'] : undefined).map((text) =>
    sliceOf(text, range, { name, node, within: false }),
  );
  return {
    generation,
    resourceVersion,
    uid,
    range,
    sliceSize,
    ...(slice === undefined ? {} : { slice }),
    draining,
    tracksDraining,
  };
}

function sliceOf(text: unknown, range: Cidr, where: { name: string; node: string; within: boolean }): Cidr {
  const slice = parseOrUndefined(text);
  const fits =
    slice !== undefined &&
    slice.family === range.family &&
    (!where.within ||
      (slice.prefix >= range.prefix && contains(range, { family: slice.family, value: slice.address })));
  if (!fits) {
    throw new HereaboutsError(
      ErrorKind.Internal,
      `NodeSlicePool ${where.name}: slice ${JSON.stringify(text)} of node ${where.node} is not inside ${formatCidr(range)}`,
    );
  }
  return slice;
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
