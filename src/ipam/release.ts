// DEL: release this attachment's addresses in every range. Unknown attachments succeed (nothing to release), and
// an error in one range does not stop the others; all errors are reported together at the end.
import type { NetworkConfig } from '../config/types.ts';
import type { IPAddress } from '../ip/address.ts';
import type { Allocations, Plan, Store } from '../store/store.ts';
import { isSameAttachment, type AttachmentId } from './attachment.ts';
import { combineErrors } from './errors.ts';
import { poolsFor, type PoolsOption } from './pools.ts';

/** Resolves to the released addresses (empty for an unknown attachment). */
export async function release(
  store: Store,
  config: NetworkConfig,
  attachment: AttachmentId,
  options: PoolsOption = {},
): Promise<IPAddress[]> {
  const released: IPAddress[] = [];
  const errors: unknown[] = [];
  for (const pool of poolsFor(config, options)) {
    try {
      const values = await store.update(pool, planRelease(attachment));
      released.push(...values.map((value) => ({ family: pool.range.cidr.family, value })));
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0) {
    throw combineErrors(`releasing ${attachment.containerId} (${attachment.ifname}) failed`, errors);
  }
  return released;
}

/** A bound record (a sticky address, docs/sticky.md) outlives its pod: DEL keeps it, the controller releases it. */
export function planRelease(attachment: AttachmentId): Plan<bigint[]> {
  return (current) => {
    const exact = [...current]
      .filter(([, record]) => record.binding === undefined && isSameAttachment(record, attachment))
      .map(([address]) => address);
    const mine = exact.length > 0 ? exact : legacyOf(current, attachment);
    return { change: mine.length === 0 ? null : { release: mine }, value: mine };
  };
}

/**
 * A record Whereabouts before 0.7 wrote names the container but no interface, and its DEL released the container's
 * first one in the pool: so does a DEL that finds no record naming its interface. Without this, the address stayed
 * taken until the controller judged the pod.
 */
function legacyOf(current: Allocations, attachment: AttachmentId): bigint[] {
  let lowest: bigint | undefined;
  for (const [address, record] of current) {
    if (record.ifname !== '' || record.binding !== undefined || record.containerId !== attachment.containerId) continue;
    if (lowest === undefined || address < lowest) lowest = address;
  }
  return lowest === undefined ? [] : [lowest];
}
