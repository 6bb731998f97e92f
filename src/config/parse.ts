// One function turns the CNI request + CNI_ARGS + flat file into the validated NetworkConfig. Nothing
// downstream re-checks strings. Every error is a code-7 HereaboutsError naming the key and the value.
import { isClaimsName } from './names.ts';
import { configError, ErrorKind, isKind } from '../errors.ts';
import { describeValue } from '../log/quote.ts';
import { bitsOf, ipEquals, type IPAddress } from '../ip/address.ts';
import { addressOf } from '../ip/cidr.ts';
import {
  cidrAt,
  ipAt,
  objectAt,
  optionalBoolean,
  optionalCount,
  optionalIP,
  optionalList,
  optionalObject,
  optionalString,
  stringList,
  type Json,
} from './fields.ts';
import { loadFlatFileAt, loadStandardFlatFile, mergeFlat, readFileIfPresent, type ReadFile } from './flatfile.ts';
import { checkObjectNames } from './object-names.ts';
import { buildRanges } from './ranges.ts';
import { leaderTimingOf } from './leader-timing.ts';
import { allowedPath, checkPathText, policyOf, rejectInlinePolicy, type PathUse, type TrustPolicy } from './trust.ts';
import type {
  DatastoreConfig,
  DnsConfig,
  IpamConfig,
  NetworkConfig,
  RouteConfig,
  StaticAddress,
  StickyMode,
} from './types.ts';
import { isRecord } from '../record.ts';
import type { PluginLogLevel } from '../log/logger.ts';

export const DEFAULT_DATA_DIR = '/var/lib/cni/hereabouts';
export const DEFAULT_CACHE_DIR = '/var/lib/cni/hereabouts/cache';
/** GC spares allocations younger than this: an ADD may commit after the runtime's valid-attachments snapshot. */
export const DEFAULT_GC_GRACE_SECONDS = 300;
const LOG_LEVELS: readonly PluginLogLevel[] = ['debug', 'verbose', 'info', 'warning', 'error', 'panic'];
// CNI network names (spec): alphanumerics first, then alphanumerics, '_', '.', '-'.
const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
// network_name prefixes Kubernetes object names: a DNS-1123 subdomain (lowercase RFC 1123 labels joined by '.').
const NETWORK_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_NETWORK_NAME = 63;

export interface ParseOptions {
  readonly cniVersion: string;
  /** CNI_ARGS as parsed by the protocol layer (absent for GC and STATUS). */
  /** CNI_ARGS as the CNI edge parsed them (src/cni/args.ts); only `IP=` matters here. */
  readonly cniArgs?: { readonly ips: readonly IPAddress[] } | undefined;
  /** Injectable for tests; default reads the file system. */
  readonly readFile?: ReadFile;
  readonly verb?: string;
  /** The plugin's environment (HEREABOUTS_ALLOWED_DIRS); default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Where each key came from: inline values that name host paths are held to the operator's policy. */
interface Sources {
  readonly inline: Json;
  readonly policy: TrustPolicy;
}

export function parseNetworkConfig(request: Json, options: ParseOptions): NetworkConfig {
  const name = request['name'];
  if (typeof name !== 'string' || !CNI_NAME.test(name)) {
    throw configError(`name ${describeValue(name)} must be a CNI network name (letters, digits, "_", ".", "-")`);
  }
  const inline = objectAt(request['ipam'], 'ipam');
  rejectInlinePolicy(inline);
  const read = options.readFile ?? readFileIfPresent;
  // The flat file at the standard locations is the operator's: it sets the policy even when configuration_path
  // names another one (which must then lie in an allowed config directory).
  const standard = loadStandardFlatFile(read);
  const sources: Sources = { inline, policy: policyOf(standard?.keys, options.env ?? process.env) };
  const configurationPath = optionalString(inline, 'configuration_path', 'ipam.');
  const flat =
    configurationPath === undefined
      ? standard
      : loadFlatFileAt(allowedPath(sources.policy, 'config', 'ipam.configuration_path', configurationPath), read);
  const ipam = mergeFlat(inline, flat?.keys);

  const type = ipam['type'];
  if (type !== 'hereabouts' && type !== 'whereabouts') {
    throw configError(`ipam.type ${describeValue(type)} is not "hereabouts" or "whereabouts"`);
  }
  const gateway = optionalIP(ipam, 'gateway', 'ipam.');
  const { ranges, warnings } = buildRanges(ipam, gateway);
  const addresses = staticAddresses(ipam);
  if (ranges.length === 0 && addresses.length === 0) {
    throw configError('ipam needs a range, ipRanges or addresses: none is set');
  }
  const networkName = optionalString(ipam, 'network_name', 'ipam.');
  // Length first: the pattern backtracks quadratically on a long non-matching string (a tenant's 1 MiB name).
  if (networkName !== undefined && (networkName.length > MAX_NETWORK_NAME || !NETWORK_NAME.test(networkName))) {
    throw configError(
      `ipam.network_name ${describeValue(networkName)} must be lowercase letters, digits, "-" and "." ` +
        '(at most 63, each "."-separated part starting and ending alphanumeric): it prefixes Kubernetes object names',
    );
  }
  // The IPPools and reservations of pools that list their own addresses (DESIGN §12) carry this network name: a
  // tenant's NAD naming it would draw pods from the machines' addresses, past the prefix claims those pools hold.
  if (networkName !== undefined && isClaimsName(networkName)) {
    throw configError(
      `ipam.network_name ${describeValue(networkName)} is reserved: hereabouts names the IPPools of its AddressPools with it`,
    );
  }
  const log = logFileOf(ipam, flat?.keys, sources);
  const nodeSliceSize = sliceSize(
    ipam,
    ranges.map((r) => r.cidr),
  );
  const enableOverlappingRanges = optionalBoolean(ipam, 'enable_overlapping_ranges', 'ipam.') ?? true;
  const sticky = stickyOf(ipam);
  checkObjectNames({
    name,
    ...(networkName === undefined ? {} : { networkName }),
    ranges,
    rangeKeys: rangeKeysOf(ipam),
    reservations: enableOverlappingRanges,
    nodeSlices: nodeSliceSize !== undefined,
  });

  const datastore = datastoreOf(ipam, sources);
  // A binding is to a pod's owner, which only the Kubernetes store can read.
  if (sticky !== undefined && datastore.kind !== 'kubernetes') {
    warnings.push(`ipam.sticky ${describeValue(ipam['sticky'])} has no effect without "datastore": "kubernetes"`);
  }
  const config: IpamConfig = {
    type,
    ranges,
    ...(gateway === undefined ? {} : { gateway }),
    routes: routesOf(ipam),
    ...withDns(ipam),
    addresses,
    ...(networkName === undefined ? {} : { networkName }),
    ...(nodeSliceSize === undefined ? {} : { nodeSliceSize }),
    enableOverlappingRanges,
    ...(sticky === undefined ? {} : { sticky }),
    gcGraceSeconds: optionalCount(ipam, 'gc_grace_seconds', 'ipam.') ?? DEFAULT_GC_GRACE_SECONDS,
    leaderTiming: leaderTimingOf(ipam, warnings),
    datastore,
    ...optionalKey('logFile', log.file),
    logLevel: logLevelOf(ipam),
    ...optionalKey('configurationPath', flat?.path),
  };
  // Normal on every node the DaemonSet installed: a fact for debugging, not a warning on every ADD.
  const notes = flat === undefined ? [] : [`flat file ${flat.path} merged under the inline ipam keys`];
  return {
    cniVersion: options.cniVersion,
    name,
    ipam: config,
    requestedIPs: requestedIPs(request, options.cniArgs),
    ...(request['prevResult'] === undefined ? {} : { prevResult: request['prevResult'] }),
    warnings,
    notes,
    ...(log.ignored === undefined ? {} : { ignored: [log.ignored] }),
    raw: request,
  };
}

/** `sticky`: true, false or "annotated" (docs/sticky.md). */
function stickyOf(ipam: Json): StickyMode | undefined {
  const value = ipam['sticky'];
  if (value === undefined || value === null || value === false) return undefined;
  if (value === true) return 'all';
  if (value === 'annotated') return 'annotated';
  throw configError(`ipam.sticky must be true, false or "annotated", got ${describeValue(value)}`);
}

function optionalKey<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * A key that names a host path: from the inline config only inside the operator's allowed directories for `use`;
 * from the flat file (the operator's own) anywhere, as long as it is an absolute, normalised path.
 */
function pathKey(merged: Json, sources: Sources, key: string, use: PathUse, within?: string): string | undefined {
  const prefix = within === undefined ? 'ipam.' : `ipam.${within}.`;
  const value = optionalString(merged, key, prefix);
  if (value === undefined) return undefined;
  const inlineObj = within === undefined ? sources.inline : sources.inline[within];
  const inlineValue = isRecord(inlineObj) ? optionalString(inlineObj, key, prefix) : undefined;
  if (inlineValue !== undefined) return allowedPath(sources.policy, use, `${prefix}${key}`, inlineValue);
  checkPathText(value, `${prefix}${key}`);
  return value;
}

/**
 * `log_file`. A log path is not worth failing a call for, and it cannot change which address is handed out: an inline
 * one the policy does not allow (outside the allowed log directories, through a link, not a normalised absolute path)
 * is ignored, never opened. The flat file's (the operator's) is used instead, else none (stderr), and the call says
 * why. A value of the wrong type is still an error, as it is for Whereabouts.
 */
function logFileOf(ipam: Json, flat: Json | undefined, sources: Sources): { file?: string; ignored?: string } {
  const inlineValue = optionalString(sources.inline, 'log_file', 'ipam.');
  if (inlineValue === undefined) return optionalKey('file', pathKey(ipam, sources, 'log_file', 'log'));
  try {
    return { file: allowedPath(sources.policy, 'log', 'ipam.log_file', inlineValue) };
  } catch (err) {
    if (!isKind(err, ErrorKind.InvalidConfig)) throw err;
    const fallback = flat === undefined ? undefined : optionalString(flat, 'log_file', 'ipam.');
    if (fallback !== undefined) checkPathText(fallback, 'ipam.log_file');
    const instead = fallback === undefined ? 'stderr' : `${fallback} (the flat file's log_file)`;
    const fix = err.details === '' ? '' : ` (to follow it: ${err.details})`;
    return {
      ...optionalKey('file', fallback),
      ignored: `ignoring the network configuration's log_file: ${err.message}; logging to ${instead} instead${fix}`,
    };
  }
}

/** The key of each range in buildRanges' order, for messages. */
function rangeKeysOf(ipam: Json): string[] {
  const hasRange = ipam['range'] !== undefined && ipam['range'] !== null && ipam['range'] !== '';
  const list = Array.isArray(ipam['ipRanges']) ? ipam['ipRanges'] : [];
  return [...(hasRange ? ['ipam.range'] : []), ...list.map((_, i) => `ipam.ipRanges[${i}].range`)];
}

function datastoreOf(ipam: Json, sources: Sources): DatastoreConfig {
  const kind = optionalString(ipam, 'datastore', 'ipam.') ?? 'kubernetes';
  if (kind === 'local') return { kind, dataDir: pathKey(ipam, sources, 'data_dir', 'data') ?? DEFAULT_DATA_DIR };
  if (kind !== 'kubernetes') {
    throw configError(`ipam.datastore ${describeValue(kind)} is not "kubernetes" or "local"`);
  }
  const kubernetes = optionalObject(ipam, 'kubernetes', 'ipam.');
  const kubeconfig =
    kubernetes === undefined ? undefined : pathKey(kubernetes, sources, 'kubeconfig', 'config', 'kubernetes');
  if (kubeconfig === undefined) {
    // Never fall back to the local store here: a node-local pool would silently hand out cluster-wide duplicates.
    throw configError(
      'ipam.datastore "kubernetes" (the default) needs ipam.kubernetes.kubeconfig, inline or in the flat file; ' +
        'set "datastore": "local" for the embedded single-node store',
    );
  }
  const inlineK8s = sources.inline['kubernetes'];
  const inlineKubeconfig =
    isRecord(inlineK8s) && optionalString(inlineK8s, 'kubeconfig', 'ipam.kubernetes.') !== undefined;
  return {
    kind,
    kubeconfig,
    // A kubeconfig the operator named may run its credential plugin; one a tenant named only if the operator says so.
    execCredentials: !inlineKubeconfig || sources.policy.execCredentials,
    cacheDir: pathKey(ipam, sources, 'cache_dir', 'data') ?? DEFAULT_CACHE_DIR,
  };
}

function logLevelOf(ipam: Json): PluginLogLevel {
  const level = optionalString(ipam, 'log_level', 'ipam.');
  if (level === undefined) return 'error';
  const known = LOG_LEVELS.find((l) => l === level.toLowerCase());
  if (known === undefined)
    throw configError(`ipam.log_level ${describeValue(level)} is not one of ${LOG_LEVELS.join(', ')}`);
  return known;
}

function routesOf(ipam: Json): RouteConfig[] {
  return (optionalList(ipam, 'routes', 'ipam.') ?? []).map((entry, i) => {
    const key = `ipam.routes[${i}]`;
    const route = objectAt(entry, key);
    const gw = optionalIP(route, 'gw', `${key}.`);
    return { dst: cidrAt(route['dst'], `${key}.dst`), ...(gw === undefined ? {} : { gw }) };
  });
}

function withDns(ipam: Json): { dns?: DnsConfig } {
  const dns = optionalObject(ipam, 'dns', 'ipam.');
  if (dns === undefined) return {};
  const nameservers = stringList(dns, 'nameservers', 'ipam.dns.');
  nameservers?.forEach((ns, i) => ipAt(ns, `ipam.dns.nameservers[${i}]`));
  const domain = optionalString(dns, 'domain', 'ipam.dns.');
  const search = stringList(dns, 'search', 'ipam.dns.');
  const options = stringList(dns, 'options', 'ipam.dns.');
  return {
    dns: {
      ...optionalKey('nameservers', nameservers),
      ...optionalKey('domain', domain),
      ...optionalKey('search', search),
      ...optionalKey('options', options),
    },
  };
}

function staticAddresses(ipam: Json): StaticAddress[] {
  return (optionalList(ipam, 'addresses', 'ipam.') ?? []).map((entry, i) => {
    const key = `ipam.addresses[${i}]`;
    const item = objectAt(entry, key);
    const address = cidrAt(item['address'], `${key}.address`);
    const gateway = optionalIP(item, 'gateway', `${key}.`);
    if (gateway !== undefined && gateway.family !== address.family) {
      throw configError(`${key}.gateway is IPv${gateway.family} but the address is IPv${address.family}`);
    }
    return { address, ...(gateway === undefined ? {} : { gateway }) };
  });
}

/** `node_slice_size`: "/26", "26" or 26, a prefix length no shorter than any range's. */
function sliceSize(ipam: Json, cidrs: ReadonlyArray<{ family: 4 | 6; prefix: number }>): number | undefined {
  const value = ipam['node_slice_size'];
  if (value === undefined || value === null || value === '') return undefined;
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.replace(/^\//, '') : '';
  const size = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(size) || size < 1 || size > 128) {
    throw configError(`ipam.node_slice_size ${describeValue(value)} must be a prefix length like "/26"`);
  }
  for (const cidr of cidrs) {
    if (size < cidr.prefix || size > bitsOf(cidr.family)) {
      throw configError(`ipam.node_slice_size /${size} does not fit range /${cidr.prefix} (IPv${cidr.family})`);
    }
  }
  return size;
}

/** runtimeConfig.ips, args.cni.ips and CNI_ARGS IP=, merged and deduplicated; a "/len" suffix is dropped. */
function requestedIPs(request: Json, cniArgs: { readonly ips: readonly IPAddress[] } | undefined): IPAddress[] {
  const out: IPAddress[] = [];
  const add = (ip: IPAddress): void => {
    if (!out.some((o) => ipEquals(o, ip))) out.push(ip);
  };
  const fromList = (list: readonly unknown[] | undefined, key: string): void =>
    list?.forEach((item, i) => {
      const text = typeof item === 'string' && item.includes('/') ? item : undefined;
      add(text === undefined ? ipAt(item, `${key}[${i}]`) : addressOf(cidrAt(text, `${key}[${i}]`)));
    });
  const runtime = isRecord(request['runtimeConfig']) ? request['runtimeConfig'] : undefined;
  if (runtime !== undefined) fromList(optionalList(runtime, 'ips', 'runtimeConfig.'), 'runtimeConfig.ips');
  const args = isRecord(request['args']) ? request['args'] : undefined;
  const cni = args !== undefined && isRecord(args['cni']) ? args['cni'] : undefined;
  if (cni !== undefined) fromList(optionalList(cni, 'ips', 'args.cni.'), 'args.cni.ips');
  for (const ip of cniArgs?.ips ?? []) add(ip);
  return out;
}
