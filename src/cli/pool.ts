// `hereabouts pool <name>`: every allocation of one IPPool. Reads the whereabouts objects of the namespace and
// every pod.
import { COMMON_HELP, connect, EXIT, parseCommand, runCommand, toJson } from './connect.ts';
import { readInventory } from './inventory-read.ts';
import { judgingOf, POLICY_HELP, POLICY_OPTIONS, withBareBooleans } from './policy-flags.ts';
import { formatPool, poolReport } from './pool-report.ts';

const usage = `Usage: hereabouts pool <name> [flags]
  Every allocation of the IPPool: address, pod (and its state), node, age, container, interface, the state of its
  reservation (agrees, other-attachment, missing) and the controller's verdict (released now, or when a grace
  period ends). Exit 1 when there is no such pool.
${POLICY_HELP}${COMMON_HELP}`;

export function runPool(argv: readonly string[]): Promise<number> {
  return runCommand('pool', async () => {
    const { flags, values, positionals, help } = parseCommand('pool', withBareBooleans(argv), POLICY_OPTIONS, [
      '<name>',
    ]);
    if (help) {
      process.stdout.write(usage);
      return EXIT.ok;
    }
    const judging = judgingOf(values);
    const name = positionals[0] ?? '';
    const api = await connect(flags);
    try {
      const inv = await readInventory(api, { pods: true });
      const pool = inv.pools.find((p) => p.view.name === name);
      if (pool === undefined) {
        process.stderr.write(`hereabouts pool: no IPPool ${JSON.stringify(name)} in namespace ${inv.namespace}\n`);
        return EXIT.problem;
      }
      const report = poolReport(inv, pool, judging);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatPool(report, inv.nowMs));
      return EXIT.ok;
    } finally {
      api.close();
    }
  });
}
