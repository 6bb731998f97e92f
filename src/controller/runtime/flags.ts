// The options of `hereabouts controller`, as src/cli/controller.ts reads them from its command line.
import type { LogLevel } from '../../log/json-log.ts';
import type { CleanupPolicy } from '../orphans/orphans.ts';

export interface LeaderFlags {
  readonly namespace?: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export interface ControllerFlags {
  /** Where the IPPools, reservations and NodeSlicePools live (default: the kubeconfig context's). */
  readonly namespace?: string;
  readonly leader: LeaderFlags;
  /** Timeout of the requests a leader makes (passes, events, the lease): below the renew deadline. */
  readonly requestTimeoutMs: number;
  readonly reconcileIntervalMs: number;
  readonly policy: CleanupPolicy;
  readonly reservationGraceMs: number;
  readonly sliceDrainGraceMs: number;
  /** How long a sticky address's binding must be seen released before the address goes (docs/sticky.md). */
  readonly stickyGraceMs: number;
  /** Namespaces whose sticky addresses are judged and pre-bound: all, or these (none when empty: all are kept). */
  readonly sticky: 'all' | readonly string[];
  readonly poolStatus: boolean;
  /** Namespaces whose IPAddressClaims and PrefixClaims are served (DESIGN §12): all, or these (none when empty). */
  readonly claims: 'all' | readonly string[];
  readonly metricsAddr: string;
  readonly healthAddr: string;
  readonly logLevel: LogLevel;
  readonly once: boolean;
}
