import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from '../../../../src/cni/errors.ts';
import { ApiStatusError, toCniError } from '../../../../src/store/kubernetes/errors.ts';

const answer = (status: number) => new ApiStatusError('GET ippools/x', { status, body: { reason: 'Forbidden', message: 'forbidden' } });

test('toCniError() makes a 403 code 11 (a starting API server forbids until its authorizer is ready), naming both causes', () => {
  const err = toCniError(answer(403), 'ADD');
  assert.ok(err instanceof CniError);
  assert.equal(err.code, 11);
  assert.match(err.details, /starting/);
  assert.match(err.details, /RBAC/);
});

test('toCniError() keeps 401, 429 and 5xx at code 11 and other refusals permanent', () => {
  for (const status of [401, 429, 500, 503]) assert.equal((toCniError(answer(status), 'ADD') as CniError).code, 11, String(status));
  for (const status of [400, 404, 422]) assert.notEqual((toCniError(answer(status), 'ADD') as CniError).code, 11, String(status));
});
