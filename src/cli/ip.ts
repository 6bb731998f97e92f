// `hereabouts ip <address>`: who holds an address. Reads the whereabouts objects of the namespace and, live, the
// pods the holding records name, or the claims (an IPAddressClaim with its IPAddress, a PrefixClaim), and for a
// sticky address the objects its binding depends on.
import { tryParseIP, type IPAddress } from '../ip/address.ts';
import { EXIT, runSubcommand } from './command.ts';
import { COMMON_FLAGS, COMMON_HELP, commonFlagsOf, connect, toJson } from './connect.ts';
import { UsageError } from './flags.ts';
import { readClaims, readInventory, readPod, readStickyObjects } from './inventory-read.ts';
import { claimHolder, type ClaimHolder } from '../store/claim-record.ts';
import type { PodInfo } from './inventory.ts';
import { formatIpReport, ipReport } from './ip-report.ts';

const usage = `Usage: hereabouts ip <address> [--network NAME] [flags]
  Who holds the address: the pool(s), the pod (namespace/name, uid, phase, node), the container and interface,
  since when (when recorded), and its OverlappingRangeIPReservation, and whether pool and reservation agree. An
  address a Cluster API IPAddressClaim holds names the claim, its Cluster and its IPAddress; one inside a
  PrefixClaim's block names the claim and the block. A claim that is gone is said to be (the controller releases
  its address). A sticky address names its binding (StatefulSet/<set>/<ordinal> or VirtualMachine/<vm>) and its
  namespace, whether the StatefulSet (and replica pod) or the VirtualMachine (or its instance) still holds it, read
  live, and until when it is kept ("parked": no pod holds it now).
  Exit 0 when some pool holds it, 1 when none does.
  --network NAME      only the pools and reservations of this network_name ("" for those without one)
${COMMON_HELP}`;

export function runIp(argv: readonly string[]): Promise<number> {
  const command = {
    name: 'ip',
    usage,
    flags: { ...COMMON_FLAGS, network: { type: 'string' } },
    positionals: ['<address>'],
  } as const;
  return runSubcommand(command, argv, async ({ values, positionals }) => {
    const flags = commonFlagsOf(values);
    const ip = addressArgument(positionals[0] ?? '');
    const network = values.network;
    const api = await connect(flags);
    try {
      const inv = await readInventory(api, { pods: false });
      const first = ipReport(inv, ip, network);
      // Only the pods the holders name are read, live.
      const pods = new Map<string, PodInfo>();
      for (const ref of new Set(first.holders.map((h) => h.podRef).filter((r) => r.includes('/')))) {
        const pod = await readPod(api, ref);
        if (pod !== null) pods.set(ref, pod);
      }
      // And the claims they name.
      const holders = first.holders.map((h) => claimHolder(h)).filter((h): h is ClaimHolder => h !== undefined);
      const claims = holders.length === 0 ? undefined : await readClaims(api, holders);
      // And what the bindings of sticky addresses depend on: the StatefulSet and its replica pod, or the VM and VMI.
      const bound = first.holders.flatMap((h) => (h.binding === undefined ? [] : [h.binding]));
      const sticky = bound.length === 0 ? undefined : await readStickyObjects(api, bound);
      const report = ipReport(
        { ...inv, pods, ...(claims === undefined ? {} : { claims }), ...(sticky === undefined ? {} : { sticky }) },
        ip,
        network,
      );
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatIpReport(report, inv.nowMs));
      return report.holders.length > 0 ? EXIT.ok : EXIT.problem;
    } finally {
      api.close();
    }
  });
}

/** The <address> argument; a UsageError naming it when it is not an IP address. */
export function addressArgument(text: string): IPAddress {
  const ip = tryParseIP(text);
  if (ip === undefined) throw new UsageError(`<address> ${JSON.stringify(text)} is not an IPv4 or IPv6 address`);
  return ip;
}
