// `hereabouts status`: every pool at a glance, from a workstation or a node. Reads only: a LIST each of IPPools and
// NodeSlicePools in the pools' namespace, and one paginated LIST of pods (only the controller's view of each is
// kept) for orphans, counted with the controller's own rule and default flags.
import { listAll } from '../kube/list.ts';
import { objectPath } from '../store/kubernetes/objects.ts';
import type { PodView } from '../controller/orphans/pod-view.ts';
import { EXIT, runSubcommand } from './command.ts';
import { COMMON_FLAGS, COMMON_HELP, commonFlagsOf, connect, toJson } from './connect.ts';
import { listPods } from './inventory-read.ts';
import { buildReport, formatTable } from './status-report.ts';

const usage = `Usage: hereabouts status [flags]
  Lists every IPPool (range, capacity, used, of those the addresses node agents hold warm, Cluster API
  IPAddressClaims hold, the PrefixClaims held and the sticky addresses bound to StatefulSet replicas or VMs, free,
  orphaned allocations, the node owning a node slice) and the NodeSlicePools. Orphans are what the controller
  (default flags) would release now; a sticky address is never one (\`hereabouts check\` says when its binding is
  released). Needs get/list on the
  whereabouts.cni.cncf.io objects and list on pods (without it, orphans are shown as "?").
${COMMON_HELP}`;

export function runStatus(argv: readonly string[]): Promise<number> {
  return runSubcommand({ name: 'status', usage, flags: COMMON_FLAGS }, argv, async ({ values }) => {
    const flags = commonFlagsOf(values);
    const api = await connect(flags);
    try {
      const [ippools, slices, pods] = await Promise.all([
        listAll(api, objectPath(api.namespace, 'ippools')),
        listAll(api, objectPath(api.namespace, 'nodeslicepools')),
        listPods(api),
      ]);
      const views =
        pods === undefined ? undefined : new Map<string, PodView>([...pods].map(([ref, info]) => [ref, info.view]));
      const report = buildReport(api.namespace, ippools, slices, views);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatTable(report));
      return EXIT.ok;
    } finally {
      api.close();
    }
  });
}
