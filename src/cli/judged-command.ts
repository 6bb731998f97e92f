// The shape `check` and `orphans` share: the controller's policy flags, one inventory of the namespace with its
// pods, and a report of it judged by the controller's rules.
import type { Judging } from './orphans-report.ts';
import { connect, EXIT, parseCommand, runCommand, type CommonFlags } from './connect.ts';
import type { Inventory } from './inventory.ts';
import { readInventory } from './inventory-read.ts';
import { judgingOf, POLICY_OPTIONS, withBareBooleans } from './policy-flags.ts';

export function runJudgedCommand(
  name: string,
  argv: readonly string[],
  usage: string,
  report: (inv: Inventory, judging: Judging, flags: CommonFlags) => number,
): Promise<number> {
  return runCommand(name, async () => {
    const { flags, values, help } = parseCommand(name, withBareBooleans(argv), POLICY_OPTIONS, []);
    if (help) {
      process.stdout.write(usage);
      return EXIT.ok;
    }
    const judging = judgingOf(values);
    const api = await connect(flags);
    try {
      return report(await readInventory(api, { pods: true }), judging, flags);
    } finally {
      api.close();
    }
  });
}
