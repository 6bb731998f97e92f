// Typed readers for JSON config values. Each failure is a code-7 HereaboutsError naming the key path and the value.
import { configError } from '../errors.ts';
import { describeValue } from '../log/quote.ts';
import { parseIP, type IPAddress } from '../ip/address.ts';
import { parseCidr, type Cidr } from '../ip/cidr.ts';
import { isRecord } from '../record.ts';

export type Json = Readonly<Record<string, unknown>>;

export function objectAt(value: unknown, key: string): Json {
  if (!isRecord(value)) throw configError(`${key} must be an object, got ${describeValue(value)}`);
  return value;
}

export function optionalObject(obj: Json, key: string, path: string): Json | undefined {
  const value = obj[key];
  return value === undefined || value === null ? undefined : objectAt(value, `${path}${key}`);
}

export function optionalString(obj: Json, key: string, path: string): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw configError(`${path}${key} must be a string, got ${describeValue(value)}`);
  return value === '' ? undefined : value;
}

export function optionalBoolean(obj: Json, key: string, path: string): boolean | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw configError(`${path}${key} must be true or false, got ${describeValue(value)}`);
  return value;
}

/** A finite, non-negative integer (durations, counts). */
export function optionalCount(obj: Json, key: string, path: string): number | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw configError(`${path}${key} must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}

export function optionalList(obj: Json, key: string, path: string): readonly unknown[] | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw configError(`${path}${key} must be a list, got ${describeValue(value)}`);
  return value as unknown[];
}

export function stringList(obj: Json, key: string, path: string): string[] | undefined {
  return optionalList(obj, key, path)?.map((item, i) => {
    if (typeof item !== 'string') throw configError(`${path}${key}[${i}] must be a string, got ${describeValue(item)}`);
    return item;
  });
}

export function ipAt(value: unknown, key: string): IPAddress {
  if (typeof value !== 'string') throw configError(`${key} must be an IP address string, got ${describeValue(value)}`);
  try {
    return parseIP(value);
  } catch {
    throw configError(`${key} ${describeValue(value)} is not an IP address`);
  }
}

export function optionalIP(obj: Json, key: string, path: string): IPAddress | undefined {
  const value = obj[key];
  return value === undefined || value === null || value === '' ? undefined : ipAt(value, `${path}${key}`);
}

export function cidrAt(value: unknown, key: string): Cidr {
  if (typeof value !== 'string') throw configError(`${key} must be a CIDR string, got ${describeValue(value)}`);
  try {
    return parseCidr(value);
  } catch {
    throw configError(`${key} ${describeValue(value)} is not a CIDR (like 10.0.0.0/24)`);
  }
}
