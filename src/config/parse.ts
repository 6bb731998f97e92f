// One function turns the CNI request + CNI_ARGS + flat file into the validated NetworkConfig. Nothing
// downstream re-checks strings. Every error is a code-7 CniError naming the key and the value.
import type { CniArgs } from '../cni/args.ts';
import { configError } from '../cni/errors.ts';
import { describeValue } from '../cni/quote.ts';
import { bitsOf, ipEquals, type IPAddress } from '../ip/address.ts';
import { addressOf } from '../ip/cidr.ts';
import {
  cidrAt,
  ipAt,
  isObject,
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
import { loadFlatFile, mergeFlat, readFileIfPresent, type ReadFile } from './flatfile.ts';
import { buildRanges } from './ranges.ts';
import type {
  DatastoreConfig,
  DnsConfig,
  IpamConfig,
  LogLevel,
  NetworkConfig,
  RouteConfig,
  StaticAddress,
} from './types.ts';

export const DEFAULT_DATA_DIR = '/var/lib/cni/hereabouts';
export const DEFAULT_CACHE_DIR = '/var/lib/cni/hereabouts/cache';
/** GC spares allocations younger than this: an ADD may commit after the runtime's valid-attachments snapshot. */
export const DEFAULT_GC_GRACE_SECONDS = 300;
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'verbose', 'info', 'warning', 'error', 'panic'];
// CNI network names (spec): alphanumerics first, then alphanumerics, '_', '.', '-'.
const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
// network_name prefixes Kubernetes object names: lowercase RFC 1123 labels joined by '.' or '-'.
const NETWORK_NAME = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

export interface ParseOptions {
  readonly cniVersion: string;
  /** CNI_ARGS as parsed by the protocol layer (absent for GC and STATUS). */
  readonly cniArgs?: CniArgs | undefined;
  /** Injectable for tests; default reads the file system. */
  readonly readFile?: ReadFile;
  readonly verb?: string;
}

export function parseNetworkConfig(request: Json, options: ParseOptions): NetworkConfig {
  const name = request['name'];
  if (typeof name !== 'string' || !CNI_NAME.test(name)) {
    throw configError(`name ${describeValue(name)} must be a CNI network name (letters, digits, "_", ".", "-")`);
  }
  const inline = objectAt(request['ipam'], 'ipam');
  const configurationPath = optionalString(inline, 'configuration_path', 'ipam.');
  const flat = loadFlatFile(configurationPath, options.readFile ?? readFileIfPresent);
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
  if (networkName !== undefined && !NETWORK_NAME.test(networkName)) {
    throw configError(
      `ipam.network_name ${describeValue(networkName)} must be lowercase letters, digits, "-" and "." ` +
        '(at most 63, starting and ending alphanumeric): it prefixes Kubernetes object names',
    );
  }
  const nodeSliceSize = sliceSize(ipam, ranges.map((r) => r.cidr));
  checkTimings(ipam);

  const config: IpamConfig = {
    type,
    ranges,
    ...(gateway === undefined ? {} : { gateway }),
    routes: routesOf(ipam),
    ...withDns(ipam),
    addresses,
    ...(networkName === undefined ? {} : { networkName }),
    ...(nodeSliceSize === undefined ? {} : { nodeSliceSize }),
    enableOverlappingRanges: optionalBoolean(ipam, 'enable_overlapping_ranges', 'ipam.') ?? true,
    gcGraceSeconds: optionalCount(ipam, 'gc_grace_seconds', 'ipam.') ?? DEFAULT_GC_GRACE_SECONDS,
    datastore: datastoreOf(ipam),
    ...optionalKey('logFile', absolutePath(ipam, 'log_file')),
    logLevel: logLevelOf(ipam),
    ...optionalKey('configurationPath', flat?.path),
  };
  if (flat !== undefined) warnings.unshift(`flat file ${flat.path} merged under the inline ipam keys`);
  return {
    cniVersion: options.cniVersion,
    name,
    ipam: config,
    requestedIPs: requestedIPs(request, options.cniArgs),
    ...(request['prevResult'] === undefined ? {} : { prevResult: request['prevResult'] }),
    warnings,
    raw: request,
  };
}

function optionalKey<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function absolutePath(ipam: Json, key: string): string | undefined {
  const value = optionalString(ipam, key, 'ipam.');
  if (value !== undefined && !value.startsWith('/')) {
    throw configError(`ipam.${key} ${describeValue(value)} must be an absolute path`);
  }
  return value;
}

function datastoreOf(ipam: Json): DatastoreConfig {
  const kind = optionalString(ipam, 'datastore', 'ipam.') ?? 'kubernetes';
  if (kind === 'local') return { kind, dataDir: absolutePath(ipam, 'data_dir') ?? DEFAULT_DATA_DIR };
  if (kind !== 'kubernetes') {
    throw configError(`ipam.datastore ${describeValue(kind)} is not "kubernetes" or "local"`);
  }
  const kubernetes = optionalObject(ipam, 'kubernetes', 'ipam.');
  const kubeconfig = kubernetes === undefined ? undefined : optionalString(kubernetes, 'kubeconfig', 'ipam.kubernetes.');
  if (kubeconfig === undefined) {
    // Never fall back to the local store here: a node-local pool would silently hand out cluster-wide duplicates.
    throw configError(
      'ipam.datastore "kubernetes" (the default) needs ipam.kubernetes.kubeconfig, inline or in the flat file; ' +
        'set "datastore": "local" for the embedded single-node store',
    );
  }
  return { kind, kubeconfig, cacheDir: absolutePath(ipam, 'cache_dir') ?? DEFAULT_CACHE_DIR };
}

function logLevelOf(ipam: Json): LogLevel {
  const level = optionalString(ipam, 'log_level', 'ipam.');
  if (level === undefined) return 'error';
  const known = LOG_LEVELS.find((l) => l === level.toLowerCase());
  if (known === undefined) throw configError(`ipam.log_level ${describeValue(level)} is not one of ${LOG_LEVELS.join(', ')}`);
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

function checkTimings(ipam: Json): void {
  for (const key of ['leader_lease_duration', 'leader_renew_deadline', 'leader_retry_period', 'sleep_for_race']) {
    optionalCount(ipam, key, 'ipam.');
  }
}

/** runtimeConfig.ips, args.cni.ips and CNI_ARGS IP=, merged and deduplicated; a "/len" suffix is dropped. */
function requestedIPs(request: Json, cniArgs: CniArgs | undefined): IPAddress[] {
  const out: IPAddress[] = [];
  const add = (ip: IPAddress): void => {
    if (!out.some((o) => ipEquals(o, ip))) out.push(ip);
  };
  const fromList = (list: readonly unknown[] | undefined, key: string): void =>
    list?.forEach((item, i) => {
      const text = typeof item === 'string' && item.includes('/') ? item : undefined;
      add(text === undefined ? ipAt(item, `${key}[${i}]`) : addressOf(cidrAt(text, `${key}[${i}]`)));
    });
  const runtime = isObject(request['runtimeConfig']) ? request['runtimeConfig'] : undefined;
  if (runtime !== undefined) fromList(optionalList(runtime, 'ips', 'runtimeConfig.'), 'runtimeConfig.ips');
  const args = isObject(request['args']) ? request['args'] : undefined;
  const cni = args !== undefined && isObject(args['cni']) ? args['cni'] : undefined;
  if (cni !== undefined) fromList(optionalList(cni, 'ips', 'args.cni.'), 'args.cni.ips');
  for (const ip of cniArgs?.ips ?? []) add(ip);
  return out;
}
