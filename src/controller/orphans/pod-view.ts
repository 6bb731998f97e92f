// The few facts about a pod that orphan cleanup needs, stripped from the full object (memory stays bounded
// with tens of thousands of pods). The view is built compactly: every field in one object literal (no properties
// added by spreads), the network-status addresses in one string rather than a Set, and the strings that repeat
// across pods (phase, disruption reason) shared.
import { formatIP, tryParseIP } from '../../ip/address.ts';
import { recordOf } from '../../record.ts';

export interface PodView {
  /** The UID CNI was given: metadata.uid, or for a mirror pod the static pod's (its config.mirror annotation). */
  readonly uid: string;
  readonly phase: string;
  readonly createdAtMs: number;
  readonly terminating: boolean;
  /** metadata.deletionTimestamp: the end of the pod's grace period (set ahead by its length). */
  readonly deletionAtMs?: number;
  /**
   * The reason of DisruptionTarget=True (DeletionByTaintManager, EvictionByEvictionAPI, PreemptionByScheduler,
   * TerminationByKubelet, …); absent when the condition is not True.
   */
  readonly disruption?: string;
  /** Some container (init, app or ephemeral) is running by the pod's status (or a Running pod lists none). */
  readonly containersRunning: boolean;
  /** PodReadyToStartContainers (PodHasNetwork before 1.28) is False: the kubelet has torn the sandbox down. */
  readonly sandboxGone: boolean;
  /** The latest container finish or condition transition: for a terminal pod, about when it became terminal. */
  readonly lastChangeMs: number;
  /** IPs in the Multus network-status annotation (canonical text); undefined when the pod has none. */
  readonly networkStatusIPs?: AddressList;
  /** The pod runs a Whereabouts component (its daemon, its ip-reconciler): warm sets stay off (DESIGN §11). */
  readonly whereabouts: boolean;
}

/** What the rules ask of a set of addresses (a ReadonlySet<string> is one). */
export interface AddressList {
  has(ip: string): boolean;
}

/** A pod shows one or two addresses: they are kept as one string (" a b "), far smaller than a Set of strings. */
class SmallAddressList implements AddressList {
  readonly #text: string;
  constructor(ips: Iterable<string>) {
    this.#text = ['', ...ips, ''].join(' '); // one flat string, not a tree of concatenations
  }
  has(ip: string): boolean {
    return ip !== '' && !ip.includes(' ') && this.#text.includes(` ${ip} `);
  }
}

type Obj = Record<string, unknown>;
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(recordOf) : []);
/** RFC 3339 text, or epoch milliseconds (pod-protobuf.ts); 0 when absent or unreadable. */
const time = (v: unknown): number =>
  typeof v === 'string' ? Date.parse(v) || 0 : typeof v === 'number' && Number.isFinite(v) ? v : 0;

export const NETWORK_STATUS = 'k8s.v1.cni.cncf.io/network-status';
/** On a mirror pod: the UID of the static pod it mirrors, which is what the kubelet passes to CNI. */
const MIRROR = 'kubernetes.io/config.mirror';
/** The annotations podView reads: a reader that keeps only some (pod-protobuf.ts) keeps these. */
export const POD_VIEW_ANNOTATIONS: readonly string[] = [NETWORK_STATUS, MIRROR];
const SANDBOX_CONDITIONS = ['PodReadyToStartContainers', 'PodHasNetwork'];

/** The view of a pod object; undefined for something that is not one. */
export function podView(item: unknown): PodView | undefined {
  const meta = recordOf(recordOf(item)['metadata']);
  const status = recordOf(recordOf(item)['status']);
  if (typeof meta['name'] !== 'string' || typeof meta['namespace'] !== 'string') return undefined;
  const conditions = list(status['conditions']);
  const containers = [
    ...list(status['initContainerStatuses']),
    ...list(status['containerStatuses']),
    ...list(status['ephemeralContainerStatuses']),
  ];
  const annotations = recordOf(meta['annotations']);
  const networkStatusIPs = parseNetworkStatus(annotations[NETWORK_STATUS]);
  const mirrorOf = annotations[MIRROR];
  const disruption = conditions.find((c) => c['type'] === 'DisruptionTarget' && c['status'] === 'True');
  const deletionAtMs = time(meta['deletionTimestamp']);
  const changes = [
    ...containers.map((c) => time(recordOf(recordOf(c['state'])['terminated'])['finishedAt'])),
    ...conditions.map((c) => time(c['lastTransitionTime'])),
  ];
  const reason = disruption?.['reason'];
  return {
    uid:
      typeof mirrorOf === 'string' && mirrorOf !== '' ? mirrorOf : typeof meta['uid'] === 'string' ? meta['uid'] : '',
    phase: shared(typeof status['phase'] === 'string' ? status['phase'] : 'Unknown'),
    createdAtMs: time(meta['creationTimestamp']),
    terminating: meta['deletionTimestamp'] !== undefined && meta['deletionTimestamp'] !== null,
    deletionAtMs: deletionAtMs === 0 ? undefined : deletionAtMs,
    disruption: disruption === undefined ? undefined : shared(typeof reason === 'string' ? reason : ''),
    // A Running pod that reports no container at all is taken as running: nothing says its network is unused.
    containersRunning:
      containers.some((c) => recordOf(c['state'])['running'] !== undefined) ||
      (status['phase'] === 'Running' && containers.length === 0),
    sandboxGone: conditions.some((c) => SANDBOX_CONDITIONS.includes(String(c['type'])) && c['status'] === 'False'),
    lastChangeMs: Math.max(0, ...changes),
    networkStatusIPs: networkStatusIPs === undefined ? undefined : new SmallAddressList(networkStatusIPs),
    whereabouts: runsWhereabouts(recordOf(recordOf(item)['spec'])),
  };
}

/** Programs of Whereabouts that free allocations whose pod they cannot find (its reconciler, in or out of its daemon). */
const WHEREABOUTS_PROGRAMS = new Set(['ip-control-loop', 'ip-reconciler', 'whereabouts']);

/**
 * Whether a pod spec runs a Whereabouts component: an image whose name says whereabouts (never hereabouts' own), or
 * a container that starts one of its programs, whatever the image.
 */
export function runsWhereabouts(spec: Record<string, unknown>): boolean {
  return [...list(spec['initContainers']), ...list(spec['containers'])].some((c) => {
    const image = typeof c['image'] === 'string' ? c['image'].toLowerCase() : '';
    const name =
      image
        .replace(/[@:][^/]*$/, '')
        .split('/')
        .pop() ?? '';
    if (name.includes('whereabouts')) return true;
    const argv = [c['command'], c['args']].flatMap((v): unknown[] => (Array.isArray(v) ? (v as unknown[]) : []));
    return argv.some((arg) => typeof arg === 'string' && arg.split(/\s+/).some(isWhereaboutsProgram));
  });
}

const isWhereaboutsProgram = (word: string): boolean => WHEREABOUTS_PROGRAMS.has(word.split('/').pop() ?? '');

/** One copy of each phase and reason string for all pods (a handful of values; the table is capped all the same). */
const SHARED = new Map<string, string>();
function shared(text: string): string {
  const known = SHARED.get(text);
  if (known !== undefined) return known;
  if (SHARED.size < 256) SHARED.set(text, text);
  return text;
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
    const listed = recordOf(entry)['ips'];
    for (const text of Array.isArray(listed) ? listed : []) {
      const ip = typeof text === 'string' ? tryParseIP(text.replace(/\/\d+$/, '')) : undefined;
      if (ip !== undefined) ips.add(formatIP(ip));
    }
  }
  return ips;
}
