// What a NetworkAttachmentDefinition asks of the controller: the network names it uses (reservation names carry
// them as prefixes) and, with node_slice_size, the network's range and slice size, read by the plugin's own config
// parser (src/config) so that both sides agree on every key. Pure. NADs of one network that disagree do not freeze
// it: the network follows its oldest NAD (by creationTimestamp, then namespace/name), and the others are named as
// offenders and ignored, so a tenant who writes a NAD for someone else's network cannot stop its slicing.
import { HereaboutsError, messageOf } from '../../errors.ts';
import { parseNetworkConfig } from '../../config/parse.ts';
import type { NetworkConfig } from '../../config/types.ts';
import { formatCidr, type Cidr } from '../../ip/cidr.ts';
import { poolRefs } from '../../store/pool-refs.ts';
import { recordOf } from '../../record.ts';

export interface SliceSpec {
  /** The NodeSlicePool's name: network_name, else the CNI network name. */
  readonly network: string;
  /** The network is named by network_name (which then prefixes the slice pools' names). */
  readonly networkNamed: boolean;
  readonly range: Cidr;
  readonly sliceSize: number;
  /** "namespace/name" of the NAD it came from. */
  readonly source: string;
  /** The NAD asks for sticky addresses: the network needs its sticky area (STICKY_AREA_NODE's slice). */
  readonly sticky?: boolean;
  /** The NAD's metadata.creationTimestamp (ms since the epoch; absent when it has none): the oldest NAD rules. */
  readonly createdMs?: number;
}

type Obj = Record<string, unknown>;
const isOurs = (ipam: Obj): boolean => ipam['type'] === 'hereabouts' || ipam['type'] === 'whereabouts';
// Keys that point at node-local files or stores: meaningless to the controller, and not to be read here.
const NODE_LOCAL_KEYS = ['datastore', 'data_dir', 'kubernetes', 'cache_dir', 'configuration_path', 'log_file'];

/** The CNI config of a NAD and its hereabouts/whereabouts IPAM sections; undefined when it has none. */
function ipamSections(
  nad: unknown,
): { source: string; config: Obj; sections: Array<{ plugin: Obj; ipam: Obj }> } | undefined {
  const meta = recordOf(recordOf(nad)['metadata']);
  const source = `${String(meta['namespace'])}/${String(meta['name'])}`;
  const text = recordOf(recordOf(nad)['spec'])['config'];
  if (typeof text !== 'string' || text.trim() === '') return undefined; // Multus then reads a file on the node
  let config: Obj;
  try {
    config = recordOf(JSON.parse(text));
  } catch (err) {
    throw new TypeError(`NetworkAttachmentDefinition ${source}: spec.config is not JSON (${messageOf(err)})`, {
      cause: err,
    });
  }
  const plugins = Array.isArray(config['plugins']) ? (config['plugins'] as unknown[]).map(recordOf) : [config];
  const sections = plugins.map((plugin) => ({ plugin, ipam: recordOf(plugin['ipam']) })).filter((s) => isOurs(s.ipam));
  return sections.length === 0 ? undefined : { source, config, sections };
}

function hasSliceSize(ipam: Obj): boolean {
  const size = ipam['node_slice_size'];
  return size !== undefined && size !== null && size !== '';
}

/**
 * A section as a node's plugin would parse it, less the keys that name the node's own files (their defaults are
 * paths here, not there): the pools it names and its slicing do not depend on them.
 */
function parseSection(config: Obj, section: { readonly plugin: Obj; readonly ipam: Obj }): NetworkConfig {
  const ipam: Obj = Object.fromEntries(Object.entries(section.ipam).filter(([key]) => !NODE_LOCAL_KEYS.includes(key)));
  ipam['datastore'] = 'local';
  const name = config['name'] ?? section.plugin['name'];
  const version = config['cniVersion'] ?? section.plugin['cniVersion'] ?? '1.0.0';
  const cniVersion = typeof version === 'string' ? version : JSON.stringify(version);
  return parseNetworkConfig({ ...section.plugin, name, ipam }, { cniVersion, readFile: () => undefined });
}

/** A NAD's IPAM sections; undefined when it has none or its config cannot be read (a TypeError of ipamSections). */
function readableSections(nad: unknown): ReturnType<typeof ipamSections> | undefined {
  try {
    return ipamSections(nad);
  } catch (err) {
    if (err instanceof TypeError) return undefined;
    throw err;
  }
}

/** The network_name values a NAD uses (to split reservation names correctly). */
export function networkNamesOf(nad: unknown): string[] {
  return (readableSections(nad)?.sections ?? [])
    .map((s) => s.ipam['network_name'])
    .filter((n): n is string => typeof n === 'string' && n !== '');
}

/** The IPPool names of a NAD's ranges outside node-slice mode, named as the plugin names them; [] when unreadable. */
export function rangePoolNamesOf(nad: unknown): string[] {
  const found = readableSections(nad);
  if (found === undefined) return [];
  const names: string[] = [];
  for (const section of found.sections) {
    if (hasSliceSize(section.ipam)) continue;
    try {
      names.push(...poolRefs(parseSection(found.config, section)).map((r) => r.name));
    } catch (err) {
      if (!(err instanceof HereaboutsError)) throw err; // a NAD the plugin rejects has no pool
    }
  }
  return names;
}

/**
 * Every hereabouts/whereabouts IPAM section of a NAD as a node's plugin would parse it ([] when it has none); a
 * TypeError naming the NAD when one cannot be read. The claims of DESIGN §12 draw on a network through this.
 */
export function networkConfigsOf(nad: unknown): NetworkConfig[] {
  const found = ipamSections(nad);
  if (found === undefined) return [];
  return found.sections.map((section) => {
    try {
      return parseSection(found.config, section);
    } catch (err) {
      if (!(err instanceof HereaboutsError)) throw err;
      throw new TypeError(`NetworkAttachmentDefinition ${found.source}: ${err.message}`, { cause: err });
    }
  });
}

/** The node-slice request of one NAD, undefined when it has none; throws when it has one that cannot be read. */
export function sliceSpecOf(nad: unknown): SliceSpec | undefined {
  const found = ipamSections(nad);
  const section = found?.sections.find((s) => hasSliceSize(s.ipam));
  if (found === undefined || section === undefined) return undefined;
  let parsed;
  try {
    parsed = parseSection(found.config, section);
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    throw new TypeError(`NetworkAttachmentDefinition ${found.source}: ${err.message}`, { cause: err });
  }
  const ranges = parsed.ipam.ranges;
  const [first] = ranges;
  if (first === undefined || ranges.length !== 1 || parsed.ipam.nodeSliceSize === undefined) {
    throw new TypeError(
      `NetworkAttachmentDefinition ${found.source}: node_slice_size needs exactly one range (got ${ranges.length})`,
    );
  }
  const networkName = parsed.ipam.networkName;
  const named = networkName !== undefined && networkName !== '';
  const created = Date.parse(String(recordOf(recordOf(nad)['metadata'])['creationTimestamp']));
  return {
    network: named ? networkName : parsed.name,
    networkNamed: named,
    range: first.cidr,
    sliceSize: parsed.ipam.nodeSliceSize,
    source: found.source,
    ...(parsed.ipam.sticky === undefined ? {} : { sticky: true }),
    ...(Number.isNaN(created) ? {} : { createdMs: created }),
  };
}

/** Two specs slice the same way. */
export function sameSlicing(a: SliceSpec, b: SliceSpec): boolean {
  return (
    formatCidr(a.range) === formatCidr(b.range) && a.sliceSize === b.sliceSize && a.networkNamed === b.networkNamed
  );
}

/** A NAD that asks for another slicing than the one its network follows: ignored, and named. */
export interface Offender {
  readonly source: string;
  readonly message: string;
}

export interface NetworkGroup {
  /** The slicing the network follows: its oldest NAD's. */
  readonly spec: SliceSpec;
  /** The NADs that ask for it, sorted. */
  readonly sources: string[];
  /** The NADs that ask for another one, oldest first. */
  readonly offenders: Offender[];
  /** Some NAD that follows the network's slicing asks for sticky addresses: the network gets a sticky area. */
  readonly sticky: boolean;
}

export interface NetworkGroups {
  /** One group per network. */
  readonly agreed: Map<string, NetworkGroup>;
  /** One message per offending NAD. */
  readonly conflicts: string[];
}

/** Oldest first: creationTimestamp, then namespace/name (a rule an operator can predict from `kubectl get`). */
function olderFirst(a: SliceSpec, b: SliceSpec): number {
  const [at, bt] = [a.createdMs ?? Number.POSITIVE_INFINITY, b.createdMs ?? Number.POSITIVE_INFINITY];
  if (at !== bt) return at < bt ? -1 : 1;
  return a.source < b.source ? -1 : a.source > b.source ? 1 : 0;
}

function describeSlicing(spec: SliceSpec): string {
  return `${formatCidr(spec.range)} by /${spec.sliceSize}${spec.networkNamed ? '' : ' without network_name'}`;
}

export function groupByNetwork(specs: readonly SliceSpec[]): NetworkGroups {
  const byNetwork = new Map<string, SliceSpec[]>();
  for (const spec of specs) byNetwork.set(spec.network, [...(byNetwork.get(spec.network) ?? []), spec]);
  const agreed: NetworkGroups['agreed'] = new Map();
  const conflicts: string[] = [];
  for (const [network, list] of byNetwork) {
    const [first, ...rest] = [...list].sort(olderFirst);
    if (first === undefined) continue;
    const sources = [first.source];
    const offenders: Offender[] = [];
    let sticky = first.sticky === true;
    for (const spec of rest) {
      if (sameSlicing(first, spec)) {
        sources.push(spec.source);
        sticky ||= spec.sticky === true;
        continue;
      }
      const message =
        `NetworkAttachmentDefinition ${spec.source} slices ${describeSlicing(spec)} but network ${network} follows ` +
        `${first.source}, its oldest NetworkAttachmentDefinition: ${describeSlicing(first)}; ${spec.source} is ignored`;
      offenders.push({ source: spec.source, message });
      conflicts.push(message);
    }
    agreed.set(network, { spec: first, sources: sources.sort(), offenders, sticky });
  }
  return { agreed, conflicts };
}
