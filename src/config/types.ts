// The normalised, validated IPAM configuration. Everything past src/config trusts these types.
import type { Cidr } from '../ip/cidr.ts';
import type { IPAddress } from '../ip/address.ts';

import type { Block } from '../ip/block.ts';
import type { PluginLogLevel } from '../log/logger.ts';

export type { Block };

export interface RangeConfig {
  /** The range's prefix, masked to its network address (pool name and offsets derive from it). */
  readonly cidr: Cidr;
  /** First and last allocatable addresses, inclusive, already clamped to the usable span. */
  readonly start: bigint;
  readonly end: bigint;
  /** Excluded blocks inside the range (CIDRs masked to their network), sorted by `first`. */
  readonly exclude: readonly Block[];
  /** Never handed out when it falls inside this range. */
  readonly gateway?: IPAddress;
}

export interface RouteConfig {
  readonly dst: Cidr;
  readonly gw?: IPAddress;
}

export interface DnsConfig {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** A static address from `addresses`: returned as is, never allocated. */
export interface StaticAddress {
  /** Address with its prefix length, host bits kept ("10.0.0.5/24"). */
  readonly address: Cidr;
  readonly gateway?: IPAddress;
}

export type DatastoreConfig =
  | { readonly kind: 'local'; readonly dataDir: string }
  | {
      readonly kind: 'kubernetes';
      /** Path of the kubeconfig file (`kubernetes.kubeconfig`). */
      readonly kubeconfig: string;
      /** May the kubeconfig's user run an exec credential plugin or an auth provider? Absent: no (trust boundary). */
      readonly execCredentials?: boolean;
      /** Node-local cache directory (same layout as the local store). */
      readonly cacheDir: string;
    };

/** Whereabouts' leader election timings (ms): how hereabouts takes part in its Lease during a switch. */
export interface LeaderTiming {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
}

export type StickyMode = 'all' | 'annotated';

export interface IpamConfig {
  /** Accepted for compatibility; both mean this plugin. */
  readonly type: 'hereabouts' | 'whereabouts';
  /** `range` first, then `ipRanges` in order. May be empty when only static `addresses` are given. */
  readonly ranges: readonly RangeConfig[];
  readonly gateway?: IPAddress;
  readonly routes: readonly RouteConfig[];
  readonly dns?: DnsConfig;
  readonly addresses: readonly StaticAddress[];
  /** `network_name`: separates pools of identical CIDRs; prefixes pool and reservation names. */
  readonly networkName?: string;
  /** `node_slice_size` as a prefix length. */
  readonly nodeSliceSize?: number;
  readonly enableOverlappingRanges: boolean;
  /**
   * `sticky` (docs/sticky.md): `true` binds the addresses of every StatefulSet replica and KubeVirt VM on this network
   * to its identity (a pod annotated `hereabouts.cni.cncf.io/sticky: "false"` opts out), `"annotated"` only those of
   * pods annotated "true". Absent or false: Whereabouts' behaviour. Whereabouts ignores the key.
   */
  readonly sticky?: StickyMode;
  /** `gc_grace_seconds`: GC spares allocations written less than this long ago. */
  readonly gcGraceSeconds: number;
  /** `leader_lease_duration`, `leader_renew_deadline`, `leader_retry_period`; absent: Whereabouts' defaults. */
  readonly leaderTiming?: LeaderTiming;
  readonly datastore: DatastoreConfig;
  readonly logFile?: string;
  readonly logLevel: PluginLogLevel;
  readonly configurationPath?: string;
}

/** A CNI request with its network configuration, parsed and validated once. */
export interface NetworkConfig {
  readonly cniVersion: string;
  /** The CNI network name (`name` of the conf/conflist). */
  readonly name: string;
  readonly ipam: IpamConfig;
  /** Addresses requested through runtimeConfig.ips, args.cni.ips or CNI_ARGS IP=; granted exactly or the ADD fails. */
  readonly requestedIPs: readonly IPAddress[];
  readonly prevResult?: unknown;
  /** Warnings collected while parsing (e.g. range_start outside the usable span); logged, never fatal. */
  readonly warnings: readonly string[];
  /** How the config was assembled (e.g. which flat file was merged): logged at debug level, on every call. */
  readonly notes?: readonly string[];
  /** Inline keys the plugin ignored rather than follow (an untrusted `log_file`), and why: said on every call. */
  readonly ignored?: readonly string[];
  /** The full decoded stdin object, for verbs that read extra keys (GC's valid attachments). */
  readonly raw: Readonly<Record<string, unknown>>;
}
