// Addresses as (family, bigint) pairs: arithmetic stays exact for IPv6, and
// ipaddr.js owns the parsing and canonical printing (RFC 5952).
import ipaddr from 'ipaddr.js';

export type Family = 4 | 6;

export interface IPAddress {
  readonly family: Family;
  readonly value: bigint;
}

export function bitsOf(family: Family): 32 | 128 {
  return family === 4 ? 32 : 128;
}

export function maxValue(family: Family): bigint {
  return (1n << BigInt(bitsOf(family))) - 1n;
}

/** Parses one address in its usual text form; rejects zones, CIDR suffixes and IPv4 shorthands like "10.1". */
export function parseIP(text: string): IPAddress {
  if (typeof text !== 'string' || text.includes('%') || text.includes('/')) {
    throw new TypeError(`invalid IP address ${JSON.stringify(text)}`);
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
    return { family: 4, value: bytesToBigint(ipaddr.IPv4.parse(text).toByteArray()) };
  }
  if (ipaddr.IPv6.isValid(text)) {
    const v6 = ipaddr.IPv6.parse(text);
    return { family: 6, value: bytesToBigint(v6.toByteArray()) };
  }
  throw new TypeError(`invalid IP address ${JSON.stringify(text)}`);
}

export function tryParseIP(text: string): IPAddress | undefined {
  try {
    return parseIP(text);
  } catch {
    return undefined;
  }
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (IPv4-mapped addresses stay in IPv6 form). */
export function formatIP(ip: IPAddress): string {
  const bytes = bigintToBytes(ip.value, ip.family === 4 ? 4 : 16);
  return ip.family === 4 ? new ipaddr.IPv4(bytes).toString() : new ipaddr.IPv6(bytes).toRFC5952String();
}

export function ipEquals(a: IPAddress, b: IPAddress): boolean {
  return a.family === b.family && a.value === b.value;
}

export function ipOf(family: Family, value: bigint): IPAddress {
  if (value < 0n || value > maxValue(family)) {
    throw new RangeError(`value ${value} does not fit an IPv${family} address`);
  }
  return { family, value };
}

function bytesToBigint(bytes: readonly number[]): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return v;
}

function bigintToBytes(value: bigint, length: number): number[] {
  const out = new Array<number>(length);
  let v = value;
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}
