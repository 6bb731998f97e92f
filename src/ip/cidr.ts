// A parsed prefix. `address` keeps the host bits as written (a gateway-style
// "10.0.0.1/24" is meaningful for static addresses); use network() to mask.
import { bitsOf, formatIP, maxValue, parseIP, type Family, type IPAddress } from './address.ts';

export interface Cidr {
  readonly family: Family;
  readonly address: bigint;
  readonly prefix: number;
}

export function parseCidr(text: string): Cidr {
  if (typeof text !== 'string') throw new TypeError(`invalid CIDR ${JSON.stringify(text)}`);
  const slash = text.indexOf('/');
  if (slash < 0) throw new TypeError(`invalid CIDR ${JSON.stringify(text)}: missing /prefix`);
  const ipText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  let ip: IPAddress;
  try {
    ip = parseIP(ipText);
  } catch {
    throw new TypeError(`invalid CIDR ${JSON.stringify(text)}: bad address ${JSON.stringify(ipText)}`);
  }
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bitsOf(ip.family)) {
    throw new TypeError(`invalid CIDR ${JSON.stringify(text)}: prefix must be 0-${bitsOf(ip.family)}`);
  }
  return { family: ip.family, address: ip.value, prefix: Number(prefixText) };
}

export function hostMask(c: Pick<Cidr, 'family' | 'prefix'>): bigint {
  return (1n << BigInt(bitsOf(c.family) - c.prefix)) - 1n;
}

export function networkOf(c: Cidr): bigint {
  return c.address & (maxValue(c.family) ^ hostMask(c));
}

/** The last address of the prefix (IPv4 broadcast). */
export function lastOf(c: Cidr): bigint {
  return networkOf(c) | hostMask(c);
}

export function sizeOf(c: Pick<Cidr, 'family' | 'prefix'>): bigint {
  return 1n << BigInt(bitsOf(c.family) - c.prefix);
}

export function masked(c: Cidr): Cidr {
  return { family: c.family, address: networkOf(c), prefix: c.prefix };
}

export function contains(c: Cidr, ip: IPAddress): boolean {
  return ip.family === c.family && ip.value >= networkOf(c) && ip.value <= lastOf(c);
}

export function formatCidr(c: Cidr): string {
  return `${formatIP({ family: c.family, value: c.address })}/${c.prefix}`;
}

/** The address part of the prefix as an IPAddress. */
export function addressOf(c: Cidr): IPAddress {
  return { family: c.family, value: c.address };
}
