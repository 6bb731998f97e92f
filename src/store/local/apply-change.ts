// Applies a plan's PoolChange to a pool's allocations. A change that contradicts the state it was planned on is a
// bug in the plan, so it fails loudly instead of overwriting someone's address.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { contains } from '../../ip/cidr.ts';
import { formatIP } from '../../ip/address.ts';
import { claimsOf, type Allocations, type AllocationRecord, type PoolChange, type PoolRef } from '../store.ts';

export function applyChange(pool: PoolRef, current: Allocations, change: PoolChange): Map<bigint, AllocationRecord> {
  const next = new Map(current);
  const family = pool.range.cidr.family;
  const text = (address: bigint): string => formatIP({ family, value: address });
  for (const address of change.release ?? []) next.delete(address);
  for (const { address, record } of change.update ?? []) {
    if (!next.has(address)) {
      throw new HereaboutsError(
        ErrorKind.Internal,
        `pool ${pool.name}: update of ${text(address)}, which is not allocated`,
      );
    }
    next.set(address, record);
  }
  for (const { address, record } of claimsOf(change)) {
    if (!contains(pool.range.cidr, { family, value: address })) {
      throw new HereaboutsError(ErrorKind.Internal, `pool ${pool.name}: claim of ${text(address)}, outside the range`);
    }
    if (next.has(address)) {
      throw new HereaboutsError(
        ErrorKind.Internal,
        `pool ${pool.name}: claim of ${text(address)}, which is already allocated`,
      );
    }
    next.set(address, record);
  }
  return next;
}
