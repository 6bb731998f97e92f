// `hereabouts check`: a consistency report of pools, reservations, pods, node slices and claims; exit 1 on any problem.
// Sticky addresses' bindings are judged on the StatefulSets, pods and VMs read live (notices, not problems).
import { EXIT } from './command.ts';
import { COMMON_HELP, toJson } from './connect.ts';
import { checkReport, formatCheck, NOTICE_KINDS, PROBLEM_KINDS } from './check-report.ts';
import { runJudgedCommand } from './judged-command.ts';
import { POLICY_HELP } from './policy-flags.ts';

const usage = `Usage: hereabouts check [flags]
  Checks that pools, OverlappingRangeIPReservations, pods, node slices and the claims (Cluster API IPAddressClaims,
  PrefixClaims) pool records name agree. Problems:
  ${PROBLEM_KINDS.join(', ')}.
  Notices, informational (the exit status ignores them): ${NOTICE_KINDS.join(', ')}. binding-released: a sticky
  address whose StatefulSet (scaled below its ordinal, or deleted) or VirtualMachine (deleted) no longer holds it,
  read live with the controller's rule; the controller releases it after its --sticky-grace. A sticky address is
  never an orphan.
  Exit 0 when consistent, 1 on any problem.
${POLICY_HELP}${COMMON_HELP}`;

export function runCheck(argv: readonly string[]): Promise<number> {
  return runJudgedCommand(
    'check',
    argv,
    usage,
    (inv, judging, flags) => {
      const report = checkReport(inv, judging);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatCheck(report));
      return report.problems.length === 0 ? EXIT.ok : EXIT.problem;
    },
    { sticky: true },
  );
}
