// The claims' record pass: what a claim leaves behind when it goes without its finalizer running (removed by hand, or
// deleted between a commit and the next step). An IPAddress whose claim is gone loses its protection and goes first,
// then the claim's records go back to their pools: never an address handed to a new claim while a stale IPAddress
// still names it. Suspects come from the caches; every claim is confirmed gone by a live read.
import { formatIP } from '../../ip/address.ts';
import { formatCidr } from '../../ip/cidr.ts';
import { claimHolder, holderKey, type ClaimHolder } from '../../store/claim-record.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { PoolView } from '../pools/view.ts';
import { removeAddress, type ClaimContext } from './address-claims.ts';
import { planClaimRelease } from './claim-plan.ts';
import { CLAIMS_NETWORK, isClaimsName } from '../../config/names.ts';
import { recordedPool } from './handler.ts';
import { getOne, IPADDRESSCLAIMS, IPADDRESSES, metaOf, PREFIXCLAIMS } from './objects.ts';

/**
 * A record whose claim is gone is released only this long after it was written: a reconcile that committed it for a
 * claim deleted meanwhile (its finalizer removed by hand) may still be making its IPAddress.
 */
export const RECORD_GRACE_MS = 15_000;

export interface RecordPassInput {
  readonly pools: Iterable<PoolView>;
  /** The IPAddresses of hereabouts pools, "namespace/name" -> the claim they name. */
  readonly addresses: Iterable<[string, { readonly claim: string }]>;
  /** The claim is in the cache (so it exists, or did a moment ago: not a suspect). */
  readonly cached: (holder: ClaimHolder) => boolean;
  readonly leading: () => boolean;
}

/** Runs the pass; the number of records released. */
export async function releaseGoneClaims(ctx: ClaimContext, input: RecordPassInput): Promise<number> {
  /** IPAddresses of gone claims that are still there (another finalizer): their claims' records stay. */
  const lingering = new Set<string>();
  for (const [key, view] of input.addresses) {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const holder: ClaimHolder = { kind: 'IPAddressClaim', namespace, name: view.claim };
    if (input.cached(holder) || !input.leading() || (await claimExists(ctx, holder))) continue;
    lingering.add(holderKey(holder));
    const object = await getOne(ctx.api, IPADDRESSES, namespace, name);
    if (object === undefined) {
      lingering.delete(holderKey(holder));
      continue;
    }
    // Changed meanwhile, or held by another finalizer: the next pass looks again.
    if ((await removeAddress(ctx.api, metaOf(object))) !== 'gone') continue;
    lingering.delete(holderKey(holder));
    ctx.log.info(`deleted IPAddress ${key}: its IPAddressClaim is gone`);
  }

  const now = Date.now();
  const writer = new PoolWriter(ctx.api);
  let released = 0;
  for (const pool of input.pools) {
    if (pool.range === undefined) continue;
    const suspects = new Map<string, ClaimHolder>();
    for (const [address, record] of pool.allocations) {
      const holder = claimHolder(record);
      if (holder === undefined || input.cached(holder)) continue;
      if (holder.kind === 'IPAddressClaim' && lingering.has(holderKey(holder))) continue;
      const at = pool.allocatedAt.get(address);
      if (at !== undefined && now - at < RECORD_GRACE_MS) continue;
      suspects.set(`${holder.kind}|${holderKey(holder)}`, holder);
    }
    for (const holder of suspects.values()) {
      if (!input.leading() || (await claimExists(ctx, holder))) continue;
      // An own-addresses pool's reservations carry CLAIMS_NETWORK; a network's are left to the reservation pass,
      // which deletes them once no pool holds their address.
      const own = isClaimsName(pool.name);
      const ref = recordedPool(pool.name, formatCidr(pool.range), own ? CLAIMS_NETWORK : '');
      if (ref === undefined) continue;
      const gone = own
        ? await ctx.handler.releaseAddress(ref, holder)
        : await writer.commit(ref, planClaimRelease(holder), {
            budgetMs: 10_000,
            log: ctx.log,
            beforeWrite: () => {
              if (!input.leading()) throw new Error('lost the lease: no more writes');
            },
          });
      for (const value of gone) {
        released++;
        ctx.log.info(
          `released ${formatIP({ family: pool.range.family, value })} of ${holder.kind} ${holderKey(holder)} from IPPool ${pool.name}: claim gone`,
        );
      }
    }
  }
  return released;
}

async function claimExists(ctx: ClaimContext, holder: ClaimHolder): Promise<boolean> {
  const resource = holder.kind === 'IPAddressClaim' ? IPADDRESSCLAIMS : PREFIXCLAIMS;
  return (await getOne(ctx.api, resource, holder.namespace, holder.name)) !== undefined;
}
