// The stripped views of OverlappingRangeIPReservations, NodeSlicePools, NetworkAttachmentDefinitions and Nodes:
// only what the cleanup and the slice assignment read. (Pods: pod-view.ts; IPPools: pool-view.ts.)
import { claimHolder } from '../../store/claim-record.ts';
import { warmHolder } from '../../store/warm-record.ts';
import { messageOf } from '../../errors.ts';
import type { DrainingEntry, SliceEntry } from '../slices/assign.ts';
import { networkNamesOf, rangePoolNamesOf, sliceSpecOf, type SliceSpec } from '../slices/spec.ts';
import { recordOf } from '../../record.ts';
import { TAKEN_AT_ANNOTATION } from '../../store/kubernetes/objects.ts';

type Obj = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export interface ObjectRef {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
}

function refOf(meta: Obj): ObjectRef {
  return {
    name: str(meta['name']),
    namespace: str(meta['namespace']),
    uid: str(meta['uid']),
    resourceVersion: str(meta['resourceVersion']),
  };
}

export interface ReservationView extends ObjectRef {
  readonly podRef: string;
  /** It names a node agent's warm record (DESIGN §11), not a pod. */
  readonly warm?: boolean;
  /** It names a claim of DESIGN §12 (an IPAddressClaim's address), not a pod. */
  readonly claim?: boolean;
  readonly createdAtMs: number;
  /**
   * When a writer last took it (created it, or adopted it for a retry): the latest of its creation, its taken-at
   * annotation and its last update (managedFields, the API server's clock). Absent: at its creation.
   */
  readonly takenAtMs?: number;
}

export function reservationView(object: unknown): ReservationView {
  const meta = recordOf(recordOf(object)['metadata']);
  const createdAtMs = Date.parse(str(meta['creationTimestamp'])) || 0;
  const updates = Array.isArray(meta['managedFields']) ? meta['managedFields'] : [];
  const spec = recordOf(recordOf(object)['spec']);
  return {
    ...refOf(meta),
    podRef: str(spec['podref']),
    warm:
      warmHolder({
        containerId: str(spec['containerid']),
        ifname: str(spec['ifname']),
        podRef: str(spec['podref']),
      }) !== undefined,
    claim:
      claimHolder({
        containerId: str(spec['containerid']),
        ifname: str(spec['ifname']),
        podRef: str(spec['podref']),
      }) !== undefined,
    createdAtMs,
    takenAtMs: Math.max(
      createdAtMs,
      Date.parse(str(recordOf(meta['annotations'])[TAKEN_AT_ANNOTATION])) || 0,
      ...updates.map((entry) => Date.parse(str(recordOf(entry)['time'])) || 0),
    ),
  };
}

export interface NodeSlicePoolView extends ObjectRef {
  /** metadata.generation: the version a retired slice pool records (0 when absent). */
  readonly generation: number;
  readonly range: string;
  readonly sliceSize: string;
  readonly entries: readonly SliceEntry[];
  /** status.draining: slices that left their node and may still hold addresses (absent in Whereabouts' objects). */
  readonly draining: readonly DrainingEntry[];
  /** type -> "status|reason|message" of its conditions, to write only what changed. */
  readonly conditions: ReadonlyMap<string, string>;
  /** UIDs of the NetworkAttachmentDefinitions among its owners, sorted (an earlier version wrote them). */
  readonly ownerUids: readonly string[];
  /** Labelled as the controller's (MANAGED_BY): the controller deletes it once its network is gone and empty. */
  readonly managed: boolean;
}

/** The label that marks a NodeSlicePool the controller keeps: `app.kubernetes.io/managed-by`. */
export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'hereabouts-controller' } as const;

const DRAIN_REASONS: ReadonlySet<string> = new Set(['NodeLeft', 'Resliced', 'Unlisted', 'Overlapped']);

export function entriesOf(status: unknown): SliceEntry[] {
  const list = recordOf(status)['allocations'];
  return (Array.isArray(list) ? list : []).map((e) => ({
    nodeName: str(recordOf(e)['nodeName']),
    sliceRange: str(recordOf(e)['sliceRange']),
  }));
}

export function drainingOf(status: unknown): DrainingEntry[] {
  const list = recordOf(status)['draining'];
  return (Array.isArray(list) ? list : []).map((e) => ({
    nodeName: str(recordOf(e)['nodeName']),
    sliceRange: str(recordOf(e)['sliceRange']),
    reason: reasonOf(recordOf(e)['reason']),
  }));
}

function reasonOf(value: unknown): DrainingEntry['reason'] {
  return typeof value === 'string' && DRAIN_REASONS.has(value) ? (value as DrainingEntry['reason']) : 'Resliced';
}

export function nodeSlicePoolView(object: unknown): NodeSlicePoolView {
  const meta = recordOf(recordOf(object)['metadata']);
  const spec = recordOf(recordOf(object)['spec']);
  const status = recordOf(recordOf(object)['status']);
  const conditions = new Map<string, string>();
  for (const c of Array.isArray(status['conditions']) ? status['conditions'] : []) {
    conditions.set(
      str(recordOf(c)['type']),
      `${str(recordOf(c)['status'])}|${str(recordOf(c)['reason'])}|${str(recordOf(c)['message'])}`,
    );
  }
  const owners = Array.isArray(meta['ownerReferences']) ? meta['ownerReferences'] : [];
  return {
    ...refOf(meta),
    generation: typeof meta['generation'] === 'number' ? meta['generation'] : 0,
    range: str(spec['range']),
    sliceSize:
      typeof spec['sliceSize'] === 'string' || typeof spec['sliceSize'] === 'number' ? String(spec['sliceSize']) : '',
    entries: entriesOf(status),
    draining: drainingOf(status),
    conditions,
    ownerUids: owners
      .filter((o) => recordOf(o)['kind'] === 'NetworkAttachmentDefinition')
      .map((o) => str(recordOf(o)['uid']))
      .sort(),
    managed: recordOf(meta['labels'])[MANAGED_BY.key] === MANAGED_BY.value,
  };
}

export interface NadView extends ObjectRef {
  readonly networkNames: readonly string[];
  /** The IPPools of its ranges (not node slices). */
  readonly pools: readonly string[];
  readonly slice?: SliceSpec;
  /** Why its node-slice request cannot be read. */
  readonly problem?: string;
}

/** Only NADs with a hereabouts/whereabouts IPAM section are kept. */
export function nadView(object: unknown): NadView | undefined {
  const meta = recordOf(recordOf(object)['metadata']);
  const networkNames = networkNamesOf(object);
  const pools = rangePoolNamesOf(object);
  let slice: SliceSpec | undefined;
  try {
    slice = sliceSpecOf(object);
  } catch (err) {
    if (!(err instanceof TypeError || err instanceof RangeError)) throw err;
    return { ...refOf(meta), networkNames, pools, problem: messageOf(err) };
  }
  if (slice === undefined && networkNames.length === 0 && !mentionsUs(object)) return undefined;
  return { ...refOf(meta), networkNames, pools, ...(slice === undefined ? {} : { slice }) };
}

function mentionsUs(object: unknown): boolean {
  const config = str(recordOf(recordOf(object)['spec'])['config']);
  return config.includes('"hereabouts"') || config.includes('"whereabouts"');
}

export interface NodeView {
  readonly uid: string;
}

export function nodeView(object: unknown): NodeView {
  return { uid: str(recordOf(recordOf(object)['metadata'])['uid']) };
}
