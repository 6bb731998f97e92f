// Whether a sticky address's binding (store/sticky-binding.ts) still holds, judged on what the cluster shows: pure.
// A StatefulSet replica's binding holds while its pod exists, or while the set exists and the ordinal is within
// [ordinals.start, ordinals.start + replicas); a VM's while its VirtualMachine or VirtualMachineInstance exists (a
// virt-launcher pod outlives neither: the VMI's finalizer waits for its pods). Anything else keeps the address: a
// binding this version cannot read is never released by it.
import { parseBinding, replicaName, STICKY_ADDRESSES_ANNOTATION } from '../../store/sticky-binding.ts';

export interface StatefulSetView {
  readonly uid: string;
  /** spec.replicas (1 when unset). */
  readonly replicas: number;
  /** spec.ordinals.start (0 when unset). */
  readonly start: number;
  /** The hereabouts.cni.cncf.io/sticky-addresses annotation, as written (address-lists.ts reads it). */
  readonly addresses?: string;
}

/** A StatefulSet that could not be read: it includes every ordinal, so no binding is released on its account. */
export const UNREAD_STATEFUL_SET: StatefulSetView = { uid: '', replicas: Number.MAX_SAFE_INTEGER, start: 0 };

/** What the verdict reads, each keyed "namespace/name". */
export interface StickyWorld {
  readonly statefulSet: (key: string) => StatefulSetView | undefined;
  readonly pod: (key: string) => boolean;
  readonly virtualMachine: (key: string) => boolean;
  readonly virtualMachineInstance: (key: string) => boolean;
}

export type StickyReleaseReason = 'statefulset-gone' | 'scaled-down' | 'vm-gone';

/** Undefined: the binding holds. */
export function bindingReleaseReason(
  namespace: string,
  binding: string,
  world: StickyWorld,
): StickyReleaseReason | undefined {
  const parsed = parseBinding(binding);
  if (parsed === undefined || namespace === '') return undefined;
  if (parsed.kind === 'VirtualMachine') {
    const key = `${namespace}/${parsed.name}`;
    return world.virtualMachine(key) || world.virtualMachineInstance(key) ? undefined : 'vm-gone';
  }
  if (world.pod(`${namespace}/${replicaName(parsed)}`)) return undefined;
  const set = world.statefulSet(`${namespace}/${parsed.name}`);
  if (set === undefined) return 'statefulset-gone';
  return parsed.ordinal >= set.start && parsed.ordinal < set.start + set.replicas ? undefined : 'scaled-down';
}

/** The view kept of a StatefulSet (undefined: not one). */
export function statefulSetView(object: unknown): StatefulSetView | undefined {
  const o = object as {
    metadata?: { uid?: unknown; annotations?: Record<string, unknown> };
    spec?: { replicas?: unknown; ordinals?: { start?: unknown } };
  } | null;
  const uid = o?.metadata?.uid;
  if (typeof uid !== 'string') return undefined;
  const replicas = o?.spec?.replicas;
  const start = o?.spec?.ordinals?.start;
  const addresses = o?.metadata?.annotations?.[STICKY_ADDRESSES_ANNOTATION];
  return {
    uid,
    replicas: typeof replicas === 'number' && Number.isInteger(replicas) && replicas >= 0 ? replicas : 1,
    start: typeof start === 'number' && Number.isInteger(start) && start >= 0 ? start : 0,
    ...(typeof addresses === 'string' ? { addresses } : {}),
  };
}
