// Sticky addresses (docs/sticky.md) in the operator commands (pure): whether a bound record's binding still holds,
// judged with the controller's own rule (controller/sticky/verdict.ts bindingReleaseReason) on the StatefulSet, the
// replica pod, the VirtualMachine and its VirtualMachineInstance as read live (bindings-read.ts), and that said in
// plain words. An object that could not be read leaves the verdict unknown unless the rule decides without it.
import {
  bindingReleaseReason,
  UNREAD_STATEFUL_SET,
  type StatefulSetView,
  type StickyReleaseReason,
  type StickyWorld,
} from '../controller/sticky/verdict.ts';
import {
  bindingKey,
  isPrebound,
  namespaceOfPodRef,
  parseBinding,
  replicaName,
  type Binding,
} from '../store/sticky-binding.ts';
import type { AllocationRecord } from '../store/store.ts';

/**
 * What was read of the objects bindings depend on, each keyed "namespace/name": a StatefulSet (null: none), whether
 * a pod, a VirtualMachine, a VirtualMachineInstance exists. A key absent: not read (not allowed, or not asked for).
 */
export interface StickyObjects {
  readonly statefulSets: ReadonlyMap<string, StatefulSetView | null>;
  readonly pods: ReadonlyMap<string, boolean>;
  readonly virtualMachines: ReadonlyMap<string, boolean>;
  readonly virtualMachineInstances: ReadonlyMap<string, boolean>;
}

export const NO_STICKY_OBJECTS: StickyObjects = {
  statefulSets: new Map(),
  pods: new Map(),
  virtualMachines: new Map(),
  virtualMachineInstances: new Map(),
};

/** holds: the controller keeps the address; released: it releases it after --sticky-grace; unknown: not all read. */
export type BindingState = 'holds' | 'released' | 'unknown';

export interface BindingVerdict {
  readonly state: BindingState;
  /** The controller's reason, once released: statefulset-gone, scaled-down, vm-gone. */
  readonly reason?: StickyReleaseReason;
  /** What the objects show: "StatefulSet web has 1 replica (ordinal 0); pod web-0 is gone". */
  readonly seen: string;
  /** The rule in plain words: "pod web-0 is gone and StatefulSet web no longer includes ordinal 0 (...)". */
  readonly keptUntil: string;
}

/** The controller's flag and its default: the CLI cannot know the value the controller runs with. */
export const STICKY_GRACE = '--sticky-grace (default 5m)';

/** "namespace/name" of a binding's objects. */
const keyIn = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The verdict on one record's binding (the record must have one: `record.binding`). */
export function bindingVerdict(namespace: string, binding: string, objects: StickyObjects): BindingVerdict {
  const parsed = parseBinding(binding);
  if (parsed === undefined)
    return {
      state: 'holds',
      seen: `this version cannot read the binding ${JSON.stringify(binding)}`,
      keptUntil: 'a version that reads it releases it (this one never does)',
    };
  if (namespace === '')
    return {
      state: 'holds',
      seen: 'the record names no namespace',
      keptUntil: 'released by hand (never by the controller)',
    };
  // The rule on the world as read, once with what could not be read present, once with it absent: when both agree,
  // the unread objects do not matter.
  const kept = bindingReleaseReason(namespace, binding, worldOf(objects, true));
  const gone = bindingReleaseReason(namespace, binding, worldOf(objects, false));
  const state: BindingState =
    kept === undefined && gone === undefined ? 'holds' : kept !== undefined ? 'released' : 'unknown';
  return {
    state,
    ...(state === 'released' && kept !== undefined ? { reason: kept } : {}),
    seen: seenOf(namespace, parsed, objects),
    keptUntil: ruleOf(namespace, parsed, objects),
  };
}

/** The world the controller's rule reads: what could not be read counts as present (`unread`) or absent. */
function worldOf(objects: StickyObjects, unread: boolean): StickyWorld {
  const exists = (map: ReadonlyMap<string, boolean>, key: string): boolean => map.get(key) ?? unread;
  return {
    statefulSet: (key) => {
      const set = objects.statefulSets.get(key);
      if (set !== undefined) return set ?? undefined;
      return unread ? UNREAD_STATEFUL_SET : undefined;
    },
    pod: (key) => exists(objects.pods, key),
    virtualMachine: (key) => exists(objects.virtualMachines, key),
    virtualMachineInstance: (key) => exists(objects.virtualMachineInstances, key),
  };
}

const existence = (value: boolean | undefined): string =>
  value === undefined ? 'could not be read' : value ? 'exists' : 'is gone';

function seenOf(namespace: string, binding: Binding, objects: StickyObjects): string {
  if (binding.kind === 'VirtualMachine') {
    const key = keyIn(namespace, binding.name);
    return (
      `VirtualMachine ${binding.name} ${existence(objects.virtualMachines.get(key))}, ` +
      `its VirtualMachineInstance ${existence(objects.virtualMachineInstances.get(key))}`
    );
  }
  const pod = replicaName(binding);
  const set = objects.statefulSets.get(keyIn(namespace, binding.name));
  const setText =
    set === undefined
      ? `StatefulSet ${binding.name} could not be read`
      : set === null
        ? `StatefulSet ${binding.name} is gone`
        : `StatefulSet ${binding.name} has ${set.replicas} replica${set.replicas === 1 ? '' : 's'}${ordinals(set)}`;
  return `${setText}; pod ${pod} ${existence(objects.pods.get(keyIn(namespace, pod)))}`;
}

/** " (ordinals 0-2)", " (ordinal 3)", "" for none. */
function ordinals(set: StatefulSetView): string {
  if (set.replicas <= 0) return '';
  const last = set.start + set.replicas - 1;
  return last === set.start ? ` (ordinal ${set.start})` : ` (ordinals ${set.start}-${last})`;
}

function ruleOf(namespace: string, binding: Binding, objects: StickyObjects): string {
  if (binding.kind === 'VirtualMachine')
    return `VirtualMachine ${binding.name} and its VirtualMachineInstance are both deleted`;
  const set = objects.statefulSets.get(keyIn(namespace, binding.name));
  const start = set?.start ?? 0;
  const need = binding.ordinal - start + 1;
  const scaled =
    need <= 0
      ? `its ordinals start above ${binding.ordinal}`
      : need === 1
        ? 'scaled to 0 replicas'
        : `scaled below ${need} replicas`;
  return `pod ${replicaName(binding)} is gone and StatefulSet ${binding.name} no longer includes ordinal ${binding.ordinal} (deleted, or ${scaled})`;
}

/** "namespace binding" keys of the bound records among `records`, with the namespace and binding of each. */
export function boundRecords(
  records: Iterable<AllocationRecord>,
): Map<string, { readonly namespace: string; readonly binding: string }> {
  const out = new Map<string, { namespace: string; binding: string }>();
  for (const record of records) {
    const key = bindingKey(record);
    if (key === undefined || record.binding === undefined) continue;
    out.set(key, { namespace: namespaceOfPodRef(record.podRef), binding: record.binding });
  }
  return out;
}

/** in-use: the record's podref pod exists; parked: it does not (the address waits for its workload); unknown. */
export type BoundPod = 'in-use' | 'parked' | 'unknown';

export function boundPod(podState: string): BoundPod {
  return podState === 'unknown' ? 'unknown' : podState === 'gone' ? 'parked' : 'in-use';
}

/** What the commands show of a bound record: its binding, its namespace, its pod now, and the verdict. */
export interface BindingDetail extends BindingVerdict {
  readonly binding: string;
  /** The namespace of the record's podref, where the binding's workload lives. */
  readonly namespace: string;
  readonly pod: BoundPod;
  /** Made by the controller from the StatefulSet's sticky-addresses annotation; no replica took it over yet. */
  readonly prebound?: true;
}

/**
 * The binding of a record (undefined: it has none), given its pod's state (ip-report.ts podState) and what was read
 * of the binding's objects (none read: the verdict is unknown, unless the binding is one this version never releases).
 */
export function bindingDetail(
  record: AllocationRecord,
  podState: string,
  objects: StickyObjects | undefined,
): BindingDetail | undefined {
  if (record.binding === undefined) return undefined;
  const namespace = namespaceOfPodRef(record.podRef);
  return {
    binding: record.binding,
    namespace,
    pod: boundPod(podState),
    ...(isPrebound(record) ? { prebound: true as const } : {}),
    ...bindingVerdict(namespace, record.binding, objects ?? NO_STICKY_OBJECTS),
  };
}
