// The few facts about a pod that orphan cleanup needs, stripped from the full object (memory stays bounded
// with tens of thousands of pods).
import { formatIP, tryParseIP } from '../ip/address.ts';

export interface PodView {
  /** The UID CNI was given: metadata.uid, or for a mirror pod the static pod's (its config.mirror annotation). */
  readonly uid: string;
  readonly phase: string;
  readonly createdAtMs: number;
  readonly terminating: boolean;
  /** DisruptionTarget=True: the taint manager (or an eviction) is taking the pod away. */
  readonly disrupted: boolean;
  /** IPs in the Multus network-status annotation (canonical text); undefined when the pod has none. */
  readonly networkStatusIPs?: ReadonlySet<string>;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export const NETWORK_STATUS = 'k8s.v1.cni.cncf.io/network-status';
/** On a mirror pod: the UID of the static pod it mirrors, which is what the kubelet passes to CNI. */
const MIRROR = 'kubernetes.io/config.mirror';

/** The view of a pod object; undefined for something that is not one. */
export function podView(item: unknown): PodView | undefined {
  const meta = obj(obj(item)['metadata']);
  const status = obj(obj(item)['status']);
  if (typeof meta['name'] !== 'string' || typeof meta['namespace'] !== 'string') return undefined;
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as unknown[]) : [];
  const annotations = obj(meta['annotations']);
  const networkStatusIPs = parseNetworkStatus(annotations[NETWORK_STATUS]);
  const mirrorOf = annotations[MIRROR];
  return {
    uid: typeof mirrorOf === 'string' && mirrorOf !== '' ? mirrorOf : typeof meta['uid'] === 'string' ? meta['uid'] : '',
    phase: typeof status['phase'] === 'string' ? status['phase'] : 'Unknown',
    createdAtMs: Date.parse(String(meta['creationTimestamp'] ?? '')) || 0,
    terminating: meta['deletionTimestamp'] !== undefined && meta['deletionTimestamp'] !== null,
    disrupted: conditions.some((c) => obj(c)['type'] === 'DisruptionTarget' && obj(c)['status'] === 'True'),
    ...(networkStatusIPs === undefined ? {} : { networkStatusIPs }),
  };
}

/**
 * The IPs listed in a network-status annotation, in canonical text (Multus prints Go's spelling); undefined when
 * absent or unreadable (then it proves nothing).
 */
export function parseNetworkStatus(annotation: unknown): Set<string> | undefined {
  if (typeof annotation !== 'string') return undefined;
  let list: unknown;
  try {
    list = JSON.parse(annotation);
  } catch {
    return undefined; // not Multus' JSON: it proves nothing either way
  }
  if (!Array.isArray(list)) return undefined;
  const ips = new Set<string>();
  for (const entry of list) {
    const listed = obj(entry)['ips'];
    for (const text of Array.isArray(listed) ? listed : []) {
      const ip = typeof text === 'string' ? tryParseIP(text.replace(/\/\d+$/, '')) : undefined;
      if (ip !== undefined) ips.add(formatIP(ip));
    }
  }
  return ips;
}
