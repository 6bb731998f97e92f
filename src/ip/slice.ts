// Node slices: a range cut into equal sub-prefixes (node_slice_size). Counted and addressed lazily, since an
// IPv6 /48 cut into /64s is 65 536 slices and wider ranges are astronomically many.
import { bitsOf } from './address.ts';
import { formatCidr, masked, networkOf, sizeOf, type Cidr } from './cidr.ts';
import { describeValue } from './range.ts';

/** How many /slicePrefix slices the range holds. */
export function sliceCount(range: Cidr, slicePrefix: number): bigint {
  checkSlicePrefix(range, slicePrefix);
  return 1n << BigInt(slicePrefix - range.prefix);
}

/** The index-th slice (0-based, in address order). */
export function nthSlice(range: Cidr, slicePrefix: number, index: bigint): Cidr {
  const count = sliceCount(range, slicePrefix);
  if (index < 0n || index >= count) {
    throw new RangeError(
      `slice ${index} is outside ${formatCidr(masked(range))}, which has ${count} /${slicePrefix} slices`,
    );
  }
  const size = sizeOf({ family: range.family, prefix: slicePrefix });
  return { family: range.family, address: networkOf(range) + index * size, prefix: slicePrefix };
}

/** Every slice in address order, one at a time. */
export function* slices(range: Cidr, slicePrefix: number): Generator<Cidr, void, undefined> {
  const count = sliceCount(range, slicePrefix);
  const size = sizeOf({ family: range.family, prefix: slicePrefix });
  let address = networkOf(range);
  for (let i = 0n; i < count; i++, address += size) {
    yield { family: range.family, address, prefix: slicePrefix };
  }
}

/** Index of the slice holding an address of the range. */
export function sliceIndexOf(range: Cidr, slicePrefix: number, value: bigint): bigint {
  checkSlicePrefix(range, slicePrefix);
  const network = networkOf(range);
  if (value < network || value >= network + sizeOf(range)) {
    throw new RangeError(`address ${describeValue(range.family, value)} is outside ${formatCidr(masked(range))}`);
  }
  return (value - network) >> BigInt(bitsOf(range.family) - slicePrefix);
}

function checkSlicePrefix(range: Cidr, slicePrefix: number): void {
  const bits = bitsOf(range.family);
  if (!Number.isInteger(slicePrefix) || slicePrefix < 0 || slicePrefix > bits) {
    throw new RangeError(`slice size /${slicePrefix} is not an IPv${range.family} prefix length (0-${bits})`);
  }
  if (slicePrefix < range.prefix) {
    throw new RangeError(`slice size /${slicePrefix} is larger than range ${formatCidr(masked(range))}`);
  }
}
