// What an API call's failure says about the request: was it refused, might it have been applied anyway, may a retry
// pass. The store decides what these mean for an allocation (src/store/kubernetes/api-errors.ts).
import { ApiUnreachableError, statusText, type ApiResponse } from './api.ts';

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

/** Unreachable, 5xx, 429, or a refusal of credentials or permission (which a starting API server also answers). */
export function isTransient(err: unknown): boolean {
  if (err instanceof ApiUnreachableError) return true;
  if (err instanceof ApiStatusError)
    return err.status >= 500 || err.status === 429 || err.status === 401 || err.status === 403;
  return false;
}
