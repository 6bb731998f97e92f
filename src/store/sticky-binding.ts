// A sticky address's binding (docs/sticky.md): the workload identity a pool record is bound to, so that a re-created
// StatefulSet replica or a KubeVirt VM's next virt-launcher pod gets the address back, on any node. It is kept in the
// record's `binding` field, in the namespace of its podref: "StatefulSet/<name>/<ordinal>" or "VirtualMachine/<name>".
import type { AllocationRecord } from './store.ts';

/** The pod annotation (set through a StatefulSet's pod template, or on a VM's) that opts a workload in or out. */
export const STICKY_ANNOTATION = 'hereabouts.cni.cncf.io/sticky';
/** The StatefulSet annotation that lists the addresses of its ordinals, per network (docs/sticky.md). */
export const STICKY_ADDRESSES_ANNOTATION = 'hereabouts.cni.cncf.io/sticky-addresses';
/**
 * The container id of a record the controller made from a StatefulSet's address list before its replica ran: no
 * container has it, so no DEL or GC names it; the replica's first ADD takes it over.
 */
export const PREBOUND_ID = 'hereabouts-sticky:prebound';

/**
 * A sticky network with node_slice_size keeps its bound addresses in one slice of the network, the sticky area, which
 * the controller assigns to this name as if it were a node: every node's sticky ADDs allocate there, so a re-created
 * replica finds its binding wherever it lands (docs/sticky.md). A node of this name would share the area.
 */
export const STICKY_AREA_NODE = 'hereabouts-sticky';

export type Binding =
  | { readonly kind: 'StatefulSet'; readonly name: string; readonly ordinal: number }
  | { readonly kind: 'VirtualMachine'; readonly name: string };

export function formatBinding(binding: Binding): string {
  return binding.kind === 'StatefulSet'
    ? `StatefulSet/${binding.name}/${binding.ordinal}`
    : `VirtualMachine/${binding.name}`;
}

/** Undefined for a value this version does not know (its record stays held, and is never handed to a pod). */
export function parseBinding(value: string): Binding | undefined {
  const parts = value.split('/');
  if (
    parts[0] === 'StatefulSet' &&
    parts.length === 3 &&
    parts[1] !== '' &&
    /^(0|[1-9]\d{0,8})$/.test(parts[2] ?? '')
  ) {
    return { kind: 'StatefulSet', name: parts[1] ?? '', ordinal: Number(parts[2]) };
  }
  if (parts[0] === 'VirtualMachine' && parts.length === 2 && parts[1] !== '') {
    return { kind: 'VirtualMachine', name: parts[1] ?? '' };
  }
  return undefined;
}

/** The namespace of a podref ("" when it has none). */
export function namespaceOfPodRef(podRef: string): string {
  const slash = podRef.indexOf('/');
  return slash < 0 ? '' : podRef.slice(0, slash);
}

/** "namespace binding": one identity, whatever pod and container hold it now. */
export function bindingKey(record: AllocationRecord): string | undefined {
  return record.binding === undefined ? undefined : `${namespaceOfPodRef(record.podRef)} ${record.binding}`;
}

/** A record made from a StatefulSet's address list that no replica took over yet: any interface may take it. */
export function isPrebound(record: AllocationRecord): boolean {
  return record.binding !== undefined && record.containerId === PREBOUND_ID;
}

/** "web-0" of StatefulSet "web", ordinal 0: the pod a binding's replica is. */
export function replicaName(binding: Extract<Binding, { kind: 'StatefulSet' }>): string {
  return `${binding.name}-${binding.ordinal}`;
}
