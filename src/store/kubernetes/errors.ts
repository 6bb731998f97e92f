// How API failures become CNI errors. Anything that may pass with a retry (unreachable, timeouts, 5xx, 429, an
// expired token) is code 11, "try again later"; a refusal that a retry cannot fix names what to repair. A 403 is
// ambiguous: a kube-apiserver that is starting answers 403 until its RBAC caches are filled (and 401 until its
// authenticators are), exactly as it answers a missing RoleBinding. The plugin cannot tell the two apart from one
// answer, and a retry is harmless, so 403 is code 11 too, with details that name both causes.
import { CniCode, CniError } from '../../cni/errors.ts';
import { ApiUnreachableError, statusText, type ApiResponse } from '../../kube/api.ts';

/** The API server answered with a status the caller did not expect. */
export class ApiStatusError extends Error {
  readonly status: number;
  constructor(what: string, res: ApiResponse) {
    super(`${what}: ${statusText(res)}`);
    this.name = 'ApiStatusError';
    this.status = res.status;
  }

  /** A write answered with 5xx may still have been applied (e.g. 504 after etcd committed). */
  get ambiguous(): boolean {
    return this.status >= 500;
  }
}

/** True when a failed write may nevertheless have been applied by the server. */
export function mayHaveApplied(err: unknown): boolean {
  if (err instanceof ApiUnreachableError) return err.ambiguous;
  if (err instanceof ApiStatusError) return err.ambiguous;
  return false;
}

export function isTransient(err: unknown): boolean {
  if (err instanceof ApiUnreachableError) return true;
  if (err instanceof ApiStatusError) return err.status >= 500 || err.status === 429 || err.status === 401 || err.status === 403;
  return false;
}

/** Converts an error of the Kubernetes store into the CniError the plugin prints; CniErrors pass through. */
export function toCniError(err: unknown, context: string): unknown {
  if (err instanceof CniError) return err;
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
    return new CniError(CniCode.TryAgainLater, `${context}: ${(err as Error).message}`, { details, cause: err });
  }
  if (err instanceof ApiStatusError) {
    return new CniError(CniCode.Internal, `${context}: ${err.message}`, { cause: err });
  }
  return err;
}
