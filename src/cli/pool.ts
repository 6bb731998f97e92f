// `hereabouts pool <name>`: every allocation of one IPPool. Reads the whereabouts objects of the namespace, every
// pod, and the StatefulSets and VMs the bindings of its sticky addresses name.
import { EXIT, runSubcommand } from './command.ts';
import { COMMON_FLAGS, COMMON_HELP, commonFlagsOf, connect, toJson } from './connect.ts';
import { readInventory } from './inventory-read.ts';
import { judgingOf, POLICY_FLAGS, POLICY_HELP } from './policy-flags.ts';
import { formatPool, poolReport } from './pool-report.ts';

const usage = `Usage: hereabouts pool <name> [flags]
  Every allocation of the IPPool: address, pod (and its state) or what holds it instead ("(warm)": a node agent;
  "IPAddressClaim ns/name", "PrefixClaim ns/name CIDR": a claim, with whether it still exists), node, age,
  container, interface, the state of its reservation (agrees, other-attachment, missing; none for a PrefixClaim's
  block) and the controller's verdict (released now, or when a grace period ends). A sticky address names its
  binding ("ns/web-0 bound to StatefulSet/web/0"; POD STATE "parked" while no pod holds it), and once its
  StatefulSet or VirtualMachine no longer holds it, the reason the controller releases it after --sticky-grace
  ("?": the workload could not be read). Exit 1 when there is no such pool.
${POLICY_HELP}${COMMON_HELP}`;

export function runPool(argv: readonly string[]): Promise<number> {
  const command = { name: 'pool', usage, flags: { ...COMMON_FLAGS, ...POLICY_FLAGS }, positionals: ['<name>'] };
  return runSubcommand(command, argv, async ({ values, positionals }) => {
    const flags = commonFlagsOf(values);
    const judging = judgingOf(values);
    const name = positionals[0] ?? '';
    const api = await connect(flags);
    try {
      const inv = await readInventory(api, { pods: true, claims: true, sticky: true });
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
