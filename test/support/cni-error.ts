// assert.throws/rejects validator: a CniError with this code whose message matches.
import assert from 'node:assert/strict';
import { CniError } from '../../src/cni/errors.ts';

export function cniError(code: number, pattern: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof CniError, `expected CniError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  };
}
