// The controller's cleanup flags, for the commands that judge orphans as it does (orphans, check, pool): an operator
// whose controller runs with other values passes the same ones here. Defaults are the controller's.
import { DEFAULT_POLICY } from '../controller/orphans/orphans.ts';
import { duration, type FlagValues } from './flags.ts';
import type { Judging } from './orphans-report.ts';

export const POLICY_FLAGS = {
  'cleanup-terminating': { type: 'boolean', default: DEFAULT_POLICY.cleanupTerminating },
  'cleanup-disrupted': { type: 'boolean', default: DEFAULT_POLICY.cleanupDisrupted },
  'verify-network-status': { type: 'boolean', default: DEFAULT_POLICY.verifyNetworkStatus },
  'pending-grace': { type: 'string' },
  'terminal-grace': { type: 'string' },
  // The controller's default.
  'reservation-grace': { type: 'string', default: '60s' },
} as const;

export const POLICY_HELP = `  The controller's flags, when it runs with other values than its defaults:
  --cleanup-terminating BOOL, --cleanup-disrupted BOOL, --verify-network-status BOOL,
  --pending-grace D, --terminal-grace D, --reservation-grace D
`;

export function judgingOf(values: FlagValues<typeof POLICY_FLAGS>): Judging {
  const grace = (flag: 'pending-grace' | 'terminal-grace', fallback: number): number => {
    const given = values[flag];
    return given === undefined ? fallback : duration(given, flag);
  };
  return {
    policy: {
      cleanupTerminating: values['cleanup-terminating'],
      cleanupDisrupted: values['cleanup-disrupted'],
      verifyNetworkStatus: values['verify-network-status'],
      pendingGraceMs: grace('pending-grace', DEFAULT_POLICY.pendingGraceMs),
      terminalGraceMs: grace('terminal-grace', DEFAULT_POLICY.terminalGraceMs),
    },
    reservationGraceMs: duration(values['reservation-grace'], 'reservation-grace'),
  };
}
