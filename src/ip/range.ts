// Range arithmetic: the usable span of a prefix, Whereabouts' `range` syntax, and IPPool offsets.
import { bitsOf, formatIP, maxValue, tryParseIP, type Family } from './address.ts';
import { formatCidr, lastOf, masked, networkOf, sizeOf, type Cidr } from './cidr.ts';
import { blockOfCidr, type Block } from './block.ts';

/**
 * The addresses a range may hand out: network+1 … last−1 (IPv6 too, as Whereabouts), both addresses of a
 * /31 or /127, the one address of a /32 or /128.
 */
export function usableSpan(cidr: Cidr): Block {
  const first = networkOf(cidr);
  const last = lastOf(cidr);
  const hostBits = bitsOf(cidr.family) - cidr.prefix;
  return hostBits <= 1 ? { first, last } : { first: first + 1n, last: last - 1n };
}

export interface ClampBounds {
  readonly start?: bigint;
  readonly end?: bigint;
}

export interface IgnoredBound {
  readonly bound: 'start' | 'end';
  readonly value: bigint;
  /** `before-start`: an end below the (effective) start. */
  readonly reason: 'outside-span' | 'before-start';
}

export interface ClampedSpan {
  readonly block: Block;
  /** Configured bounds that were ignored; the config layer logs each as a warning. */
  readonly ignored: readonly IgnoredBound[];
}

/**
 * Applies range_start/range_end to a usable span the way Whereabouts does (GetIPRange): a start outside the span is
 * ignored, then an end outside start…span end is ignored, so a config that worked there never breaks here.
 */
export function clampSpan(span: Block, bounds: ClampBounds): ClampedSpan {
  const ignored: IgnoredBound[] = [];
  let first = span.first;
  let last = span.last;
  if (bounds.start !== undefined) {
    if (bounds.start >= span.first && bounds.start <= span.last) first = bounds.start;
    else ignored.push({ bound: 'start', value: bounds.start, reason: 'outside-span' });
  }
  if (bounds.end !== undefined) {
    if (bounds.end >= first && bounds.end <= span.last) last = bounds.end;
    else {
      const reason = bounds.end < first && bounds.end >= span.first ? 'before-start' : 'outside-span';
      ignored.push({ bound: 'end', value: bounds.end, reason });
    }
  }
  return { block: { first, last }, ignored };
}

export interface ParsedRange {
  /** The range's prefix masked to its network (host bits in the text imply nothing, as in Whereabouts). */
  readonly cidr: Cidr;
  /** From `A-B/len` only: A and B as written (not yet clamped to the usable span). */
  readonly start?: bigint;
  readonly end?: bigint;
}

/**
 * Parses a `range` value: a CIDR (`10.0.0.0/24`; host bits are masked off) or Whereabouts' `A-B/len`, where the
 * prefix is that of B/len, B is the range end and A, the range start, must lie inside it.
 */
export function parseRangeText(text: string): ParsedRange {
  if (typeof text !== 'string') throw new TypeError(`range must be a string, got ${typeof text}`);
  const quoted = `range ${JSON.stringify(text)}`;
  const dash = text.indexOf('-');
  if (dash < 0) return { cidr: masked(parsePrefixed(text, quoted, 'address')) };

  const startText = text.slice(0, dash);
  const start = tryParseIP(startText);
  if (start === undefined) throw new TypeError(`${quoted}: bad start address ${JSON.stringify(startText)}`);
  const endCidr = parsePrefixed(text.slice(dash + 1), quoted, 'end address');
  const cidr = masked(endCidr);
  if (start.family !== cidr.family) {
    throw new RangeError(
      `${quoted}: start ${formatIP(start)} is IPv${start.family} but ${formatCidr(cidr)} is IPv${cidr.family}`,
    );
  }
  if (start.value < cidr.address || start.value > lastOf(cidr)) {
    throw new RangeError(`${quoted}: start ${formatIP(start)} is outside ${formatCidr(cidr)}`);
  }
  return { cidr, start: start.value, end: endCidr.address };
}

export interface ParsedExclude {
  readonly family: Family;
  /** The masked prefix (`x.229/30` is .228–.231), or the single address. */
  readonly block: Block;
}

/** Parses one `exclude` entry: a CIDR, masked to its network, or a single address (as a /32 or /128). */
export function parseExcludeText(text: string): ParsedExclude {
  if (typeof text !== 'string') throw new TypeError(`exclude must be a string, got ${typeof text}`);
  const quoted = `exclude ${JSON.stringify(text)}`;
  if (!text.includes('/')) {
    const ip = tryParseIP(text);
    if (ip === undefined) throw new TypeError(`${quoted}: bad address ${JSON.stringify(text)}`);
    return { family: ip.family, block: { first: ip.value, last: ip.value } };
  }
  const cidr = parsePrefixed(text, quoted, 'address');
  return { family: cidr.family, block: blockOfCidr(cidr) };
}

/** Distance of an address from the prefix's network address: the key of IPPool `spec.allocations`. */
export function offsetOf(cidr: Cidr, value: bigint): bigint {
  const network = networkOf(cidr);
  if (value < network || value > lastOf(cidr)) {
    throw new RangeError(`address ${describeValue(cidr.family, value)} is outside ${formatCidr(masked(cidr))}`);
  }
  return value - network;
}

/** The address at an IPPool offset; the inverse of offsetOf. */
export function valueAt(cidr: Cidr, offset: bigint): bigint {
  const size = sizeOf(cidr);
  if (offset < 0n || offset >= size) {
    throw new RangeError(`offset ${offset} is outside ${formatCidr(masked(cidr))} (${size} addresses)`);
  }
  return networkOf(cidr) + offset;
}

/** An address in its usual form when it is one, else the raw number (for messages about bad values). */
export function describeValue(family: Family, value: bigint): string {
  if (value >= 0n && value <= maxValue(family)) return formatIP({ family, value });
  return `${value} (not an IPv${family} address)`;
}

function parsePrefixed(text: string, quoted: string, what: 'address' | 'end address'): Cidr {
  const slash = text.indexOf('/');
  if (slash < 0) throw new TypeError(`${quoted}: missing /prefix length`);
  const ipText = text.slice(0, slash);
  const ip = tryParseIP(ipText);
  if (ip === undefined) throw new TypeError(`${quoted}: bad ${what} ${JSON.stringify(ipText)}`);
  const prefixText = text.slice(slash + 1);
  const bits = bitsOf(ip.family);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) {
    throw new TypeError(`${quoted}: prefix length ${JSON.stringify(prefixText)} is not 0-${bits}`);
  }
  return { family: ip.family, address: ip.value, prefix: Number(prefixText) };
}
