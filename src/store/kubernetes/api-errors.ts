// How API failures become the store's error kinds. Anything that may pass with a retry (unreachable, timeouts, 5xx,
// 429) is Unavailable; 401 and 403 are Forbidden, which the CNI edge prints as "try again later" too: a kube-apiserver
// that is starting answers 403 until its RBAC caches are filled (and 401 until its authenticators are), exactly as it
// answers a missing RoleBinding, and a retry is harmless. A refusal that a retry cannot fix names what to repair.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { ApiStatusError, isTransient } from '../../kube/errors.ts';

/** Converts an error of the Kubernetes store into a HereaboutsError; HereaboutsErrors pass through. */
export function toStoreError(err: unknown, context: string): unknown {
  if (err instanceof HereaboutsError) return err;
  if (isTransient(err)) {
    const status = err instanceof ApiStatusError ? err.status : undefined;
    const details =
      status === 401
        ? 'the API server rejected the credentials (a rotated token is picked up on the next call, and a starting ' +
          'API server rejects tokens until its authenticators are ready)'
        : status === 403
          ? 'forbidden: either the API server is starting and its authorizer is not ready yet (a retry succeeds), or ' +
            'the kubeconfig user lacks RBAC permissions on whereabouts.cni.cncf.io resources (see deploy/rbac); ' +
            'nothing was allocated'
          : 'the Kubernetes API is unreachable or overloaded; nothing was allocated twice, retry the request';
    const kind = status === 401 || status === 403 ? ErrorKind.Forbidden : ErrorKind.Unavailable;
    return new HereaboutsError(kind, `${context}: ${(err as Error).message}`, { details, cause: err });
  }
  if (err instanceof ApiStatusError) {
    return new HereaboutsError(ErrorKind.Internal, `${context}: ${err.message}`, { cause: err });
  }
  return err;
}
