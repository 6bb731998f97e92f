// Whereabouts' leader election keys (leader_lease_duration, leader_renew_deadline, leader_retry_period, in ms; 0 or
// absent: its defaults). hereabouts uses them only while it takes part in Whereabouts' Lease during a switch
// (src/store/kubernetes/whereabouts-lease.ts). Values client-go would refuse (Whereabouts then fails every call) fall
// back to the defaults with a warning, and a retry period is never shorter than MIN_RETRY_PERIOD_MS: the config comes
// from a NetworkAttachmentDefinition, and a waiter polls the API server at that period.
import { optionalCount, type Json } from './fields.ts';
import type { LeaderTiming } from './types.ts';

/** pkg/types of Whereabouts v0.9.4: DefaultLeaderLeaseDuration, DefaultLeaderRenewDeadline, DefaultLeaderRetryPeriod. */
export const WHEREABOUTS_LEADER_TIMING: LeaderTiming = {
  leaseDurationMs: 1500,
  renewDeadlineMs: 1000,
  retryPeriodMs: 500,
};
export const MIN_RETRY_PERIOD_MS = 100;
/** client-go's leaderelection.JitterFactor: a renew deadline must exceed this many retry periods. */
const JITTER_FACTOR = 1.2;

export function leaderTimingOf(ipam: Json, warnings: string[]): LeaderTiming {
  const given = (key: string, fallback: number): number => {
    const value = optionalCount(ipam, key, 'ipam.');
    return value === undefined || value === 0 ? fallback : value;
  };
  const defaults = WHEREABOUTS_LEADER_TIMING;
  const timing = {
    leaseDurationMs: given('leader_lease_duration', defaults.leaseDurationMs),
    renewDeadlineMs: given('leader_renew_deadline', defaults.renewDeadlineMs),
    retryPeriodMs: given('leader_retry_period', defaults.retryPeriodMs),
  };
  optionalCount(ipam, 'sleep_for_race', 'ipam.'); // accepted, never slept
  if (
    timing.leaseDurationMs <= timing.renewDeadlineMs ||
    timing.renewDeadlineMs <= JITTER_FACTOR * timing.retryPeriodMs
  ) {
    warnings.push(
      `ipam.leader_lease_duration ${timing.leaseDurationMs}, leader_renew_deadline ${timing.renewDeadlineMs} and ` +
        `leader_retry_period ${timing.retryPeriodMs} do not satisfy lease > renew deadline > 1.2 x retry period; ` +
        "Whereabouts' defaults are used",
    );
    return defaults;
  }
  if (timing.retryPeriodMs < MIN_RETRY_PERIOD_MS) {
    warnings.push(
      `ipam.leader_retry_period ${timing.retryPeriodMs} is below ${MIN_RETRY_PERIOD_MS} ms; ${MIN_RETRY_PERIOD_MS} is used`,
    );
    return { ...timing, retryPeriodMs: MIN_RETRY_PERIOD_MS };
  }
  return timing;
}
