// Writing a NodeSlicePool (private to the store: the controller reaches it through writer.ts): read it, let the caller decide the new object from what it read, create it or PUT it
// back conditional on the resourceVersion read; a 409 reads again and decides again (the one retry loop,
// retryOnConflict). NodeSlicePool has no status subresource (Whereabouts writes status.allocations with plain
// updates), so spec and status go together.
import type { ApiClient } from '../../kube/api.ts';
import { ApiStatusError } from '../../kube/errors.ts';
import { getObject, objectPath } from './objects.ts';
import { CONFLICT, retryOnConflict } from '../../kube/retry.ts';
import { isRecord } from '../../record.ts';

export type WriteOutcome = 'created' | 'updated' | 'unchanged' | 'conflict' | 'not-leading';

/** The new object given the current one (undefined: it does not exist), or undefined when nothing changes. */
export type DecideObject = (current: Record<string, unknown> | undefined) => Record<string, unknown> | undefined;

export type SliceWrite = { outcome: WriteOutcome; written?: unknown };

export async function writeNodeSlicePool(
  api: ApiClient,
  name: string,
  decide: DecideObject,
  options: { leading: () => boolean; attempts?: number },
): Promise<SliceWrite> {
  const result = await retryOnConflict<SliceWrite>(
    async () => {
      const fetched = await getObject(api, 'nodeslicepools', name);
      const current = isRecord(fetched) ? fetched : undefined;
      const body = decide(current);
      if (body === undefined) return { outcome: 'unchanged' };
      if (!options.leading()) return { outcome: 'not-leading' };
      const res =
        current === undefined
          ? await api.send({ method: 'POST', path: objectPath(api.namespace, 'nodeslicepools'), body })
          : await api.send({ method: 'PUT', path: objectPath(api.namespace, 'nodeslicepools', name), body });
      if (res.status === 201) return { outcome: 'created', written: res.body };
      if (res.status === 200) return { outcome: 'updated', written: res.body };
      // 409: changed since read (or created meanwhile); 404: deleted since read.
      if (res.status === 409 || res.status === 404) return CONFLICT;
      throw new ApiStatusError(`${current === undefined ? 'create' : 'update'} nodeslicepools/${name}`, res);
    },
    { attempts: options.attempts ?? 3, proceed: options.leading },
  );
  if (result.kind === 'done') return result.value;
  return { outcome: result.kind === 'stopped' ? 'not-leading' : 'conflict' };
}
