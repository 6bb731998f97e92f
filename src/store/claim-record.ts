// The record of an address or prefix held by a claim that is not a pod's (DESIGN §12): a Cluster API IPAddressClaim or
// a PrefixClaim. It is an ordinary IPPool allocation (every reader counts the address as taken) whose podref is empty,
// so no pod rule can find it orphaned, and whose id names the claim. The claims reconciler alone releases it: when its
// claim is deleted (the ReleaseAddress finalizer) or is confirmed gone.
//
// A prefix claim holds a whole block: its record sits at the block's first address and the id carries the length.
// Only the controller writes pools that hold prefixes (a pool that lists its own addresses; no pod draws from it).
import { bitsOf, type Family } from '../ip/address.ts';
import type { AllocationRecord } from './store.ts';

export const CLAIM_ID_PREFIX = 'hereabouts-claim:';
export const PREFIX_ID_PREFIX = 'hereabouts-prefix:';
export const CLAIM_IFNAME = 'claim';

export interface ClaimHolder {
  readonly kind: 'IPAddressClaim' | 'PrefixClaim';
  readonly namespace: string;
  readonly name: string;
  /** The length of the block a PrefixClaim holds (its record sits at the block's first address). */
  readonly prefixLength?: number;
}

export function claimRecord(holder: ClaimHolder, createdAt: string): AllocationRecord {
  const id =
    holder.kind === 'IPAddressClaim'
      ? `${CLAIM_ID_PREFIX}${holder.namespace}/${holder.name}`
      : `${PREFIX_ID_PREFIX}${holder.prefixLength ?? 0}:${holder.namespace}/${holder.name}`;
  return { containerId: id, ifname: CLAIM_IFNAME, podRef: '', createdAt };
}

/** The claim holding a record; undefined for any other record. */
export function claimHolder(
  record: Pick<AllocationRecord, 'containerId' | 'ifname' | 'podRef'>,
): ClaimHolder | undefined {
  if (record.podRef !== '' || record.ifname !== CLAIM_IFNAME) return undefined;
  const id = record.containerId;
  if (id.startsWith(CLAIM_ID_PREFIX)) {
    const ref = splitRef(id.slice(CLAIM_ID_PREFIX.length));
    return ref === undefined ? undefined : { kind: 'IPAddressClaim', ...ref };
  }
  if (id.startsWith(PREFIX_ID_PREFIX)) {
    const rest = id.slice(PREFIX_ID_PREFIX.length);
    const colon = rest.indexOf(':');
    const digits = rest.slice(0, colon);
    const length = Number(digits);
    const ref = splitRef(rest.slice(colon + 1));
    if (!/^\d{1,3}$/.test(digits) || length > 128 || ref === undefined) return undefined;
    return { kind: 'PrefixClaim', ...ref, prefixLength: length };
  }
  return undefined;
}

/** The last address a record at `first` holds: its PrefixClaim's whole block, else the one address. */
export function heldThrough(holder: ClaimHolder | undefined, family: Family, first: bigint): bigint {
  const length = holder?.prefixLength;
  return length === undefined ? first : first + (1n << BigInt(Math.max(0, bitsOf(family) - length))) - 1n;
}

export function sameHolder(a: ClaimHolder, b: ClaimHolder): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}

/** "namespace/name" of the claim. */
export function holderKey(holder: ClaimHolder): string {
  return `${holder.namespace}/${holder.name}`;
}

function splitRef(text: string): { namespace: string; name: string } | undefined {
  const slash = text.indexOf('/');
  if (slash < 1 || slash === text.length - 1) return undefined;
  return { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}
