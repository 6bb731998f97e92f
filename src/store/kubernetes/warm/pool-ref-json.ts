// A pool as the journal records it with each hand-out (journal.ts): what a new agent needs to finish the pool's
// pending writes before any call names the pool again: the pool, and the two settings of its network that the write
// depends on (enable_overlapping_ranges, the node cache directory). Values as decimal strings (JSON has no bigint).
import { formatCidr, parseCidr } from '../../../ip/cidr.ts';
import { isRecord } from '../../../record.ts';
import type { PoolRef } from '../../store.ts';

export type PoolRefJson = Record<string, unknown>;

/** What of the network's settings a pool's writes depend on. */
export interface PoolSettings {
  readonly reservations: boolean;
  readonly cacheDir: string;
}

export function encodePoolRef(ref: PoolRef, settings: PoolSettings): PoolRefJson {
  const { range } = ref;
  return {
    reservations: settings.reservations,
    cacheDir: settings.cacheDir,
    name: ref.name,
    network: ref.network,
    networkNamed: ref.networkNamed,
    cidr: formatCidr(range.cidr),
    start: String(range.start),
    end: String(range.end),
    exclude: range.exclude.map((b) => [String(b.first), String(b.last)]),
    ...(range.gateway === undefined ? {} : { gateway: String(range.gateway.value) }),
    ...(ref.resultPrefix === undefined ? {} : { resultPrefix: ref.resultPrefix }),
    ...(ref.sliceNode === undefined ? {} : { sliceNode: ref.sliceNode }),
  };
}

/** The pool and its settings, or undefined when `json` is not what encodePoolRef() wrote. */
export function decodePoolRef(json: unknown): { readonly ref: PoolRef; readonly settings: PoolSettings } | undefined {
  if (!isRecord(json)) return undefined;
  const { name, network, networkNamed, cidr, start, end, exclude, gateway, resultPrefix, sliceNode } = json;
  const { reservations, cacheDir } = json;
  if (typeof reservations !== 'boolean' || typeof cacheDir !== 'string') return undefined;
  const big = (v: unknown): bigint | undefined => (typeof v === 'string' && /^\d+$/.test(v) ? BigInt(v) : undefined);
  if (typeof name !== 'string' || typeof network !== 'string' || typeof networkNamed !== 'boolean') return undefined;
  if (typeof cidr !== 'string' || !Array.isArray(exclude)) return undefined;
  const [first, last] = [big(start), big(end)];
  if (first === undefined || last === undefined) return undefined;
  let parsed;
  try {
    parsed = parseCidr(cidr);
  } catch {
    return undefined;
  }
  const blocks = exclude.map((b) => (Array.isArray(b) ? { first: big(b[0]), last: big(b[1]) } : undefined));
  if (blocks.some((b) => b?.first === undefined || b.last === undefined)) return undefined;
  const gw = gateway === undefined ? undefined : big(gateway);
  if (gateway !== undefined && gw === undefined) return undefined;
  if (resultPrefix !== undefined && typeof resultPrefix !== 'number') return undefined;
  if (sliceNode !== undefined && typeof sliceNode !== 'string') return undefined;
  const ref: PoolRef = {
    name,
    network,
    networkNamed,
    range: {
      cidr: parsed,
      start: first,
      end: last,
      exclude: blocks.map((b) => ({ first: b?.first ?? 0n, last: b?.last ?? 0n })),
      ...(gw === undefined ? {} : { gateway: { family: parsed.family, value: gw } }),
    },
    ...(resultPrefix === undefined ? {} : { resultPrefix }),
    ...(sliceNode === undefined ? {} : { sliceNode }),
  };
  return { ref, settings: { reservations, cacheDir } };
}
