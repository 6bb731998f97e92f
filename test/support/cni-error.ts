// assert.throws/rejects validator: an error that prints as this CNI code and whose message matches.
import assert from 'node:assert/strict';
import { cniCodeOf } from '../../src/cni/errors.ts';

export function cniError(code: number, pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof Error, `expected an error, got ${String(err)}`);
    assert.equal(cniCodeOf(err), code);
    assert.match(err.message, pattern);
    return true;
  };
}
