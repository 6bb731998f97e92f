// The NodeSlicePool a network should have, decided from the object as it is now (or from nothing, when it does not
// exist) and from the network's slice pools in use (rebuild.ts): spec from the NAD the network follows, a slice for
// every live node, conditions, and the slices' lifecycle (lifecycle.ts). The pools are the truth about which space
// is in use: a NodeSlicePool that was deleted and re-created gives every node back the slice its pool is in, and
// never hands out a range a pool in use covers. Re-slicing (a new range or slice size) starts the assignment over, as
// Whereabouts does, but the old slices drain first: new slices are cut only from space no draining slice overlaps.
// No owner reference ties the object to the NADs (the garbage collector would delete it with its last NAD while its
// pools still hold addresses); ones an earlier version wrote are removed.
import { formatCidr } from '../../ip/cidr.ts';
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import { conditionsMatch, withConditions, type Condition } from '../runtime/conditions.ts';
import type { DecideObject } from '../../store/kubernetes/writer.ts';
import { assignSlices, type SliceDecision, type SliceEntry } from './assign.ts';
import type { HeldSlice } from './held.ts';
import { advanceLifecycle, type Lifecycle } from './lifecycle.ts';
import { rebuildFromPools, type Rebuilt } from './rebuild.ts';
import type { Offender, SliceSpec } from './spec.ts';
import { cidrOrUndefined } from '../pools/view.ts';
import { MANAGED_BY, nodeSlicePoolView } from '../runtime/views.ts';

export const NAD_API_VERSION = 'k8s.cni.cncf.io/v1';

export interface SlicePlan {
  readonly spec: SliceSpec;
  readonly namespace: string;
  readonly liveNodes: readonly string[];
  /** The network's slice pools in use (held.ts): every one of them ends up listed. */
  readonly held: readonly HeldSlice[];
  /** NADs of the network that ask for another slicing: named in the ConfigConflict condition. */
  readonly offenders: readonly Offender[];
  /** Whether a draining slice's IPPool was confirmed empty against the API (after the drain grace). */
  readonly canFree: (entry: SliceEntry) => boolean;
  /** False once the API server was seen dropping status.conditions (a CRD without them): then they are not compared. */
  readonly conditionsPersist: boolean;
  /** False once the API server was seen dropping status.draining (Whereabouts' CRD): then it is not compared. */
  readonly drainingPersists: boolean;
}

/** What the last call of the decide function chose (read after the write). */
export interface SliceChoice {
  decision?: SliceDecision;
  lifecycle?: Lifecycle;
  rebuilt?: Rebuilt;
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

export function sliceConditions(
  starved: readonly string[],
  spec: SliceSpec,
  offenders: readonly Offender[] = [],
): Condition[] {
  return [
    offenders.length === 0
      ? { type: 'ConfigConflict', status: 'False', reason: 'NetworkAttachmentDefinitionsAgree', message: '' }
      : {
          type: 'ConfigConflict',
          status: 'True',
          reason: 'NetworkAttachmentDefinitionsDisagree',
          message: offenders.map((o) => o.message).join('; '),
        },
    starved.length === 0
      ? { type: 'SlicesExhausted', status: 'False', reason: 'SlicesAvailable', message: '' }
      : { type: 'SlicesExhausted', status: 'True', reason: 'NoFreeSlice', message: noFreeSliceMessage(starved, spec) },
  ];
}

export function noFreeSliceMessage(starved: readonly string[], spec: SliceSpec): string {
  return `no free /${spec.sliceSize} slice of ${formatCidr(spec.range)} for node(s) ${starved.join(', ')}`;
}

/** The object's metadata without owner references to NADs, labelled as the controller's. */
function ourMetadata(plan: SlicePlan, metadata: Record<string, unknown>): Record<string, unknown> {
  const existing = Array.isArray(metadata['ownerReferences'])
    ? (metadata['ownerReferences'] as Array<Record<string, unknown>>)
    : [];
  const others = existing.filter((o) => o['kind'] !== 'NetworkAttachmentDefinition');
  const labels = { ...((metadata['labels'] ?? {}) as Record<string, string>), [MANAGED_BY.key]: MANAGED_BY.value };
  const rest = { ...metadata };
  delete rest['ownerReferences'];
  return {
    ...rest,
    name: plan.spec.network,
    namespace: plan.namespace,
    labels,
    ...(others.length === 0 ? {} : { ownerReferences: others }),
  };
}

export function decideNodeSlicePool(plan: SlicePlan, choice: SliceChoice): DecideObject {
  return (current) => {
    const view = current === undefined ? undefined : nodeSlicePoolView(current);
    const same = view !== undefined && sameSlicing(plan.spec, view.range, view.sliceSize);
    const resliced = view !== undefined && !same;
    const rebuilt = rebuildFromPools(view ?? { entries: [], draining: [] }, plan.held, {
      range: plan.spec.range,
      sliceSize: plan.spec.sliceSize,
      resliced,
    });
    const lifecycle = advanceLifecycle(rebuilt, {
      resliced,
      liveNodes: plan.liveNodes,
      confirmedEmpty: plan.canFree,
    });
    const decision = assignSlices(
      plan.spec.range,
      plan.spec.sliceSize,
      lifecycle.entries,
      plan.liveNodes,
      lifecycle.blocked,
    );
    Object.assign(choice, { decision, lifecycle, rebuilt, resliced });
    const wanted = sliceConditions(decision.starved, plan.spec, plan.offenders);
    const status = (current?.['status'] ?? {}) as Record<string, unknown>;
    const metadata = (current?.['metadata'] ?? {}) as Record<string, unknown>;
    const unchanged =
      view !== undefined &&
      same &&
      view.ownerUids.length === 0 &&
      view.managed &&
      JSON.stringify(view.entries) === JSON.stringify(decision.entries) &&
      (!plan.drainingPersists || JSON.stringify(view.draining) === JSON.stringify(lifecycle.draining)) &&
      (!plan.conditionsPersist || conditionsMatch(status['conditions'], wanted));
    if (unchanged) return undefined;
    choice.sentConditions = plan.conditionsPersist;
    return {
      ...(current ?? { apiVersion: API_VERSION, kind: 'NodeSlicePool' }),
      metadata: ourMetadata(plan, metadata),
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
