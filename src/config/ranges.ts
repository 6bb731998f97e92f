// `range`/`range_start`/`range_end`/`exclude` and `ipRanges[]` -> RangeConfig[], with Whereabouts' semantics:
// bounds outside the usable span are ignored with a warning (a working Whereabouts config never breaks),
// exclusions are masked to their network, the gateway is attached to the range that contains it.
import { configError } from '../errors.ts';
import { describeValue } from '../log/quote.ts';
import { formatIP, type IPAddress } from '../ip/address.ts';
import { mergeBlocks, type Block } from '../ip/block.ts';
import { contains, formatCidr, networkOf, type Cidr } from '../ip/cidr.ts';
import { clampSpan, parseExcludeText, parseRangeText, usableSpan, type ParsedRange } from '../ip/range.ts';
import type { RangeConfig } from './types.ts';
import { optionalIP, optionalList, type Json } from './fields.ts';
import { isRecord } from '../record.ts';

export interface RangesOutcome {
  readonly ranges: RangeConfig[];
  readonly warnings: string[];
}

/**
 * `range` first (with the top-level bounds and excludes), then each `ipRanges` entry. Ranges whose CIDRs overlap
 * are refused: a range is one pool and a request takes one address per range, so the same pool twice would return
 * one address twice, and overlapping pools could hand one address to both entries.
 */
export function buildRanges(ipam: Json, gateway: IPAddress | undefined): RangesOutcome {
  const warnings: string[] = [];
  const ranges: RangeConfig[] = [];
  const keys: string[] = [];
  const add = (obj: Json, path: string): void => {
    const range = buildRange(obj, path, gateway, warnings);
    const key = `${path}range ${describeValue(obj['range'])}`;
    const clash = ranges.findIndex((other) => overlaps(other.cidr, range.cidr));
    if (clash >= 0) {
      throw configError(
        `${key} overlaps ${keys[clash] ?? 'another range'}: one request takes one address per range, ` +
          'so ranges in one request must not overlap',
      );
    }
    ranges.push(range);
    keys.push(key);
  };
  if (ipam['range'] !== undefined && ipam['range'] !== null && ipam['range'] !== '') add(ipam, 'ipam.');
  const list = optionalList(ipam, 'ipRanges', 'ipam.') ?? [];
  list.forEach((entry, i) => {
    const path = `ipam.ipRanges[${i}].`;
    if (!isRecord(entry)) throw configError(`${path.slice(0, -1)} must be an object, got ${describeValue(entry)}`);
    if (entry['range'] === undefined) throw configError(`${path}range is required`);
    add(entry, path);
  });
  return { ranges, warnings };
}

/** Two prefixes overlap exactly when one contains the other's network address. */
function overlaps(a: Cidr, b: Cidr): boolean {
  if (a.family !== b.family) return false;
  return (
    contains(a, { family: b.family, value: networkOf(b) }) || contains(b, { family: a.family, value: networkOf(a) })
  );
}

function buildRange(obj: Json, path: string, gateway: IPAddress | undefined, warnings: string[]): RangeConfig {
  const parsed = parseRange(obj['range'], `${path}range`);
  const family = parsed.cidr.family;
  const start = parsed.start ?? boundOf(obj, 'range_start', path, family);
  const end = parsed.end ?? boundOf(obj, 'range_end', path, family);
  if (parsed.start === undefined && start !== undefined && end !== undefined && end < start) {
    const f = (value: bigint) => formatIP({ family, value });
    throw configError(`${path}range_end ${f(end)} is before ${path}range_start ${f(start)}`);
  }
  const span = usableSpan(parsed.cidr);
  const clamped = clampSpan(span, { ...(start === undefined ? {} : { start }), ...(end === undefined ? {} : { end }) });
  for (const ignored of clamped.ignored) {
    const key = ignored.bound === 'start' ? 'range_start' : 'range_end';
    warnings.push(
      `${path}${key} ${formatIP({ family, value: ignored.value })} is outside the usable addresses of ` +
        `${formatCidr(parsed.cidr)}; ignored, as Whereabouts does`,
    );
  }
  const exclude = excludesOf(obj, path, family, warnings);
  const gw = gateway !== undefined && contains(parsed.cidr, gateway) ? gateway : undefined;
  return {
    cidr: parsed.cidr,
    start: clamped.block.first,
    end: clamped.block.last,
    exclude,
    ...(gw === undefined ? {} : { gateway: gw }),
  };
}

function parseRange(value: unknown, key: string): ParsedRange {
  if (typeof value !== 'string')
    throw configError(`${key} must be a CIDR or A-B/len string, got ${describeValue(value)}`);
  try {
    return parseRangeText(value);
  } catch (err) {
    throw configError(`${key}: ${(err as Error).message}`);
  }
}

function boundOf(obj: Json, key: string, path: string, family: 4 | 6): bigint | undefined {
  const ip = optionalIP(obj, key, path);
  if (ip === undefined) return undefined;
  if (ip.family !== family) {
    throw configError(`${path}${key} ${formatIP(ip)} is IPv${ip.family} but ${path}range is IPv${family}`);
  }
  return ip.value;
}

function excludesOf(obj: Json, path: string, family: 4 | 6, warnings: string[]): Block[] {
  const list = optionalList(obj, 'exclude', path) ?? [];
  const blocks: Block[] = [];
  list.forEach((item, i) => {
    const key = `${path}exclude[${i}]`;
    if (typeof item !== 'string') throw configError(`${key} must be a CIDR or IP string, got ${describeValue(item)}`);
    let parsed;
    try {
      parsed = parseExcludeText(item);
    } catch {
      throw configError(`${key} ${describeValue(item)} is not a CIDR or IP address`);
    }
    if (parsed.family !== family) {
      warnings.push(`${key} ${item} is IPv${parsed.family} but the range is IPv${family}; ignored`);
      return;
    }
    blocks.push(parsed.block);
  });
  return mergeBlocks(blocks);
}
