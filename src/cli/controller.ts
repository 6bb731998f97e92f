// `hereabouts controller`: its command line, read into the controller's options. Durations read as Go's (500ms, 15s,
// 5m, 1h, or bare seconds). The connection is found as the operator commands find it, except that in a pod the
// ServiceAccount comes right after --kubeconfig.
import { hostname } from 'node:os';
import type { ControllerFlags, LeaderFlags } from '../controller/runtime/flags.ts';
import { requestTimeoutMs } from '../controller/runtime/lease.ts';
import { LOG_LEVELS } from '../log/json-log.ts';
import { runSubcommand } from './command.ts';
import { CONNECTION_FLAGS, connectionOf, endpointLoader } from './connect.ts';
import { duration, parseFlags, UsageError, type FlagValues } from './flags.ts';

export const CONTROLLER_USAGE = `Usage: hereabouts controller [flags]

Releases orphaned allocations and reservations, assigns node slices, reports pool status, metrics and events.
Several replicas may run; only the holder of the Lease acts.

  --kubeconfig FILE              kubeconfig; default: in a pod, its service account; elsewhere, as kubectl:
                                 $KUBECONFIG (its first file), else ~/.kube/config
  --context NAME                 a context of the kubeconfig other than its current one
  -n, --namespace NS             where the IPPools, reservations and NodeSlicePools live
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
  --sticky-grace D               a sticky address whose StatefulSet was scaled below its ordinal or deleted, or
                                 whose VirtualMachine was deleted, is released after this long (default 5m)
  --sticky LIST                  judge and pre-bind the sticky addresses of workloads in these namespaces: "all"
                                 (default), "none" (every bound address is kept), or a comma-separated list
  --pool-status BOOL             write IPPool status (capacity, used, free, conditions) (default true)
  --claims LIST                  serve Cluster API IPAddressClaims and PrefixClaims on hereabouts pools in these
                                 namespaces: "all" (default), "none", or a comma-separated list
  --metrics-addr ADDR            Prometheus /metrics (default :9090; "" turns it off)
  --health-addr ADDR             /healthz and /readyz (default :8080; "" turns it off)
  --log-level LEVEL              debug, info, warning or error (default info)
  --once                         sync, run one full pass if the lease is won, release it and exit (1 if not won)
  -h, --help                     this text
  A BOOL flag alone means true; --flag=false and --flag false turn it off.
`;

export const CONTROLLER_FLAGS = {
  ...CONNECTION_FLAGS,
  'leader-elect-namespace': { type: 'string' },
  'leader-elect-name': { type: 'string', default: 'hereabouts-controller' },
  'lease-duration': { type: 'string', default: '15s' },
  'renew-deadline': { type: 'string', default: '10s' },
  'retry-period': { type: 'string', default: '2s' },
  identity: { type: 'string' },
  'reconcile-interval': { type: 'string', default: '30s' },
  'cleanup-terminating': { type: 'boolean', default: false },
  'cleanup-disrupted': { type: 'boolean', default: true },
  'verify-network-status': { type: 'boolean', default: true },
  'pending-grace': { type: 'string', default: '5m' },
  'terminal-grace': { type: 'string', default: '60s' },
  'reservation-grace': { type: 'string', default: '60s' },
  'slice-drain-grace': { type: 'string', default: '60s' },
  'sticky-grace': { type: 'string', default: '5m' },
  sticky: { type: 'string', default: 'all' },
  'pool-status': { type: 'boolean', default: true },
  claims: { type: 'string', default: 'all' },
  'metrics-addr': { type: 'string', default: ':9090' },
  'health-addr': { type: 'string', default: ':8080' },
  'log-level': { type: 'string', default: 'info' },
  once: { type: 'boolean' },
} as const;

export function runControllerCommand(argv: readonly string[]): Promise<number> {
  return runSubcommand(
    { name: 'controller', usage: CONTROLLER_USAGE, flags: CONTROLLER_FLAGS },
    argv,
    async ({ values }) => {
      const flags = controllerFlagsOf(values);
      // Found before anything starts: no kubeconfig at all is a failure to report now, not at the first pass.
      const load = endpointLoader(connectionOf(values), { inClusterFirst: true });
      // Loaded here, not for --help or a wrong command line: the controller is the heaviest mode.
      const { runController } = await import('../controller/main.ts');
      return runController(flags, load);
    },
  );
}

/** The options of a controller command line (tests); throws UsageError naming the flag. */
export function parseControllerFlags(argv: readonly string[]): ControllerFlags {
  return controllerFlagsOf(parseFlags(argv, CONTROLLER_FLAGS).values);
}

function controllerFlagsOf(v: FlagValues<typeof CONTROLLER_FLAGS>): ControllerFlags {
  const leader: LeaderFlags = {
    ...(v['leader-elect-namespace'] === undefined ? {} : { namespace: v['leader-elect-namespace'] }),
    name: nonEmpty(v['leader-elect-name'], 'leader-elect-name'),
    identity: nonEmpty(v.identity ?? `${hostname()}-${process.pid}`, 'identity'),
    leaseDurationMs: duration(v['lease-duration'], 'lease-duration'),
    renewDeadlineMs: duration(v['renew-deadline'], 'renew-deadline'),
    retryPeriodMs: duration(v['retry-period'], 'retry-period'),
  };
  // client-go's rules: a leader must give up before anyone may take over, and renew more than once per deadline.
  if (leader.retryPeriodMs <= 0) throw new UsageError(`--retry-period ${v['retry-period']} must be above 0`);
  if (leader.renewDeadlineMs >= leader.leaseDurationMs) {
    throw new UsageError(
      `--renew-deadline ${v['renew-deadline']} must be shorter than --lease-duration ${v['lease-duration']}`,
    );
  }
  if (leader.retryPeriodMs * 1.2 >= leader.renewDeadlineMs) {
    throw new UsageError(
      `--retry-period ${v['retry-period']} must be well below --renew-deadline ${v['renew-deadline']}`,
    );
  }
  const logLevel = LOG_LEVELS.find((l) => l === v['log-level']);
  if (logLevel === undefined)
    throw new UsageError(`--log-level ${JSON.stringify(v['log-level'])} is not one of ${LOG_LEVELS.join(', ')}`);
  const reconcileIntervalMs = duration(v['reconcile-interval'], 'reconcile-interval');
  if (reconcileIntervalMs < 1000) throw new UsageError(`--reconcile-interval ${v['reconcile-interval']} is below 1s`);
  const { namespace } = connectionOf(v);
  return {
    ...(namespace === undefined ? {} : { namespace }),
    leader,
    requestTimeoutMs: requestTimeoutMs(leader),
    reconcileIntervalMs,
    policy: {
      cleanupTerminating: v['cleanup-terminating'],
      cleanupDisrupted: v['cleanup-disrupted'],
      verifyNetworkStatus: v['verify-network-status'],
      pendingGraceMs: duration(v['pending-grace'], 'pending-grace'),
      terminalGraceMs: duration(v['terminal-grace'], 'terminal-grace'),
    },
    reservationGraceMs: duration(v['reservation-grace'], 'reservation-grace'),
    sliceDrainGraceMs: duration(v['slice-drain-grace'], 'slice-drain-grace'),
    stickyGraceMs: duration(v['sticky-grace'], 'sticky-grace'),
    poolStatus: v['pool-status'],
    claims: namespacesFlag(v.claims, 'claims'),
    sticky: namespacesFlag(v.sticky, 'sticky'),
    metricsAddr: v['metrics-addr'],
    healthAddr: v['health-addr'],
    logLevel,
    once: v.once,
  };
}

/** --claims: 'all', or the namespaces served (none: an empty list). */
function namespacesFlag(text: string, flag: string): 'all' | readonly string[] {
  if (text === 'all') return 'all';
  if (text === 'none') return [];
  const names = text.split(',').map((n) => n.trim());
  for (const name of names)
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
      throw new UsageError(
        `--${flag} ${JSON.stringify(text)}: ${JSON.stringify(name)} is not a namespace name ("all", "none" or a list)`,
      );
  return names;
}

function nonEmpty(text: string, flag: string): string {
  if (text === '') throw new UsageError(`--${flag} must not be empty`);
  return text;
}
