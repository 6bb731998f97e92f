// RangeConfig and Allocations for allocator tests, built with the real range parsers as the config layer does.
import { parseIP } from '../../../src/ip/address.ts';
import { clampSpan, parseExcludeText, parseRangeText, usableSpan } from '../../../src/ip/range.ts';
import type { RangeConfig } from '../../../src/config/types.ts';
import type { AllocationRecord, Allocations } from '../../../src/store/store.ts';

export interface RangeOptions {
  readonly start?: string;
  readonly end?: string;
  readonly exclude?: readonly string[];
  readonly gateway?: string;
}

export const ip = (text: string): bigint => parseIP(text).value;

export function rangeOf(text: string, options: RangeOptions = {}): RangeConfig {
  const parsed = parseRangeText(text);
  const { block } = clampSpan(usableSpan(parsed.cidr), {
    start: options.start === undefined ? parsed.start : ip(options.start),
    end: options.end === undefined ? parsed.end : ip(options.end),
  });
  const exclude = (options.exclude ?? [])
    .map((e) => parseExcludeText(e).block)
    .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const gateway = options.gateway === undefined ? undefined : parseIP(options.gateway);
  return { cidr: parsed.cidr, start: block.first, end: block.last, exclude, gateway };
}

export const record: AllocationRecord = { containerId: 'c', ifname: 'eth0', podRef: 'ns/pod' };

export const takenOf = (values: Iterable<bigint>): Allocations => new Map([...values].map((v) => [v, record]));

export const ips = (...texts: string[]): Allocations => takenOf(texts.map(ip));

export const none: Allocations = new Map();
