// The controller's cleanup flags, for the commands that judge orphans as it does (orphans, check, pool): an operator
// whose controller runs with other values passes the same ones here. Defaults are the controller's.
import { DEFAULT_POLICY } from '../controller/orphans/orphans.ts';
import { bool, duration } from '../controller/runtime/flags.ts';
import { UsageError } from './connect.ts';
import type { Judging } from './orphans-report.ts';

/** The controller's --reservation-grace default. */
const RESERVATION_GRACE = '60s';

export const POLICY_OPTIONS = {
  'cleanup-terminating': { type: 'string' },
  'cleanup-disrupted': { type: 'string' },
  'verify-network-status': { type: 'string' },
  'pending-grace': { type: 'string' },
  'terminal-grace': { type: 'string' },
  'reservation-grace': { type: 'string' },
} as const;

export const POLICY_HELP = `  The controller's flags, when it runs with other values than its defaults:
  --cleanup-terminating BOOL, --cleanup-disrupted BOOL, --verify-network-status BOOL,
  --pending-grace D, --terminal-grace D, --reservation-grace D
`;

const BOOLEANS = ['cleanup-terminating', 'cleanup-disrupted', 'verify-network-status'];

/** A bare boolean flag means true, as for the controller. */
export function withBareBooleans(argv: readonly string[]): string[] {
  return argv.map((arg) => (arg.startsWith('--') && BOOLEANS.includes(arg.slice(2)) ? `${arg}=true` : arg));
}

export function judgingOf(values: Readonly<Record<string, string | boolean | undefined>>): Judging {
  const text = (key: string): string | undefined => (typeof values[key] === 'string' ? values[key] : undefined);
  const flag = <T>(key: string, parse: (t: string, f: string) => T, fallback: T): T => {
    const given = text(key);
    if (given === undefined) return fallback;
    try {
      return parse(given, key);
    } catch (err) {
      throw new UsageError(err instanceof Error ? err.message : String(err));
    }
  };
  return {
    policy: {
      cleanupTerminating: flag('cleanup-terminating', bool, DEFAULT_POLICY.cleanupTerminating),
      cleanupDisrupted: flag('cleanup-disrupted', bool, DEFAULT_POLICY.cleanupDisrupted),
      verifyNetworkStatus: flag('verify-network-status', bool, DEFAULT_POLICY.verifyNetworkStatus),
      pendingGraceMs: flag('pending-grace', duration, DEFAULT_POLICY.pendingGraceMs),
      terminalGraceMs: flag('terminal-grace', duration, DEFAULT_POLICY.terminalGraceMs),
    },
    reservationGraceMs: flag('reservation-grace', duration, duration(RESERVATION_GRACE, 'reservation-grace')),
  };
}
