// PrefixClaims (DESIGN §12): a CIDR of a given length, or a specific CIDR, from a pool that lists its own addresses,
// exclusive with every address and block the pool's claims hold. Lifecycle as an IPAddressClaim's: a finalizer
// first, then the block (one conditional IPPool write), then the status; on deletion the block goes back, then the
// finalizer. The status records where the block lives, so it is released even once its pool is gone.
import { bitsOf } from '../../ip/address.ts';
import { formatCidr, parseCidr, type Cidr } from '../../ip/cidr.ts';
import { recordOf } from '../../record.ts';
import type { ClaimHolder } from '../../store/claim-record.ts';
import type { Condition } from '../runtime/conditions.ts';
import { writeClaimStatus, type ClaimContext, type ClaimResult } from './address-claims.ts';
import { recordedPool } from './handler.ts';
import {
  finalizerPatch,
  getOne,
  metaOf,
  patchOne,
  POOL_KINDS,
  PREFIX_FINALIZER,
  PREFIXCLAIMS,
  type Meta,
  type PoolKind,
} from './objects.ts';

export interface PrefixRequest {
  readonly pool: { readonly kind: PoolKind; readonly name: string };
  readonly prefixLength?: number;
  readonly cidr?: Cidr;
}

/** The claim's spec, or a TypeError naming the field. */
export function parsePrefixRequest(spec: unknown): PrefixRequest {
  const s = recordOf(spec);
  const ref = recordOf(s['poolRef']);
  const kind = POOL_KINDS.find((k) => k === ref['kind']);
  if (kind === undefined)
    throw new TypeError(`spec.poolRef.kind ${JSON.stringify(ref['kind'])} must be one of ${POOL_KINDS.join(', ')}`);
  if (typeof ref['name'] !== 'string' || ref['name'] === '')
    throw new TypeError(`spec.poolRef.name ${JSON.stringify(ref['name'])} must name a pool`);
  const length = s['prefixLength'];
  const cidrText = s['cidr'];
  if ((length === undefined) === (cidrText === undefined))
    throw new TypeError('spec: give exactly one of prefixLength and cidr');
  if (length !== undefined) {
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || length > 128)
      throw new TypeError(`spec.prefixLength ${JSON.stringify(length)} must be a prefix length of 0-128`);
    return { pool: { kind, name: ref['name'] }, prefixLength: length };
  }
  let cidr: Cidr;
  try {
    cidr = parseCidr(cidrText as string);
  } catch (err) {
    throw new TypeError(`spec.cidr ${JSON.stringify(cidrText)}: ${(err as Error).message}`, { cause: err });
  }
  return { pool: { kind, name: ref['name'] }, cidr };
}

export async function reconcilePrefixClaim(ctx: ClaimContext, namespace: string, name: string): Promise<ClaimResult> {
  const object = await getOne(ctx.api, PREFIXCLAIMS, namespace, name);
  if (object === undefined) return 'gone';
  const meta = metaOf(object);
  const status = recordOf(recordOf(object)['status']);
  const note = (rv: string): void => ctx.noteVersion?.(`PrefixClaim/${namespace}/${name}`, rv);
  if (meta.deleting) return releasePrefix(ctx, meta, status, note);

  let request: PrefixRequest;
  try {
    request = parsePrefixRequest(recordOf(object)['spec']);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    await setStatus(ctx, object, { status: 'False', reason: 'InvalidSpec', message: err.message });
    return 'waiting';
  }
  note(meta.resourceVersion);
  const withFinalizer = finalizerPatch(meta, PREFIX_FINALIZER, true);
  if (withFinalizer !== undefined) {
    const written = await patchOne(ctx.api, PREFIXCLAIMS, meta, withFinalizer, {
      resourceVersion: meta.resourceVersion,
      written: note,
    });
    if (written !== 'done') return 'conflict';
  }
  const lookup = await ctx.handler.fetchPool(namespace, request.pool.kind, request.pool.name);
  if (lookup.kind === 'not-ready') {
    await setStatus(ctx, object, { status: 'False', reason: 'PoolNotReady', message: lookup.message });
    return 'waiting';
  }
  const space = lookup.space;
  const length = request.cidr?.prefix ?? request.prefixLength ?? 0;
  const refuse = async (reason: string, message: string): Promise<ClaimResult> => {
    await setStatus(ctx, object, { status: 'False', reason, message });
    return 'waiting';
  };
  if (!space.prefixes)
    return refuse(
      'AllocationFailed',
      `${request.pool.kind} ${request.pool.name} names a network: prefixes are served only from pools that list their own addresses`,
    );
  if (request.cidr !== undefined && request.cidr.family !== space.family)
    return refuse('AllocationFailed', `spec.cidr ${formatCidr(request.cidr)} is not IPv${space.family} like the pool`);
  if (length > bitsOf(space.family) || length < space.prefix)
    return refuse(
      'AllocationFailed',
      `a /${length} does not fit in ${request.pool.kind} ${request.pool.name}, whose subnet is a /${space.prefix}`,
    );
  const holder: ClaimHolder & { prefixLength: number } = { kind: 'PrefixClaim', namespace, name, prefixLength: length };
  const outcome = await ctx.handler.ensurePrefix(space, holder, request.cidr);
  if (outcome.kind === 'exhausted')
    return refuse('PoolExhausted', `no free aligned /${length} in ${request.pool.kind} ${request.pool.name}`);
  if (outcome.kind !== 'held') {
    const why = {
      taken: 'overlaps an address or prefix held in the pool',
      outside: `is not wholly inside ${request.pool.kind} ${request.pool.name}`,
      misaligned: 'has host bits set',
    }[outcome.kind];
    return refuse('AllocationFailed', `${formatCidr(outcome.cidr)} ${why}`);
  }
  const cidr = formatCidr(outcome.cidr);
  if (outcome.claimed)
    ctx.log.info(`claimed ${cidr} in IPPool ${space.pool.name} for PrefixClaim ${namespace}/${name}`);
  await setStatus(
    ctx,
    object,
    { status: 'True', reason: 'Ready', message: cidr },
    {
      cidr,
      ippool: space.pool.name,
      ippoolRange: formatCidr(space.pool.range.cidr),
      reservationNetwork: space.pool.networkNamed ? space.pool.network : '',
    },
  );
  return 'ready';
}

async function releasePrefix(
  ctx: ClaimContext,
  meta: Meta,
  status: Record<string, unknown>,
  note: (resourceVersion: string) => void,
): Promise<ClaimResult> {
  if (!meta.finalizers.includes(PREFIX_FINALIZER)) return 'gone';
  const str = (key: string): string => (typeof status[key] === 'string' ? status[key] : '');
  const cidr = str('cidr');
  const pool = recordedPool(str('ippool'), str('ippoolRange'), str('reservationNetwork'));
  if (pool !== undefined && cidr !== '') {
    const length = parseCidr(cidr).prefix;
    const holder = { kind: 'PrefixClaim' as const, namespace: meta.namespace, name: meta.name, prefixLength: length };
    await ctx.handler.releaseAddress(pool, holder);
    ctx.log.info(`released ${cidr} of PrefixClaim ${meta.namespace}/${meta.name} from IPPool ${pool.name}`);
  }
  // A claim deleted before its status was written holds no block, or one the record pass finds once it is gone.
  const written = await patchOne(ctx.api, PREFIXCLAIMS, meta, finalizerPatch(meta, PREFIX_FINALIZER, false) ?? {}, {
    resourceVersion: meta.resourceVersion,
    written: note,
  });
  return written === 'conflict' ? 'conflict' : 'released';
}

function setStatus(
  ctx: ClaimContext,
  claim: unknown,
  ready: Omit<Condition, 'type'>,
  fields: Record<string, string> = {},
): Promise<void> {
  return writeClaimStatus(
    ctx,
    { resource: PREFIXCLAIMS, kind: 'PrefixClaim', served: 'PrefixAllocated' },
    claim,
    ready,
    fields,
  );
}
