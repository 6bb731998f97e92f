import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiStatusError } from '../../../../src/kube/errors.ts';
import { toStoreError } from '../../../../src/store/kubernetes/api-errors.ts';
import { HereaboutsError } from '../../../../src/errors.ts';
import { cniCodeOf } from '../../../../src/cni/errors.ts';

const answer = (status: number) =>
  new ApiStatusError('GET ippools/x', { status, body: { reason: 'Forbidden', message: 'forbidden' } });

test('toStoreError() makes a 403 code 11 (a starting API server forbids until its authorizer is ready), naming both causes', () => {
  const err = toStoreError(answer(403), 'ADD');
  assert.ok(err instanceof HereaboutsError);
  assert.equal(cniCodeOf(err), 11);
  assert.match(err.details, /starting/);
  assert.match(err.details, /RBAC/);
});

test('toStoreError() keeps 401, 429 and 5xx at code 11 and other refusals permanent', () => {
  for (const status of [401, 429, 500, 503])
    assert.equal(cniCodeOf(toStoreError(answer(status), 'ADD')), 11, String(status));
  for (const status of [400, 404, 422])
    assert.notEqual(cniCodeOf(toStoreError(answer(status), 'ADD')), 11, String(status));
});
