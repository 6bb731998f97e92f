// CHECK: every address of the previous result must still be allocated to this container and interface.
import { ErrorKind, HereaboutsError } from '../errors.ts';
import type { NetworkConfig } from '../config/types.ts';
import { formatIP, type IPAddress } from '../ip/address.ts';
import { contains } from '../ip/cidr.ts';
import type { Store } from '../store/store.ts';
import { describeHolder, isSameAttachment, type AttachmentId } from './attachment.ts';
import { isStaticAddress, poolsFor, type PoolsOption } from './pools.ts';

/** Static `addresses` entries are not allocations and are skipped; anything else must be held by the attachment. */
export async function verify(
  store: Store,
  config: NetworkConfig,
  attachment: AttachmentId,
  addresses: readonly IPAddress[],
  options: PoolsOption = {},
): Promise<void> {
  const pools = poolsFor(config, options);
  const owner = `container ${attachment.containerId} (${attachment.ifname})`;
  for (const ip of addresses) {
    if (isStaticAddress(config, ip)) continue;
    const candidates = pools.filter((pool) => contains(pool.range.cidr, ip));
    if (candidates.length === 0) {
      throw new HereaboutsError(ErrorKind.CheckFailed, `address ${formatIP(ip)} is in no configured range`);
    }
    let holder: string | undefined;
    let held = false;
    for (const pool of candidates) {
      const record = (await store.read(pool)).get(ip.value);
      if (record === undefined) continue;
      if (isSameAttachment(record, attachment)) held = true;
      else holder = describeHolder(record);
    }
    if (!held) {
      const why = holder === undefined ? 'is not allocated' : `is allocated to ${holder}`;
      throw new HereaboutsError(ErrorKind.CheckFailed, `address ${formatIP(ip)} ${why}, not to ${owner}`);
    }
  }
}
