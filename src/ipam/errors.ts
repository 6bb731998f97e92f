// Several failures reported as one error: DEL and GC keep going after an error, ADD reports a failed rollback
// together with the failure that caused it.
import { ErrorKind, HereaboutsError } from '../errors.ts';

/** One error as is; several as a HereaboutsError carrying the first error's kind and an AggregateError cause. */
export function combineErrors(summary: string, errors: readonly unknown[]): unknown {
  const [first] = errors;
  if (errors.length === 1) return first;
  const code = first instanceof HereaboutsError ? first.kind : ErrorKind.Internal;
  const parts = errors.map((err) => (err instanceof Error ? err.message : String(err)));
  return new HereaboutsError(code, `${summary}: ${parts.join('; ')}`, { cause: new AggregateError(errors, summary) });
}
