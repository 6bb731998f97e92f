// Who an allocation belongs to: CNI identifies an attachment by container id and interface name; Kubernetes
// pods keep their podRef across sandbox restarts, which is what makes ADD idempotent per pod.
import type { AllocationRecord, Allocations } from '../store/store.ts';

export interface AttachmentId {
  readonly containerId: string;
  readonly ifname: string;
}

export interface Attachment extends AttachmentId {
  /** "namespace/name"; "" when the runtime gave no pod. */
  readonly podRef: string;
  readonly podUid?: string;
}

export function isSameAttachment(record: AllocationRecord, id: AttachmentId): boolean {
  return record.containerId === id.containerId && record.ifname === id.ifname;
}

/** Same pod and interface (when there is a pod), or same container and interface. */
export function isSameOwner(record: AllocationRecord, attachment: Attachment): boolean {
  if (record.ifname !== attachment.ifname) return false;
  const samePod = attachment.podRef !== '' && record.podRef === attachment.podRef;
  return samePod || record.containerId === attachment.containerId;
}

/** Every address this pod+ifname (or container+ifname) holds in the pool, lowest first. */
export function heldBy(current: Allocations, attachment: Attachment): bigint[] {
  const owned: bigint[] = [];
  for (const [address, record] of current) if (isSameOwner(record, attachment)) owned.push(address);
  return owned.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The record of a new allocation (or of a container taking over its pod's address), stamped with `createdAt`. */
export function recordFor(attachment: Attachment, createdAt: string): AllocationRecord {
  return {
    containerId: attachment.containerId,
    ifname: attachment.ifname,
    podRef: attachment.podRef,
    ...(attachment.podUid === undefined ? {} : { podUid: attachment.podUid }),
    createdAt,
  };
}

/** "ns/pod c1 (eth0)" for messages. */
export function describeHolder(record: AllocationRecord): string {
  return `${record.podRef || 'container'} ${record.containerId} (${record.ifname})`;
}

export function attachmentKey(id: AttachmentId): string {
  return `${id.containerId}\u0000${id.ifname}`;
}
