// What a NetworkAttachmentDefinition asks of the node-slice controller: its network's name, range and slice size.
// Pure (unit-tested): NADs that disagree are reported, never half-applied.
import { formatCidr, masked, type Cidr } from '../ip/cidr.ts';
import { parseRangeText } from '../ip/range.ts';

export interface SliceSpec {
  readonly network: string;
  /** The network is named by network_name (which then prefixes the slice pools' names). */
  readonly networkNamed: boolean;
  readonly range: Cidr;
  readonly sliceSize: number;
  /** "namespace/name" of the NAD it came from. */
  readonly source: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

/** The node-slice request of one NAD, undefined when it has none; throws when it has one that cannot be read. */
export function sliceSpecOf(nad: unknown): SliceSpec | undefined {
  const meta = obj(obj(nad)['metadata']);
  const source = `${String(meta['namespace'])}/${String(meta['name'])}`;
  const text = obj(obj(nad)['spec'])['config'];
  if (typeof text !== 'string') return undefined;
  let config: Obj;
  try {
    config = obj(JSON.parse(text));
  } catch {
    throw new TypeError(`NetworkAttachmentDefinition ${source}: spec.config is not JSON`);
  }
  const plugins = Array.isArray(config['plugins']) ? (config['plugins'] as unknown[]).map(obj) : [config];
  const ipam = plugins.map((p) => obj(p['ipam'])).find((i) => (i['type'] === 'hereabouts' || i['type'] === 'whereabouts') && i['node_slice_size'] !== undefined);
  if (ipam === undefined) return undefined;
  const size = Number(String(ipam['node_slice_size']).replace(/^\//, ''));
  const rangeText = ipam['range'];
  if (!Number.isInteger(size) || typeof rangeText !== 'string') {
    throw new TypeError(`NetworkAttachmentDefinition ${source}: node_slice_size ${JSON.stringify(ipam['node_slice_size'])} needs an integer prefix and a range`);
  }
  const range = masked(parseRangeText(rangeText).cidr);
  if (size < range.prefix || size > (range.family === 4 ? 32 : 128)) {
    throw new RangeError(`NetworkAttachmentDefinition ${source}: node_slice_size /${size} does not fit ${formatCidr(range)}`);
  }
  const networkName = typeof ipam['network_name'] === 'string' && ipam['network_name'] !== '' ? ipam['network_name'] : undefined;
  const network = networkName ?? (typeof config['name'] === 'string' ? config['name'] : '');
  if (network === '') throw new TypeError(`NetworkAttachmentDefinition ${source}: no network_name and no config name`);
  return { network, networkNamed: networkName !== undefined, range, sliceSize: size, source };
}

/** One spec per network; networks whose NADs disagree come back as conflicts instead. */
export function groupByNetwork(specs: readonly SliceSpec[]): { agreed: Map<string, SliceSpec>; conflicts: string[] } {
  const agreed = new Map<string, SliceSpec>();
  const conflicting = new Set<string>();
  const conflicts: string[] = [];
  for (const spec of specs) {
    const seen = agreed.get(spec.network);
    if (seen === undefined) {
      if (!conflicting.has(spec.network)) agreed.set(spec.network, spec);
      continue;
    }
    if (formatCidr(seen.range) !== formatCidr(spec.range) || seen.sliceSize !== spec.sliceSize) {
      conflicts.push(
        `network ${spec.network}: ${seen.source} slices ${formatCidr(seen.range)} by /${seen.sliceSize} but ${spec.source} ` +
          `slices ${formatCidr(spec.range)} by /${spec.sliceSize}; not changed until they agree`,
      );
      agreed.delete(spec.network);
      conflicting.add(spec.network);
    }
  }
  return { agreed, conflicts };
}
