// The node cache is only a guess: a cache file that does not parse into the full schema is ignored (the caller
// reads the API), never taken for an empty pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CACHE_FORMAT, readCachedPool } from '../../../../src/store/kubernetes/pool-cache.ts';
import { poolPaths } from '../../../../src/store/local/paths.ts';
import type { PoolRef } from '../../../../src/store/store.ts';
import { testRange } from '../../../support/memory-store.ts';

const pool: PoolRef = { name: '10.0.0.0-24', network: 'n', networkNamed: false, range: testRange('10.0.0.0/24') };
const scope = { server: 'https://api:6443', namespace: 'kube-system' };
const header = { format: CACHE_FORMAT, name: pool.name, range: '10.0.0.0/24', resourceVersion: '9', ...scope };

function cacheWith(doc: unknown) {
  const paths = poolPaths(mkdtempSync(join(tmpdir(), 'hab-cache-')), pool);
  mkdirSync(paths.networkDir, { recursive: true });
  writeFileSync(paths.data, JSON.stringify(doc));
  return paths;
}

test('readCachedPool() returns a well-formed cache with its allocations and resourceVersion', () => {
  const paths = cacheWith({ ...header, allocations: { '5': { id: 'c', podref: 'ns/p', ifname: 'eth0' } } });
  const state = readCachedPool(paths, pool, scope, () => {});
  assert.equal(state?.resourceVersion, '9');
  assert.equal(state.allocations.size, 1);
});

for (const [what, allocations] of [
  ['null', null],
  ['missing', undefined],
  ['a list', []],
  ['a null record', { '5': null }],
] as const) {
  test(`readCachedPool() ignores a cache whose allocations are ${what} (the API is read instead), never an empty pool`, () => {
    const warnings: string[] = [];
    const paths = cacheWith({ ...header, allocations });
    assert.equal(
      readCachedPool(paths, pool, scope, (m) => warnings.push(m)),
      undefined,
    );
    assert.equal(warnings.length, 1, 'the reason is logged');
  });
}

test('readCachedPool() hands over the contention marks kept with the pool, and ignores malformed ones', () => {
  const allocations = { '5': { id: 'c', podref: 'ns/p', ifname: 'eth0' } };
  const kept = readCachedPool(
    cacheWith({
      ...header,
      allocations,
      contention: { collidedUntil: 1_700_000_000_000, busyUntil: 1_700_000_001_000 },
    }),
    pool,
    scope,
    () => {},
  );
  assert.deepEqual(kept?.contention, { collidedUntil: 1_700_000_000_000, busyUntil: 1_700_000_001_000 });
  assert.deepEqual(readCachedPool(cacheWith({ ...header, allocations }), pool, scope, () => {})?.contention, {});
  const malformed = readCachedPool(
    cacheWith({ ...header, allocations, contention: { collidedUntil: 'soon', busyUntil: null } }),
    pool,
    scope,
    () => {},
  );
  assert.deepEqual(malformed?.contention, {}, 'a hint that does not parse is no hint');
  assert.equal(malformed.allocations.size, 1, 'and the pool is still served from the cache');
});
