// `hereabouts status`: every pool at a glance, from a workstation or a node. Reads only: one LIST each of IPPools
// and NodeSlicePools in the pools' namespace, and one paginated LIST of pods (metadata only) to count orphans.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiClient } from '../store/kubernetes/api.ts';
import { listAll } from '../store/kubernetes/list.ts';
import { loadEndpoint } from '../store/kubernetes/kubeconfig.ts';
import { objectPath } from '../store/kubernetes/resources.ts';
import { buildReport, formatTable, type LivePod } from './status-report.ts';

const usage = `Usage: hereabouts status [--kubeconfig FILE] [--namespace NS] [-o table|json]
  Lists every IPPool (range, capacity, used, free, orphaned allocations, owning node for node slices) and the
  NodeSlicePools. Kubeconfig: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; namespace: --namespace, else
  the kubeconfig context's, else kube-system.
`;

export async function runStatus(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      output: { type: 'string', short: 'o', default: 'table' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  if (values.output !== 'table' && values.output !== 'json') {
    process.stderr.write(`hereabouts status: -o ${JSON.stringify(values.output)} must be table or json\n`);
    return 2;
  }
  const path = values.kubeconfig ?? process.env['KUBECONFIG']?.split(':')[0] ?? join(homedir(), '.kube', 'config');
  const endpoint = await loadEndpoint(path);
  const api = new ApiClient(endpoint, { timeoutMs: 15_000 });
  try {
    const namespace = values.namespace ?? endpoint.namespace;
    const [ippools, slices, pods] = await Promise.all([
      listAll(api, objectPath(namespace, 'ippools')),
      listAll(api, objectPath(namespace, 'nodeslicepools')),
      livePods(api),
    ]);
    const report = buildReport(namespace, ippools, slices, pods);
    process.stdout.write(values.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report));
    return 0;
  } finally {
    api.close();
  }
}

async function livePods(api: ApiClient): Promise<Map<string, LivePod>> {
  const pods = new Map<string, LivePod>();
  for (const item of await listAll(api, '/api/v1/pods')) {
    const meta = (item as { metadata?: { namespace?: string; name?: string; uid?: string } }).metadata ?? {};
    pods.set(`${meta.namespace ?? ''}/${meta.name ?? ''}`, { uid: meta.uid ?? '' });
  }
  return pods;
}
