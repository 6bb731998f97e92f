// `hereabouts status`: every pool at a glance, from a workstation or a node. Reads only: a LIST each of IPPools and
// NodeSlicePools in the pools' namespace, and one paginated LIST of pods (only the controller's view of each is
// kept) for orphans, counted with the controller's own rule and default flags.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiClient, statusText } from '../store/kubernetes/api.ts';
import { loadEndpoint } from '../store/kubernetes/kubeconfig.ts';
import { listAll } from '../store/kubernetes/list.ts';
import { objectPath } from '../store/kubernetes/resources.ts';
import { podView, type PodView } from '../controller/pod-view.ts';
import { buildReport, formatTable, type LivePods } from './status-report.ts';

const usage = `Usage: hereabouts status [--kubeconfig FILE] [--namespace NS] [-o table|json]
  Lists every IPPool (range, capacity, used, free, orphaned allocations, the node owning a node slice) and the
  NodeSlicePools. Orphans are what the controller (default flags) would release now. Needs get/list on the
  whereabouts.cni.cncf.io objects and list on pods (without it, orphans are shown as "?").
  --kubeconfig FILE   default: $KUBECONFIG (its first file), else ~/.kube/config
  -n, --namespace NS  where the pools live; default: the kubeconfig context's namespace, else kube-system
  -o, --output FMT    table (default) or json (counts that can exceed 2^53 are decimal strings)
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
  const fromEnv = process.env['KUBECONFIG']?.split(':').find((p) => p !== '');
  const endpoint = await loadEndpoint(values.kubeconfig ?? fromEnv ?? join(homedir(), '.kube', 'config'));
  const api = new ApiClient(endpoint, { timeoutMs: 30_000 });
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

/** Every pod's view by "namespace/name", page by page (a page's objects are dropped once read); undefined on 403. */
async function livePods(api: ApiClient): Promise<LivePods> {
  const pods = new Map<string, PodView>();
  let token = '';
  do {
    const res = await api.send({ method: 'GET', path: `/api/v1/pods?limit=500${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}` });
    if (res.status === 403) return undefined;
    if (res.status !== 200) throw new Error(`list pods: ${statusText(res)}`);
    const body = res.body as { items?: unknown[]; metadata?: { continue?: string } };
    for (const item of body.items ?? []) {
      const meta = (item as { metadata?: { namespace?: string; name?: string } }).metadata ?? {};
      const view = podView(item);
      if (view !== undefined) pods.set(`${meta.namespace ?? ''}/${meta.name ?? ''}`, view);
    }
    token = body.metadata?.continue ?? '';
  } while (token !== '');
  return pods;
}
