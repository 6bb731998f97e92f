// Which identity a pod's addresses bind to on a sticky network (docs/sticky.md): pure, from what the cluster says
// of the pod (store.ts PodFacts). A StatefulSet replica binds as "StatefulSet/<set>/<ordinal>", a KubeVirt
// virt-launcher pod as "VirtualMachine/<vm>"; any other pod is an ordinary attachment.
//
// The owner is the pod's controller reference, which whoever creates the pod writes: the Kubernetes store keeps it in
// the facts only once the object it names was read under the uid it names (store/kubernetes/pod-facts.ts
// verifyOwner, whose list of kinds must cover every owner this binds). Here it is taken as the cluster's word.
import type { StickyMode } from '../config/types.ts';
import { formatBinding } from '../store/sticky-binding.ts';
import type { PodFacts } from '../store/store.ts';

/** The binding of pod `podName` (undefined: not sticky), by the network's mode and the pod's own annotation. */
export function bindingOf(mode: StickyMode, podName: string, facts: PodFacts): string | undefined {
  if (facts.sticky === 'false') return undefined;
  if (mode === 'annotated' && facts.sticky !== 'true') return undefined;
  const owner = facts.owner;
  if (owner === undefined) return undefined;
  const group = owner.apiVersion.split('/')[0];
  if (owner.kind === 'StatefulSet' && group === 'apps') {
    const ordinal = ordinalOf(podName, owner.name, facts.podIndex);
    return ordinal === undefined ? undefined : formatBinding({ kind: 'StatefulSet', name: owner.name, ordinal });
  }
  // A virt-launcher pod is owned by its VirtualMachineInstance, named as the VirtualMachine; during a live migration
  // two of them run at once and share the binding: one record, one address, the VM's.
  if (owner.kind === 'VirtualMachineInstance' && group === 'kubevirt.io') {
    return formatBinding({ kind: 'VirtualMachine', name: owner.name });
  }
  return undefined;
}

/**
 * A replica is named "<set>-<ordinal>" (the StatefulSet controller's rule); a pod that claims the set as owner but is
 * not so named is no replica and binds nothing. The pod-index label, when present, must agree.
 */
function ordinalOf(podName: string, set: string, podIndex: string | undefined): number | undefined {
  const prefix = `${set}-`;
  if (!podName.startsWith(prefix)) return undefined;
  const text = podName.slice(prefix.length);
  if (!/^(0|[1-9]\d{0,8})$/.test(text)) return undefined;
  if (podIndex !== undefined && podIndex !== text) return undefined;
  return Number(text);
}
