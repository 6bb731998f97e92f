// `hereabouts preflight`: before a switch from Whereabouts (or any time), every NetworkAttachmentDefinition whose IPAM
// is hereabouts or whereabouts, judged by the plugin's own config parser: served as Whereabouts did, served with
// differences (keys ignored, the gateway kept back), or refused at every ADD (with the fix). Reads only: one
// paginated LIST of NADs, in every namespace or in --namespace.
import { listAll } from '../kube/list.ts';
import { EXIT, runSubcommand } from './command.ts';
import { COMMON_FLAGS, COMMON_HELP, commonFlagsOf, connect, toJson } from './connect.ts';
import { formatPreflight, preflightReport } from './preflight-report.ts';

const usage = `Usage: hereabouts preflight [flags]
  Lists every NetworkAttachmentDefinition whose IPAM is hereabouts or whereabouts (directly or in a conflist) and
  says whether hereabouts serves it as Whereabouts did, what it ignores or does otherwise, and what it refuses, in
  the plugin's own words, with the fix. Judged as on a node of the shipped DaemonSet (its flat file, the default
  allowed directories). Run it before switching from Whereabouts. Needs list on
  network-attachment-definitions.k8s.cni.cncf.io.
  Exit 0 when no NAD would be refused, 1 when one would (or the NADs cannot be listed).
${namespaceMeans(COMMON_HELP, '-n, --namespace NS  only the NADs of this namespace; default: every namespace')}`;

/** The common flags' help with another meaning of -n (here it selects NADs, not the pools' namespace). */
function namespaceMeans(help: string, line: string): string {
  const entries = help.split(/\n(?= {2}-)/);
  return entries.map((e) => (e.startsWith('  -n, --namespace') ? `  ${line}` : e)).join('\n');
}

export function runPreflight(argv: readonly string[]): Promise<number> {
  return runSubcommand({ name: 'preflight', usage, flags: COMMON_FLAGS }, argv, async ({ values }) => {
    const flags = commonFlagsOf(values);
    const api = await connect(flags);
    try {
      const base = '/apis/k8s.cni.cncf.io/v1';
      const path =
        flags.namespace === undefined
          ? `${base}/network-attachment-definitions`
          : `${base}/namespaces/${encodeURIComponent(flags.namespace)}/network-attachment-definitions`;
      const report = preflightReport(await listAll(api, path), flags.namespace);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatPreflight(report));
      return report.counts.refuses === 0 ? EXIT.ok : EXIT.problem;
    } finally {
      api.close();
    }
  });
}
