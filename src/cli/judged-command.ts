// The shape `check` and `orphans` share: the controller's policy flags, one inventory of the namespace with its
// pods (and the claims its records name, and for `check` what the bindings of its sticky records depend on), and a
// report of it judged by the controller's rules.
import type { Judging } from './orphans-report.ts';
import { runSubcommand } from './command.ts';
import { COMMON_FLAGS, commonFlagsOf, connect, type CommonFlags } from './connect.ts';
import type { Inventory } from './inventory.ts';
import { readInventory } from './inventory-read.ts';
import { judgingOf, POLICY_FLAGS } from './policy-flags.ts';

export function runJudgedCommand(
  name: string,
  argv: readonly string[],
  usage: string,
  report: (inv: Inventory, judging: Judging, flags: CommonFlags) => number,
  read: { readonly sticky?: boolean } = {},
): Promise<number> {
  const command = { name, usage, flags: { ...COMMON_FLAGS, ...POLICY_FLAGS } };
  return runSubcommand(command, argv, async ({ values }) => {
    const flags = commonFlagsOf(values);
    const judging = judgingOf(values);
    const api = await connect(flags);
    try {
      return report(
        await readInventory(api, { pods: true, claims: true, sticky: read.sticky === true }),
        judging,
        flags,
      );
    } finally {
      api.close();
    }
  });
}
