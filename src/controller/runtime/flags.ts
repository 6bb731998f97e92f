// Flags of `hereabouts controller`, parsed with node:util parseArgs into typed options. Durations read as Go's
// (500ms, 15s, 5m, 1h, or bare seconds); booleans as Go's (--flag, --flag=true, --flag=false).
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { requestTimeoutMs } from './lease.ts';
import { LOG_LEVELS, type LogLevel } from '../../log/json-log.ts';
import type { CleanupPolicy } from '../orphans/orphans.ts';

export const usage = `Usage: hereabouts controller [flags]

Releases orphaned allocations and reservations, assigns node slices, reports pool status, metrics and events.
Several replicas may run; only the holder of the Lease acts.

  --kubeconfig FILE              kubeconfig (default: the pod's service account, in-cluster)
  --namespace NS                 where the IPPools, reservations and NodeSlicePools live
                                 (default: the kubeconfig context's, in-cluster: the pod's)
  --leader-elect-namespace NS    namespace of the Lease (default: --namespace)
  --leader-elect-name NAME       name of the Lease (default hereabouts-controller)
  --lease-duration D             how long a lease is valid without renewal (default 15s)
  --renew-deadline D             a leader that could not renew for this long stops acting (default 10s)
  --retry-period D               how often to renew or try to acquire (default 2s); a leader's requests time out
                                 after renew deadline - retry period
  --identity ID                  holder identity (default: hostname-pid)
  --reconcile-interval D         period of the full pass (default 30s)
  --cleanup-terminating BOOL     release allocations of terminating pods once they stopped (default false)
  --cleanup-disrupted BOOL       release allocations of pods the taint manager deleted (DisruptionTarget=True,
                                 DeletionByTaintManager) once they stopped (default true)
  --terminal-grace D             release a Succeeded/Failed pod's allocations this long after it ended, or at once
                                 when its kubelet reports the sandbox gone (default 60s)
  --verify-network-status BOOL   release addresses missing from a running pod's Multus network-status (default true)
  --pending-grace D              never touch a Pending pod younger than this (default 5m)
  --reservation-grace D          never delete a reservation younger than this (default 60s)
  --slice-drain-grace D          a node slice that left its node (node gone, network resliced) drains at least
                                 this long before its emptied pool releases it (default 60s)
  --pool-status BOOL             write IPPool status (capacity, used, free, conditions) (default true)
  --metrics-addr ADDR            Prometheus /metrics (default :9090; "" turns it off)
  --health-addr ADDR             /healthz and /readyz (default :8080; "" turns it off)
  --log-level LEVEL              debug, info, warning or error (default info)
  --once                         sync, run one full pass if the lease is won, release it and exit
  -h, --help                     this text
`;

export interface LeaderFlags {
  readonly namespace?: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export interface ControllerFlags {
  readonly kubeconfig?: string;
  readonly namespace?: string;
  readonly leader: LeaderFlags;
  /** Timeout of the requests a leader makes (passes, events, the lease): below the renew deadline. */
  readonly requestTimeoutMs: number;
  readonly reconcileIntervalMs: number;
  readonly policy: CleanupPolicy;
  readonly reservationGraceMs: number;
  readonly sliceDrainGraceMs: number;
  readonly poolStatus: boolean;
  readonly metricsAddr: string;
  readonly healthAddr: string;
  readonly logLevel: LogLevel;
  readonly once: boolean;
}

const BOOLEANS = ['cleanup-terminating', 'cleanup-disrupted', 'verify-network-status', 'pool-status'];

/** The options, or 'help'. Throws TypeError naming the flag for anything it cannot read. */
export function parseControllerFlags(argv: readonly string[]): ControllerFlags | 'help' {
  // A bare boolean flag means true, as in Go; parseArgs needs the value spelled out.
  const args = argv.map((arg) =>
    BOOLEANS.includes(arg.replace(/^--/, '')) && arg.startsWith('--') ? `${arg}=true` : arg,
  );
  const { values: v } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect-namespace': { type: 'string' },
      'leader-elect-name': { type: 'string', default: 'hereabouts-controller' },
      'lease-duration': { type: 'string', default: '15s' },
      'renew-deadline': { type: 'string', default: '10s' },
      'retry-period': { type: 'string', default: '2s' },
      identity: { type: 'string', default: `${hostname()}-${process.pid}` },
      'reconcile-interval': { type: 'string', default: '30s' },
      'cleanup-terminating': { type: 'string', default: 'false' },
      'cleanup-disrupted': { type: 'string', default: 'true' },
      'verify-network-status': { type: 'string', default: 'true' },
      'pending-grace': { type: 'string', default: '5m' },
      'terminal-grace': { type: 'string', default: '60s' },
      'reservation-grace': { type: 'string', default: '60s' },
      'slice-drain-grace': { type: 'string', default: '60s' },
      'pool-status': { type: 'string', default: 'true' },
      'metrics-addr': { type: 'string', default: ':9090' },
      'health-addr': { type: 'string', default: ':8080' },
      'log-level': { type: 'string', default: 'info' },
      once: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (v.help) return 'help';
  const leader: LeaderFlags = {
    ...(v['leader-elect-namespace'] === undefined ? {} : { namespace: v['leader-elect-namespace'] }),
    name: nonEmpty(v['leader-elect-name'], 'leader-elect-name'),
    identity: nonEmpty(v.identity, 'identity'),
    leaseDurationMs: duration(v['lease-duration'], 'lease-duration'),
    renewDeadlineMs: duration(v['renew-deadline'], 'renew-deadline'),
    retryPeriodMs: duration(v['retry-period'], 'retry-period'),
  };
  // client-go's rules: a leader must give up before anyone may take over, and renew more than once per deadline.
  if (leader.retryPeriodMs <= 0) throw new TypeError(`--retry-period ${v['retry-period']} must be above 0`);
  if (leader.renewDeadlineMs >= leader.leaseDurationMs) {
    throw new TypeError(
      `--renew-deadline ${v['renew-deadline']} must be shorter than --lease-duration ${v['lease-duration']}`,
    );
  }
  if (leader.retryPeriodMs * 1.2 >= leader.renewDeadlineMs) {
    throw new TypeError(
      `--retry-period ${v['retry-period']} must be well below --renew-deadline ${v['renew-deadline']}`,
    );
  }
  const logLevel = LOG_LEVELS.find((l) => l === v['log-level']);
  if (logLevel === undefined)
    throw new TypeError(`--log-level ${JSON.stringify(v['log-level'])} is not one of ${LOG_LEVELS.join(', ')}`);
  const reconcileIntervalMs = duration(v['reconcile-interval'], 'reconcile-interval');
  if (reconcileIntervalMs < 1000) throw new TypeError(`--reconcile-interval ${v['reconcile-interval']} is below 1s`);
  return {
    ...(v.kubeconfig === undefined ? {} : { kubeconfig: v.kubeconfig }),
    ...(v.namespace === undefined ? {} : { namespace: nonEmpty(v.namespace, 'namespace') }),
    leader,
    requestTimeoutMs: requestTimeoutMs(leader),
    reconcileIntervalMs,
    policy: {
      cleanupTerminating: bool(v['cleanup-terminating'], 'cleanup-terminating'),
      cleanupDisrupted: bool(v['cleanup-disrupted'], 'cleanup-disrupted'),
      verifyNetworkStatus: bool(v['verify-network-status'], 'verify-network-status'),
      pendingGraceMs: duration(v['pending-grace'], 'pending-grace'),
      terminalGraceMs: duration(v['terminal-grace'], 'terminal-grace'),
    },
    reservationGraceMs: duration(v['reservation-grace'], 'reservation-grace'),
    sliceDrainGraceMs: duration(v['slice-drain-grace'], 'slice-drain-grace'),
    poolStatus: bool(v['pool-status'], 'pool-status'),
    metricsAddr: v['metrics-addr'],
    healthAddr: v['health-addr'],
    logLevel,
    once: v.once,
  };
}

export function duration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new TypeError(`--${flag} ${JSON.stringify(text)} is not a duration (500ms, 15s, 5m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

export function bool(text: string, flag: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new TypeError(`--${flag} ${JSON.stringify(text)} must be true or false`);
}

function nonEmpty(text: string, flag: string): string {
  if (text === '') throw new TypeError(`--${flag} must not be empty`);
  return text;
}
