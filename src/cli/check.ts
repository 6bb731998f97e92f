// `hereabouts check`: a consistency report of pools, reservations, pods, node slices and claims; exit 1 on any problem.
import { EXIT } from './command.ts';
import { COMMON_HELP, toJson } from './connect.ts';
import { checkReport, formatCheck, PROBLEM_KINDS } from './check-report.ts';
import { runJudgedCommand } from './judged-command.ts';
import { POLICY_HELP } from './policy-flags.ts';

const usage = `Usage: hereabouts check [flags]
  Checks that pools, OverlappingRangeIPReservations, pods, node slices and the claims (Cluster API IPAddressClaims,
  PrefixClaims) pool records name agree. Problems:
  ${PROBLEM_KINDS.join(', ')}.
  Exit 0 when consistent, 1 on any problem.
${POLICY_HELP}${COMMON_HELP}`;

export function runCheck(argv: readonly string[]): Promise<number> {
  return runJudgedCommand('check', argv, usage, (inv, judging, flags) => {
    const report = checkReport(inv, judging);
    process.stdout.write(flags.output === 'json' ? toJson(report) : formatCheck(report));
    return report.problems.length === 0 ? EXIT.ok : EXIT.problem;
  });
}
