// The raw writes on whereabouts.cni.cncf.io/v1alpha1 objects, one function each. PRIVATE to src/store/kubernetes
// (a test fails on any import from outside): every write of an IPPool, a reservation or a NodeSlicePool goes through
// the write path (commit.ts, reservations.ts, writer.ts), which keeps the ownership rules of DESIGN §9. Expected
// answers (404, 409) are results; anything else throws ApiStatusError.
import type { ApiClient, ApiResponse } from '../../kube/api.ts';
import { ApiStatusError } from '../../kube/errors.ts';
import { objectPath, type ObjectVersion, type Plural } from './objects.ts';

function ok(res: ApiResponse): boolean {
  return res.status >= 200 && res.status < 300;
}

export type CreateResult = { readonly kind: 'created'; readonly object: unknown } | { readonly kind: 'exists' };

export async function createObject(
  api: ApiClient,
  plural: Plural,
  object: { metadata: { name: string } },
): Promise<CreateResult> {
  const res = await api.send({ method: 'POST', path: objectPath(api.namespace, plural), body: object });
  if (res.status === 409) return { kind: 'exists' };
  if (!ok(res)) throw new ApiStatusError(`create ${plural}/${object.metadata.name}`, res);
  return { kind: 'created', object: res.body };
}

export type PatchResult =
  { readonly kind: 'patched'; readonly object: unknown } | { readonly kind: 'conflict' } | { readonly kind: 'gone' };

/** JSON merge patch; a metadata.resourceVersion in the patch makes it conditional (409 when the object moved on). */
export async function mergePatch(api: ApiClient, plural: Plural, name: string, patch: unknown): Promise<PatchResult> {
  const res = await sendPatch(api, plural, name, patch, 'application/merge-patch+json');
  if (res.status === 409) return { kind: 'conflict' };
  if (res.status === 404) return { kind: 'gone' };
  if (!ok(res)) throw new ApiStatusError(`patch ${plural}/${name}`, res);
  return { kind: 'patched', object: res.body };
}

/**
 * RFC 6902 JSON patch. The API server applies it to the object as stored and re-applies it itself when its own
 * storage write conflicts, so it is only as conditional as its `test` operations: a patch that must not land on a
 * newer version tests `/metadata/resourceVersion` first (and is then refused cheaply, before the rest is applied).
 * A failed test, or an operation that does not apply to the object, is 422 ('test-failed').
 */
export async function jsonPatch(
  api: ApiClient,
  plural: Plural,
  name: string,
  operations: readonly JsonPatchOperation[],
): Promise<PatchResult | { readonly kind: 'test-failed' }> {
  const res = await sendPatch(api, plural, name, operations, 'application/json-patch+json');
  if (res.status === 422) return { kind: 'test-failed' };
  if (res.status === 409) return { kind: 'conflict' };
  if (res.status === 404) return { kind: 'gone' };
  if (!ok(res)) throw new ApiStatusError(`patch ${plural}/${name}`, res);
  return { kind: 'patched', object: res.body };
}

export type JsonPatchOperation =
  | { readonly op: 'test'; readonly path: string; readonly value: unknown }
  | { readonly op: 'add'; readonly path: string; readonly value: unknown };

function sendPatch(
  api: ApiClient,
  plural: Plural,
  name: string,
  body: unknown,
  contentType: string,
): Promise<ApiResponse> {
  return api.send({ method: 'PATCH', path: objectPath(api.namespace, plural, name), body, contentType });
}

/** PUT of a whole object; its metadata.resourceVersion makes it conditional (409 when the object moved on). */
export async function replaceObject(
  api: ApiClient,
  plural: Plural,
  name: string,
  object: unknown,
): Promise<PatchResult> {
  const res = await api.send({ method: 'PUT', path: objectPath(api.namespace, plural, name), body: object });
  if (res.status === 409) return { kind: 'conflict' };
  if (res.status === 404) return { kind: 'gone' };
  if (!ok(res)) throw new ApiStatusError(`update ${plural}/${name}`, res);
  return { kind: 'patched', object: res.body };
}

export type DeleteResult = 'deleted' | 'gone' | 'conflict';

/**
 * Deletes the object only if it is still the version judged (DeleteOptions preconditions on uid and
 * resourceVersion): 'conflict' when it changed or was re-created since, 'gone' when it no longer exists.
 */
export async function deleteExactly(
  api: ApiClient,
  plural: Plural,
  name: string,
  version: ObjectVersion,
  options: { timeoutMs?: number } = {},
): Promise<DeleteResult> {
  const res = await api.send(
    {
      method: 'DELETE',
      path: objectPath(api.namespace, plural, name),
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        preconditions: { uid: version.uid, resourceVersion: version.resourceVersion },
      },
    },
    options,
  );
  if (res.status === 404) return 'gone';
  if (res.status === 409) return 'conflict';
  if (!ok(res)) throw new ApiStatusError(`delete ${plural}/${name}`, res);
  return 'deleted';
}
