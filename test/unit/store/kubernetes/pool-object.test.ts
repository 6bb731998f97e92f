import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../../src/ip/address.ts';
import { allocationsPatch, decodePoolObject } from '../../../../src/store/kubernetes/pool-object.ts';
import type { AllocationRecord, PoolRef } from '../../../../src/store/store.ts';
import { testRange } from '../../../support/memory-store.ts';
import { HereaboutsError } from '../../../../src/errors.ts';

const pool: PoolRef = { name: '10.0.0.0-24', network: 'n', networkNamed: false, range: testRange('10.0.0.0/24') };
const at = (text: string) => parseIP(text).value;
const object = (allocations: unknown, range = '10.0.0.0/24') => ({
  metadata: { resourceVersion: '7' },
  spec: { range, allocations },
});

test('decodePoolObject() reads decimal offsets from the network address', () => {
  const state = decodePoolObject(object({ '5': { id: 'c', podref: 'ns/p', ifname: 'eth0' } }), pool, () => {});
  assert.deepEqual([...state.allocations.keys()], [at('10.0.0.5')]);
  assert.equal(state.resourceVersion, '7');
});

test('decodePoolObject() keeps an unreadable entry as taken and reports it', () => {
  const warnings: string[] = [];
  const state = decodePoolObject(object({ '3': { podref: 'no id' } }), pool, (m) => warnings.push(m));
  assert.ok(state.allocations.has(at('10.0.0.3')));
  assert.equal(warnings.length, 1);
});

test('decodePoolObject() skips keys that are not offsets inside the range, as Whereabouts does', () => {
  const warnings: string[] = [];
  const state = decodePoolObject(object({ '256': { id: 'x' }, abc: { id: 'y' } }), pool, (m) => warnings.push(m));
  assert.equal(state.allocations.size, 0);
  assert.equal(warnings.length, 2);
});

test('decodePoolObject() refuses a pool of another range', () => {
  assert.throws(
    () => decodePoolObject(object({}, '10.9.0.0/24'), pool, () => {}),
    (err: unknown) => err instanceof HereaboutsError && /spec.range/.test(err.message),
  );
});

test('allocationsPatch() sends only changed offsets, null for removals, conditional on the resourceVersion', () => {
  const a: AllocationRecord = { containerId: 'a', ifname: 'eth0', podRef: 'ns/a' };
  const b: AllocationRecord = { containerId: 'b', ifname: 'eth0', podRef: 'ns/b', node: 'n1' };
  const current = new Map([
    [at('10.0.0.1'), a],
    [at('10.0.0.2'), b],
  ]);
  const next = new Map([
    [at('10.0.0.2'), b],
    [at('10.0.0.3'), { ...a, containerId: 'c' }],
  ]);
  const patch = allocationsPatch(pool.range.cidr, current, next, '42') as {
    metadata: unknown;
    spec: { allocations: Record<string, Record<string, unknown> | null> };
  };
  assert.deepEqual(
    patch.metadata,
    { resourceVersion: '42', managedFields: [{}] },
    "conditional, and clears the API server's field tracking",
  );
  assert.deepEqual(Object.keys(patch.spec.allocations).sort(), ['1', '3']);
  assert.equal(patch.spec.allocations['1'], null);
  assert.equal(patch.spec.allocations['3']?.['id'], 'c');
  assert.match(String(patch.spec.allocations['3']['createdAt']), /^\d{4}-/);
});

test('allocationsPatch() clears modelled fields a rewritten record dropped', () => {
  const before: AllocationRecord = { containerId: 'a', ifname: 'eth0', podRef: 'ns/a', podUid: 'u1', node: 'n1' };
  const after: AllocationRecord = { containerId: 'a2', ifname: 'eth0', podRef: 'ns/a', node: 'n2' };
  const patch = allocationsPatch(
    pool.range.cidr,
    new Map([[at('10.0.0.1'), before]]),
    new Map([[at('10.0.0.1'), after]]),
    '1',
  ) as {
    spec: { allocations: Record<string, Record<string, unknown>> };
  };
  assert.deepEqual(patch.spec.allocations['1'], {
    id: 'a2',
    podref: 'ns/a',
    ifname: 'eth0',
    node: 'n2',
    podUid: null,
    binding: null,
  });
});
