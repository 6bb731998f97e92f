// Several failures reported as one CNI error: DEL and GC keep going after an error, ADD reports a failed rollback
// together with the failure that caused it.
import { CniCode, CniError } from '../cni/errors.ts';

/** One error as is; several as a CniError carrying the first error's code and an AggregateError cause. */
export function combineErrors(summary: string, errors: readonly unknown[]): unknown {
  const [first] = errors;
  if (errors.length === 1) return first;
  const code = first instanceof CniError ? first.code : CniCode.Internal;
  const parts = errors.map((err) => (err instanceof Error ? err.message : String(err)));
  return new CniError(code, `${summary}: ${parts.join('; ')}`, { cause: new AggregateError(errors, summary) });
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
