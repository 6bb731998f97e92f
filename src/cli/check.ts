// `hereabouts check`: a consistency report of pools, reservations, pods and node slices; exit 1 on any problem.
import { COMMON_HELP, connect, EXIT, parseCommand, runCommand, toJson } from './connect.ts';
import { checkReport, formatCheck, PROBLEM_KINDS } from './check-report.ts';
import { readInventory } from './inventory-read.ts';
import { judgingOf, POLICY_HELP, POLICY_OPTIONS, withBareBooleans } from './policy-flags.ts';

const usage = `Usage: hereabouts check [flags]
  Checks that pools, OverlappingRangeIPReservations, pods and node slices agree. Problems:
  ${PROBLEM_KINDS.join(', ')}.
  Exit 0 when consistent, 1 on any problem.
${POLICY_HELP}${COMMON_HELP}`;

export function runCheck(argv: readonly string[]): Promise<number> {
  return runCommand('check', async () => {
    const { flags, values, help } = parseCommand('check', withBareBooleans(argv), POLICY_OPTIONS, []);
    if (help) {
      process.stdout.write(usage);
      return EXIT.ok;
    }
    const judging = judgingOf(values);
    const api = await connect(flags);
    try {
      const report = checkReport(await readInventory(api, { pods: true }), judging);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatCheck(report));
      return report.problems.length === 0 ? EXIT.ok : EXIT.problem;
    } finally {
      api.close();
    }
  });
}
