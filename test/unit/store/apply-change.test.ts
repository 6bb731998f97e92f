import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { applyChange } from '../../../src/store/local/apply-change.ts';
import type { AllocationRecord, PoolRef } from '../../../src/store/store.ts';
import { testRange } from '../../support/memory-store.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const pool: PoolRef = { name: '10.0.0.0-24', network: 'n', networkNamed: false, range: testRange('10.0.0.0/24') };
const record: AllocationRecord = { containerId: 'c1', ifname: 'eth0', podRef: 'ns/p' };
const at = (ip: string) => parseIP(ip).value;

function internal(pattern: RegExp) {
  return (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 999 && pattern.test(err.message);
}

test('applyChange() releases, then updates, then claims', () => {
  const current = new Map([
    [at('10.0.0.1'), record],
    [at('10.0.0.2'), record],
  ]);
  const next = applyChange(pool, current, {
    release: [at('10.0.0.1')],
    update: [{ address: at('10.0.0.2'), record: { ...record, containerId: 'c2' } }],
    claim: { address: at('10.0.0.1'), record: { ...record, containerId: 'c3' } },
  });
  assert.deepEqual(
    [...next].map(([a, r]) => [a, r.containerId]),
    [
      [at('10.0.0.2'), 'c2'],
      [at('10.0.0.1'), 'c3'],
    ],
  );
  assert.equal(current.get(at('10.0.0.1'))?.containerId, 'c1', 'the input is not modified');
});

test('applyChange() ignores the release of an address that is not allocated', () => {
  assert.equal(applyChange(pool, new Map(), { release: [at('10.0.0.9')] }).size, 0);
});

test('applyChange() rejects a claim of an allocated address', () => {
  const current = new Map([[at('10.0.0.1'), record]]);
  assert.throws(
    () => applyChange(pool, current, { claim: { address: at('10.0.0.1'), record } }),
    internal(/10\.0\.0\.1, which is already allocated/),
  );
});

test("applyChange() rejects a claim outside the pool's range", () => {
  assert.throws(
    () => applyChange(pool, new Map(), { claim: { address: at('10.0.1.1'), record } }),
    internal(/10\.0\.1\.1, outside the range/),
  );
});

test('applyChange() rejects an update of an address that is not allocated', () => {
  assert.throws(
    () => applyChange(pool, new Map(), { update: [{ address: at('10.0.0.1'), record }] }),
    internal(/not allocated/),
  );
});
