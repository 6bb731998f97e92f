// Who an allocation belongs to: CNI identifies an attachment by container id and interface name; Kubernetes
// pods keep their podRef across sandbox restarts, which is what makes ADD idempotent per pod.
import { isPrebound, namespaceOfPodRef } from '../store/sticky-binding.ts';
import type { AllocationRecord, Allocations } from '../store/store.ts';

export interface AttachmentId {
  readonly containerId: string;
  readonly ifname: string;
}

export interface Attachment extends AttachmentId {
  /** "namespace/name"; "" when the runtime gave no pod. */
  readonly podRef: string;
  readonly podUid?: string;
  /**
   * On a sticky network, the identity the pod's addresses bind to (store/sticky-binding.ts), resolved from its owner
   * (ipam/sticky.ts). Absent: an ordinary attachment, which never takes a bound record over.
   */
  readonly binding?: string;
}

export function isSameAttachment(record: AllocationRecord, id: AttachmentId): boolean {
  return record.containerId === id.containerId && record.ifname === id.ifname;
}

/**
 * Same pod and interface (when there is a pod), or same container and interface. A bound record (a sticky address)
 * belongs to its binding in its namespace, on its interface (any, while pre-bound), whatever pod holds it: only an
 * attachment with that binding owns it. An attachment with a binding also owns the unbound records of its pod, made
 * before the network was sticky: they are bound when it takes them over.
 */
export function isSameOwner(record: AllocationRecord, attachment: Attachment): boolean {
  if (record.binding !== undefined) {
    return (
      record.binding === attachment.binding &&
      namespaceOfPodRef(record.podRef) === namespaceOfPodRef(attachment.podRef) &&
      (record.ifname === attachment.ifname || isPrebound(record))
    );
  }
  if (record.ifname !== attachment.ifname) return false;
  const samePod = attachment.podRef !== '' && record.podRef === attachment.podRef;
  return samePod || record.containerId === attachment.containerId;
}

/**
 * Every address this pod+ifname (or container+ifname) holds in the pool: lowest first, except that a sticky
 * attachment's bound records come first, one declared for it (pre-bound) before any other.
 */
export function heldBy(current: Allocations, attachment: Attachment): bigint[] {
  const owned: Array<[bigint, number]> = [];
  for (const [address, record] of current) {
    if (!isSameOwner(record, attachment)) continue;
    owned.push([address, record.binding === undefined ? 2 : isPrebound(record) ? 0 : 1]);
  }
  owned.sort(([a, ra], [b, rb]) => ra - rb || (a < b ? -1 : a > b ? 1 : 0));
  return owned.map(([address]) => address);
}

/** The record of a new allocation (or of a container taking over its pod's address), stamped with `createdAt`. */
export function recordFor(attachment: Attachment, createdAt: string): AllocationRecord {
  return {
    containerId: attachment.containerId,
    ifname: attachment.ifname,
    podRef: attachment.podRef,
    ...(attachment.podUid === undefined ? {} : { podUid: attachment.podUid }),
    createdAt,
    ...(attachment.binding === undefined ? {} : { binding: attachment.binding }),
  };
}

/** "ns/pod c1 (eth0)" for messages. */
export function describeHolder(record: AllocationRecord): string {
  return `${record.podRef || 'container'} ${record.containerId} (${record.ifname})`;
}

export function attachmentKey(id: AttachmentId): string {
  return `${id.containerId}\u0000${id.ifname}`;
}
