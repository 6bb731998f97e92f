// `hereabouts orphans`: what the controller would release, and why, by its own rules. Reads the whereabouts
// objects of the namespace and every pod (as the controller's caches hold them).
import { EXIT } from './command.ts';
import { COMMON_HELP, toJson } from './connect.ts';
import { runJudgedCommand } from './judged-command.ts';
import { formatOrphans, orphansReport } from './orphans-report.ts';
import { POLICY_HELP } from './policy-flags.ts';

const usage = `Usage: hereabouts orphans [flags]
  The allocations and OverlappingRangeIPReservations the controller releases on its next pass, and why (pod-gone,
  pod-recreated, pod-terminal, pod-disrupted, pod-terminating, not-in-network-status; address-not-held), and those
  a grace period still holds back, with when it ends. Needs list on pods. Exit 0 once listed (releasing orphans is
  the controller's normal work; \`hereabouts check\` fails on them).
${POLICY_HELP}${COMMON_HELP}`;

export function runOrphans(argv: readonly string[]): Promise<number> {
  return runJudgedCommand('orphans', argv, usage, (inv, judging, flags) => {
    if (inv.pods === undefined) throw new Error('pods cannot be listed (403): orphans are judged by their pods');
    const report = orphansReport(inv, judging);
    process.stdout.write(flags.output === 'json' ? toJson(report) : formatOrphans(report, inv.nowMs));
    return EXIT.ok;
  });
}
