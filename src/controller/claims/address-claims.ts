// The claim reconciler of Cluster API's ipamutil for IPAddressClaims whose poolRef names a hereabouts pool kind:
// finalizer first, then the address (handler.ts), then the IPAddress owned by the claim, then the claim's status.
// Every step can be cut short by a crash and run again: the pool record is found again by the claim's name, an
// IPAddress that exists already is kept (and its address claimed again if its record was lost, as after a
// `clusterctl move`), and the status is recomputed from the objects.
import { formatIP, tryParseIP } from '../../ip/address.ts';
import { formatCidr } from '../../ip/cidr.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { Log } from '../../log/json-log.ts';
import { recordOf } from '../../record.ts';
import type { ClaimHolder } from '../../store/claim-record.ts';
import type { PoolRef } from '../../store/store.ts';
import { conditionsMatch, withConditions, type Condition } from '../runtime/conditions.ts';
import type { EventRecorder, InvolvedObject } from '../runtime/events.ts';
import type { ClaimSpace } from './claim-space.ts';
import { recordedPool, type ClaimHandler } from './handler.ts';
import {
  apiVersionOf,
  CLUSTER_NAME_LABEL,
  CLUSTERS,
  createOne,
  deleteOne,
  finalizerPatch,
  getOne,
  GROUP,
  IPADDRESSCLAIMS,
  IPADDRESSES,
  IPPOOL_ANNOTATION,
  metaOf,
  PAUSED_ANNOTATION,
  patchOne,
  POOL_KINDS,
  PROTECT_FINALIZER,
  RELEASE_FINALIZER,
  type Meta,
  type PoolKind,
  type Resource,
} from './objects.ts';

/** On an IPAddress: the range of its IPPool and the prefix of its reservation's name (recordedPool). */
export const RANGE_ANNOTATION = 'hereabouts.cni.cncf.io/ippool-range';
export const RESERVATION_NETWORK_ANNOTATION = 'hereabouts.cni.cncf.io/reservation-network';

export interface PoolRefOf {
  readonly kind: PoolKind;
  readonly name: string;
}

/** The hereabouts pool a claim's spec.poolRef names; undefined when it names another provider's kind. */
export function ourPoolRef(object: unknown): PoolRefOf | undefined {
  const ref = recordOf(recordOf(recordOf(object)['spec'])['poolRef']);
  const kind = ref['kind'];
  const name = ref['name'];
  if (ref['apiGroup'] !== GROUP || typeof name !== 'string' || name === '') return undefined;
  return POOL_KINDS.find((k) => k === kind) === undefined ? undefined : { kind: kind as PoolKind, name };
}

export type ClaimResult = 'ready' | 'waiting' | 'paused' | 'released' | 'gone' | 'conflict';

export interface ClaimContext {
  readonly api: ApiClient;
  readonly handler: ClaimHandler;
  readonly events: EventRecorder;
  readonly log: Log;
  /** Addresses released within their pool's reuse grace (IPPool name -> address -> when), kept by the caller. */
  readonly resting: Map<string, Map<bigint, number>>;
  /**
   * Why Whereabouts runs in the cluster (its pods), or undefined: its reconciler deletes every reservation whose
   * podref is no live pod, so no new address is claimed with a reservation while it runs.
   */
  readonly whereabouts?: () => string | undefined;
  /**
   * Told each resourceVersion of a claim this reconcile wrote or found settled ("IPAddressClaim/ns/name" or
   * "PrefixClaim/ns/name"): the caller skips the watch events of its own writes.
   */
  readonly noteVersion?: (claim: string, resourceVersion: string) => void;
}

/** Reconciles one IPAddressClaim, read live. */
export async function reconcileAddressClaim(ctx: ClaimContext, namespace: string, name: string): Promise<ClaimResult> {
  const object = await getOne(ctx.api, IPADDRESSCLAIMS, namespace, name);
  if (object === undefined) return 'gone';
  const ref = ourPoolRef(object);
  if (ref === undefined) return 'gone';
  const meta = metaOf(object);
  const holder: ClaimHolder = { kind: 'IPAddressClaim', namespace, name };
  const note = (rv: string): void => ctx.noteVersion?.(`IPAddressClaim/${namespace}/${name}`, rv);
  // Paused first, as ipamutil: `clusterctl move` pauses the source, copies, then deletes the source's claims with
  // their finalizers removed (the record pass then releases what they held there).
  if (await paused(ctx, object, meta)) return 'paused';
  if (meta.deleting) return releaseClaim(ctx, meta, holder, ref, note);

  note(meta.resourceVersion);
  const withFinalizer = finalizerPatch(meta, RELEASE_FINALIZER, true);
  if (withFinalizer !== undefined) {
    const written = await patchOne(ctx.api, IPADDRESSCLAIMS, meta, withFinalizer, {
      resourceVersion: meta.resourceVersion,
      written: note,
    });
    if (written !== 'done') return 'conflict'; // changed meanwhile: read again
  }

  const lookup = await ctx.handler.fetchPool(namespace, ref.kind, ref.name);
  if (lookup.kind === 'not-ready') {
    await setReady(ctx, object, { status: 'False', reason: 'PoolNotReady', message: lookup.message });
    return 'waiting';
  }
  const space = lookup.space;
  const existing = await getOne(ctx.api, IPADDRESSES, namespace, name);
  const owned = existing !== undefined && claimNameOf(existing) === name ? existing : undefined;
  if (existing !== undefined && owned === undefined) {
    const message = `IPAddress ${namespace}/${name} exists and belongs to another claim`;
    await setReady(ctx, object, { status: 'False', reason: 'AllocationFailed', message });
    return 'waiting';
  }
  const wanted = owned === undefined ? undefined : tryParseIP(String(recordOf(recordOf(owned)['spec'])['address']));
  const whereabouts = space.reservations ? ctx.whereabouts?.() : undefined;
  const outcome = await ctx.handler.ensureAddress(space, holder, {
    ...(wanted === undefined || wanted.family !== space.family ? {} : { wanted: wanted.value }),
    resting: restingIn(ctx.resting, space),
    claimable: whereabouts === undefined,
  });
  if (outcome.kind === 'blocked') {
    const message = `${whereabouts ?? ''}: its reconciler deletes the reservations of machines' addresses; new claims wait until it is gone (docs/capi.md)`;
    await setReady(ctx, object, { status: 'False', reason: 'PoolNotReady', message });
    return 'waiting';
  }
  if (outcome.kind === 'exhausted') {
    const message = `no free address in ${ref.kind} ${ref.name} (${space.total} addresses)`;
    await setReady(ctx, object, { status: 'False', reason: 'PoolExhausted', message });
    return 'waiting';
  }
  if (outcome.kind !== 'held') {
    const ip = formatIP({ family: space.family, value: outcome.address });
    const why =
      outcome.kind === 'taken' ? 'is held by another claim or pod' : `is not an address of ${ref.kind} ${ref.name}`;
    const message = `IPAddress ${namespace}/${name} has ${ip}, which ${why}`;
    await setReady(ctx, object, { status: 'False', reason: 'AllocationFailed', message });
    return 'waiting';
  }
  const ip = formatIP({ family: space.family, value: outcome.address });
  if (outcome.claimed)
    ctx.log.info(`claimed ${ip} in IPPool ${space.pool.name} for IPAddressClaim ${namespace}/${name}`);
  if (owned === undefined) {
    const created = await createOne(ctx.api, IPADDRESSES, addressObject(meta, object, ref, space, ip));
    if (created === 'exists') return 'conflict'; // made meanwhile: judged again on the next read
  }
  await setReady(ctx, object, { status: 'True', reason: 'Ready', message: `${ip}/${space.prefix}` }, name);
  return 'ready';
}

/**
 * The claim is being deleted: its IPAddress goes, then its address goes back, then its finalizer. In that order: an
 * address is never free in its pool while an IPAddress still names it (a machine may still use it until then).
 */
async function releaseClaim(
  ctx: ClaimContext,
  meta: Meta,
  holder: ClaimHolder,
  ref: PoolRefOf,
  note: (resourceVersion: string) => void,
): Promise<ClaimResult> {
  if (!meta.finalizers.includes(RELEASE_FINALIZER)) return 'gone';
  const address = await getOne(ctx.api, IPADDRESSES, meta.namespace, meta.name);
  const owned = address !== undefined && claimNameOf(address) === meta.name ? address : undefined;
  let pool: PoolRef | undefined;
  if (owned !== undefined) {
    const addressMeta = metaOf(owned);
    const annotations = addressMeta.annotations;
    pool = recordedPool(
      annotations[IPPOOL_ANNOTATION] ?? '',
      annotations[RANGE_ANNOTATION] ?? '',
      annotations[RESERVATION_NETWORK_ANNOTATION] ?? '',
    );
    const removed = await removeAddress(ctx.api, addressMeta);
    if (removed === 'conflict') return 'conflict';
    if (removed === 'lingers') return 'waiting';
  }
  if (pool === undefined) {
    // No IPAddress (a crash before it was made, or after it went; or deleted by hand): the pool's IPPool.
    const lookup = await ctx.handler.fetchPool(meta.namespace, ref.kind, ref.name, { release: true });
    if (lookup.kind === 'ready') pool = lookup.space.pool;
    // Otherwise the record pass finds the record once the claim is gone (record-pass.ts).
  }
  if (pool !== undefined) {
    const released = await ctx.handler.releaseAddress(pool, holder);
    for (const value of released) {
      restingFor(ctx.resting, pool.name).set(value, Date.now());
      ctx.log.info(
        `released ${formatIP({ family: pool.range.cidr.family, value })} of IPAddressClaim ${meta.namespace}/${meta.name} from IPPool ${pool.name}`,
      );
    }
  }
  const written = await patchOne(ctx.api, IPADDRESSCLAIMS, meta, finalizerPatch(meta, RELEASE_FINALIZER, false) ?? {}, {
    resourceVersion: meta.resourceVersion,
    written: note,
  });
  return written === 'conflict' ? 'conflict' : 'released';
}

/**
 * Takes an IPAddress's protection off and deletes it, on the version the unprotect wrote (no read between).
 * 'lingers': another finalizer holds it, so its address stays held until it is gone; 'conflict': it changed since
 * `meta` was read.
 */
export async function removeAddress(api: ApiClient, meta: Meta): Promise<'gone' | 'lingers' | 'conflict'> {
  let version = meta.resourceVersion;
  const unprotect = finalizerPatch(meta, PROTECT_FINALIZER, false);
  if (unprotect !== undefined) {
    const written = await patchOne(api, IPADDRESSES, meta, unprotect, {
      resourceVersion: meta.resourceVersion,
      written: (rv) => (version = rv),
    });
    if (written === 'conflict') return 'conflict';
  }
  if (meta.deleting) return unprotect === undefined || meta.finalizers.length > 1 ? 'lingers' : 'gone';
  const deleted = await deleteOne(api, IPADDRESSES, { ...meta, resourceVersion: version });
  return deleted === 'lingers' || deleted === 'conflict' ? deleted : 'gone';
}

/** The claim's IPAddress: owned by the claim (garbage-collected with it), protected until the claim releases it. */
function addressObject(meta: Meta, claim: unknown, ref: PoolRefOf, space: ClaimSpace, ip: string): unknown {
  const cluster = clusterNameOf(claim);
  return {
    apiVersion: apiVersionOf(IPADDRESSES),
    kind: 'IPAddress',
    metadata: {
      name: meta.name,
      namespace: meta.namespace,
      finalizers: [PROTECT_FINALIZER],
      ...(cluster === undefined ? {} : { labels: { [CLUSTER_NAME_LABEL]: cluster } }),
      annotations: {
        [IPPOOL_ANNOTATION]: space.pool.name,
        [RANGE_ANNOTATION]: formatCidr(space.pool.range.cidr),
        [RESERVATION_NETWORK_ANNOTATION]: space.pool.networkNamed ? space.pool.network : '',
      },
      ownerReferences: [
        {
          apiVersion: apiVersionOf(IPADDRESSCLAIMS),
          kind: 'IPAddressClaim',
          name: meta.name,
          uid: meta.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      address: ip,
      prefix: space.prefix,
      ...(space.gateway === undefined ? {} : { gateway: formatIP(space.gateway) }),
      claimRef: { name: meta.name },
      poolRef: { apiGroup: GROUP, kind: ref.kind, name: ref.name },
    },
  };
}

/** Writes the claim's Ready condition (and addressRef) when they change; an Event when it becomes not ready. */
function setReady(
  ctx: ClaimContext,
  claim: unknown,
  ready: Omit<Condition, 'type'>,
  addressRef?: string,
): Promise<void> {
  const fields = addressRef === undefined ? {} : { addressRef: { name: addressRef } };
  return writeClaimStatus(
    ctx,
    { resource: IPADDRESSCLAIMS, kind: 'IPAddressClaim', served: 'AddressAllocated' },
    claim,
    ready,
    fields,
  );
}

/**
 * Writes a claim's Ready condition and status `fields` when they change (its own write noted, so that its watch event
 * is no news), and an Event: a Warning with the condition's reason, or `served` once it is ready.
 */
export async function writeClaimStatus(
  ctx: ClaimContext,
  of: { readonly resource: Resource; readonly kind: 'IPAddressClaim' | 'PrefixClaim'; readonly served: string },
  claim: unknown,
  ready: Omit<Condition, 'type'>,
  fields: Record<string, unknown> = {},
): Promise<void> {
  const meta = metaOf(claim);
  const status = recordOf(recordOf(claim)['status']);
  const wanted: Condition = { type: 'Ready', ...ready, observedGeneration: meta.generation };
  const same = Object.entries(fields).every(([k, v]) => JSON.stringify(status[k]) === JSON.stringify(v));
  if (same && conditionsMatch(status['conditions'], [wanted])) return;
  const patch = { status: { ...fields, conditions: withConditions(status['conditions'], [wanted], new Date()) } };
  await patchOne(ctx.api, of.resource, meta, patch, {
    status: true,
    written: (rv) => ctx.noteVersion?.(`${of.kind}/${meta.namespace}/${meta.name}`, rv),
  });
  const involved: InvolvedObject = {
    apiVersion: apiVersionOf(of.resource),
    kind: of.kind,
    name: meta.name,
    namespace: meta.namespace,
    uid: meta.uid,
  };
  if (ready.status !== 'True') await ctx.events.emit(involved, 'Warning', ready.reason, ready.message);
  else await ctx.events.emit(involved, 'Normal', of.served, ready.message);
}

/** Cluster API's pause: the claim's annotation, or its Cluster's spec.paused. */
async function paused(ctx: ClaimContext, claim: unknown, meta: Meta): Promise<boolean> {
  if (PAUSED_ANNOTATION in meta.annotations) return true;
  const cluster = clusterNameOf(claim);
  if (cluster === undefined) return false;
  const object = await getOne(ctx.api, CLUSTERS, meta.namespace, cluster);
  return object !== undefined && recordOf(recordOf(object)['spec'])['paused'] === true;
}

function clusterNameOf(claim: unknown): string | undefined {
  const fromSpec = recordOf(recordOf(claim)['spec'])['clusterName'];
  if (typeof fromSpec === 'string' && fromSpec !== '') return fromSpec;
  const label = metaOf(claim).labels[CLUSTER_NAME_LABEL];
  return label === undefined || label === '' ? undefined : label;
}

function claimNameOf(address: unknown): string | undefined {
  const name = recordOf(recordOf(recordOf(address)['spec'])['claimRef'])['name'];
  return typeof name === 'string' ? name : undefined;
}

function restingFor(resting: Map<string, Map<bigint, number>>, pool: string): Map<bigint, number> {
  let map = resting.get(pool);
  if (map === undefined) resting.set(pool, (map = new Map<bigint, number>()));
  return map;
}

/** The addresses of the space's pool released within its reuse grace (older entries are dropped). */
function restingIn(resting: Map<string, Map<bigint, number>>, space: ClaimSpace): Set<bigint> {
  const map = resting.get(space.pool.name);
  const out = new Set<bigint>();
  if (map === undefined) return out;
  const now = Date.now();
  for (const [address, at] of map) {
    if (now - at >= space.reuseGraceMs) map.delete(address);
    else out.add(address);
  }
  return out;
}
