// The NodeSlicePool as the slice pass reads it: the cached view as the object the decide functions take, and what
// a written object shows of the CRD it was stored by (one that prunes status.draining or status.conditions).
import { MANAGED_BY, type NodeSlicePoolView } from '../runtime/views.ts';

/** The cached view as the object the decide functions read (metadata, spec, status as far as they look). */
export function cachedObject(view: NodeSlicePoolView): Record<string, unknown> {
  const conditions = [...view.conditions].map(([type, joined]) => {
    const [status, reason, ...message] = joined.split('|');
    return { type, status, reason, message: message.join('|') };
  });
  return {
    metadata: {
      name: view.name,
      namespace: view.namespace,
      uid: view.uid,
      labels: view.managed ? { [MANAGED_BY.key]: MANAGED_BY.value } : {},
      ownerReferences: view.ownerUids.map((uid) => ({ kind: 'NetworkAttachmentDefinition', uid })),
    },
    spec: { range: view.range, sliceSize: view.sliceSize },
    status: { allocations: view.entries, draining: view.draining, conditions },
  };
}

export function hasDraining(written: unknown): boolean {
  return Array.isArray((written as { status?: { draining?: unknown } } | undefined)?.status?.draining);
}

export function hasConditions(written: unknown): boolean {
  const status = (written as { status?: { conditions?: unknown } } | undefined)?.status;
  return Array.isArray(status?.conditions) && status.conditions.length > 0;
}
