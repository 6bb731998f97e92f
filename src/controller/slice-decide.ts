// The NodeSlicePool a network should have, decided from the object as it is now: spec from the agreed NADs, owner
// references to those NADs in the pool's namespace (an owner reference cannot cross namespaces: the garbage
// collector would delete the pool), a slice for every live node, conditions. Re-slicing (a new range or slice size)
// starts the assignment over, as Whereabouts does.
import { formatCidr } from '../ip/cidr.ts';
import { API_VERSION } from '../store/kubernetes/resources.ts';
import { conditionsMatch, withConditions, type Condition } from './conditions.ts';
import type { DecideObject } from './slice-write.ts';
import { assignSlices, type SliceDecision, type SliceEntry } from './slice-assign.ts';
import type { SliceSpec } from './slice-spec.ts';
import { cidrOrUndefined } from './pool-view.ts';
import { nodeSlicePoolView, type NadView } from './views.ts';

export const NAD_API_VERSION = 'k8s.cni.cncf.io/v1';

export interface SlicePlan {
  readonly spec: SliceSpec;
  readonly namespace: string;
  /** The NADs of this network in the pool's namespace: its owners. */
  readonly owners: readonly NadView[];
  readonly liveNodes: readonly string[];
  /** Whether a departed node's slice may be freed (its slice pool holds no live allocation). */
  readonly canFree: (entry: SliceEntry) => boolean;
  /** False once the API server was seen dropping status.conditions (a CRD without them): then they are not compared. */
  readonly conditionsPersist: boolean;
}

/** What the last call of the decide function chose (read after the write). */
export interface SliceChoice {
  decision?: SliceDecision;
  resliced: boolean;
  sentConditions: boolean;
}

export function sameSlicing(spec: SliceSpec, range: string, sliceSize: string): boolean {
  const cidr = cidrOrUndefined(range);
  return cidr !== undefined && formatCidr(cidr) === formatCidr(spec.range) && sliceSize.replace(/^\//, '') === String(spec.sliceSize);
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
    const decision = assignSlices(plan.spec.range, plan.spec.sliceSize, same ? view.entries : [], plan.liveNodes, plan.canFree);
    choice.decision = decision;
    choice.resliced = view !== undefined && !same;
    const wanted = sliceConditions(decision.starved, plan.spec);
    const status = (current?.['status'] ?? {}) as Record<string, unknown>;
    const metadata = (current?.['metadata'] ?? {}) as Record<string, unknown>;
    const owners = ownerReferences(plan, metadata['ownerReferences']);
    const ownersSame = view !== undefined && JSON.stringify(view.ownerUids) === JSON.stringify(plan.owners.map((o) => o.uid).sort());
    const conditionsSame = !plan.conditionsPersist || conditionsMatch(status['conditions'], wanted);
    if (same && decision.assigned.length === 0 && decision.freed.length === 0 && ownersSame && conditionsSame) return undefined;
    choice.sentConditions = plan.conditionsPersist;
    return {
      ...(current ?? { apiVersion: API_VERSION, kind: 'NodeSlicePool' }),
      metadata: { ...metadata, name: plan.spec.network, namespace: plan.namespace, ownerReferences: owners },
      spec: { range: formatCidr(plan.spec.range), sliceSize: `/${plan.spec.sliceSize}` },
      status: {
        ...status,
        allocations: decision.entries,
        ...(plan.conditionsPersist ? { conditions: withConditions(status['conditions'], wanted, new Date()) } : {}),
      },
    };
  };
}
