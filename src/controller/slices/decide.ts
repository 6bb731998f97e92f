// The NodeSlicePool a network should have, decided from the object as it is now: spec from the agreed NADs, owner
// references to those NADs in the pool's namespace (an owner reference cannot cross namespaces: the garbage
// collector would delete the pool), a slice for every live node, conditions, and the slices' lifecycle
// (slice-lifecycle.ts). Re-slicing (a new range or slice size) starts the assignment over, as Whereabouts does, but
// the old slices drain first: new slices are cut only from space no draining slice overlaps.
import { formatCidr } from '../../ip/cidr.ts';
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import { conditionsMatch, withConditions, type Condition } from '../runtime/conditions.ts';
import type { DecideObject } from '../../store/kubernetes/writer.ts';
import { assignSlices, type SliceDecision, type SliceEntry } from './assign.ts';
import { advanceLifecycle, type Lifecycle } from './lifecycle.ts';
import type { SliceSpec } from './spec.ts';
import { cidrOrUndefined } from '../pools/view.ts';
import { nodeSlicePoolView, type NadView } from '../runtime/views.ts';

export const NAD_API_VERSION = 'k8s.cni.cncf.io/v1';

export interface SlicePlan {
  readonly spec: SliceSpec;
  readonly namespace: string;
  /** The NADs of this network in the pool's namespace: its owners. */
  readonly owners: readonly NadView[];
  readonly liveNodes: readonly string[];
  /** Whether a draining slice's IPPool was confirmed empty against the API (after the drain grace). */
  readonly canFree: (entry: SliceEntry) => boolean;
  /** False once the API server was seen dropping status.conditions (a CRD without them): then they are not compared. */
  readonly conditionsPersist: boolean;
}

/** What the last call of the decide function chose (read after the write). */
export interface SliceChoice {
  decision?: SliceDecision;
  lifecycle?: Lifecycle;
  resliced: boolean;
  sentConditions: boolean;
}

export function sameSlicing(spec: SliceSpec, range: string, sliceSize: string): boolean {
  const cidr = cidrOrUndefined(range);
  return (
    cidr !== undefined &&
    formatCidr(cidr) === formatCidr(spec.range) &&
    sliceSize.replace(/^\//, '') === String(spec.sliceSize)
  );
}

export function sliceConditions(starved: readonly string[], spec: SliceSpec): Condition[] {
  return [
    { type: 'ConfigConflict', status: 'False', reason: 'NetworkAttachmentDefinitionsAgree', message: '' },
    starved.length === 0
      ? { type: 'SlicesExhausted', status: 'False', reason: 'SlicesAvailable', message: '' }
      : { type: 'SlicesExhausted', status: 'True', reason: 'NoFreeSlice', message: noFreeSliceMessage(starved, spec) },
  ];
}

export function noFreeSliceMessage(starved: readonly string[], spec: SliceSpec): string {
  return `no free /${spec.sliceSize} slice of ${formatCidr(spec.range)} for node(s) ${starved.join(', ')}`;
}

function ownerReferences(plan: SlicePlan, current: unknown): unknown[] {
  const existing = Array.isArray(current) ? (current as Array<Record<string, unknown>>) : [];
  const others = existing.filter((o) => o['kind'] !== 'NetworkAttachmentDefinition');
  const ours = [...plan.owners]
    .sort((a, b) => (a.uid < b.uid ? -1 : 1))
    .map((nad) => ({ apiVersion: NAD_API_VERSION, kind: 'NetworkAttachmentDefinition', name: nad.name, uid: nad.uid }));
  return [...others, ...ours];
}

export function decideNodeSlicePool(plan: SlicePlan, choice: SliceChoice): DecideObject {
  return (current) => {
    const view = current === undefined ? undefined : nodeSlicePoolView(current);
    const same = view !== undefined && sameSlicing(plan.spec, view.range, view.sliceSize);
    const resliced = view !== undefined && !same;
    const lifecycle = advanceLifecycle(view, { resliced, liveNodes: plan.liveNodes, confirmedEmpty: plan.canFree });
    const decision = assignSlices(
      plan.spec.range,
      plan.spec.sliceSize,
      lifecycle.entries,
      plan.liveNodes,
      lifecycle.blocked,
    );
    choice.decision = decision;
    choice.lifecycle = lifecycle;
    choice.resliced = resliced;
    const wanted = sliceConditions(decision.starved, plan.spec);
    const status = (current?.['status'] ?? {}) as Record<string, unknown>;
    const metadata = (current?.['metadata'] ?? {}) as Record<string, unknown>;
    const owners = ownerReferences(plan, metadata['ownerReferences']);
    const ownersSame =
      view !== undefined && JSON.stringify(view.ownerUids) === JSON.stringify(plan.owners.map((o) => o.uid).sort());
    const conditionsSame = !plan.conditionsPersist || conditionsMatch(status['conditions'], wanted);
    const moved = lifecycle.drained.length + lifecycle.released.length + lifecycle.restored.length > 0;
    if (same && decision.assigned.length === 0 && !moved && ownersSame && conditionsSame) return undefined;
    choice.sentConditions = plan.conditionsPersist;
    return {
      ...(current ?? { apiVersion: API_VERSION, kind: 'NodeSlicePool' }),
      metadata: { ...metadata, name: plan.spec.network, namespace: plan.namespace, ownerReferences: owners },
      spec: { range: formatCidr(plan.spec.range), sliceSize: `/${plan.spec.sliceSize}` },
      status: {
        ...status,
        allocations: decision.entries,
        draining: lifecycle.draining,
        ...(plan.conditionsPersist ? { conditions: withConditions(status['conditions'], wanted, new Date()) } : {}),
      },
    };
  };
}
