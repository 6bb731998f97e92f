// The few facts about a pod that orphan cleanup needs, stripped from the full object (memory stays bounded
// with tens of thousands of pods).
export interface PodView {
  readonly uid: string;
  readonly phase: string;
  readonly createdAtMs: number;
  readonly terminating: boolean;
  /** DisruptionTarget=True: the taint manager (or an eviction) is taking the pod away. */
  readonly disrupted: boolean;
  /** IPs in the Multus network-status annotation; undefined when the pod has none. */
  readonly networkStatusIPs?: ReadonlySet<string>;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export const NETWORK_STATUS = 'k8s.v1.cni.cncf.io/network-status';

/** "namespace/name" and its view, or undefined for an object that is not a pod. */
export function podView(item: unknown): [string, PodView] | undefined {
  const meta = obj(obj(item)['metadata']);
  const status = obj(obj(item)['status']);
  const name = meta['name'];
  const namespace = meta['namespace'];
  if (typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as unknown[]) : [];
  const networkStatusIPs = parseNetworkStatus(obj(meta['annotations'])[NETWORK_STATUS]);
  return [
    `${namespace}/${name}`,
    {
      uid: typeof meta['uid'] === 'string' ? meta['uid'] : '',
      phase: typeof status['phase'] === 'string' ? status['phase'] : 'Unknown',
      createdAtMs: Date.parse(String(meta['creationTimestamp'] ?? '')) || 0,
      terminating: meta['deletionTimestamp'] !== undefined && meta['deletionTimestamp'] !== null,
      disrupted: conditions.some((c) => obj(c)['type'] === 'DisruptionTarget' && obj(c)['status'] === 'True'),
      ...(networkStatusIPs === undefined ? {} : { networkStatusIPs }),
    },
  ];
}

/** The IPs listed in a network-status annotation; undefined when absent or unreadable (then it proves nothing). */
export function parseNetworkStatus(annotation: unknown): Set<string> | undefined {
  if (typeof annotation !== 'string') return undefined;
  let list: unknown;
  try {
    list = JSON.parse(annotation);
  } catch {
    return undefined;
  }
  if (!Array.isArray(list)) return undefined;
  const ips = new Set<string>();
  for (const entry of list) for (const ip of Array.isArray(obj(entry)['ips']) ? (obj(entry)['ips'] as unknown[]) : []) if (typeof ip === 'string') ips.add(ip);
  return ips;
}
