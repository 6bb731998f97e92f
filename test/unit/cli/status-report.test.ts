import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildReport, formatTable } from '../../../src/cli/status-report.ts';

const pool = (name: string, range: string, allocations: Record<string, unknown> = {}) => ({ metadata: { name }, spec: { range, allocations } });

test('buildReport() counts an allocation of a pod that no longer exists as an orphan', () => {
  const report = buildReport('ns', [pool('p', '10.0.0.0/30', { '1': { id: 'c', podref: 'a/gone', ifname: 'eth0' } })], [], new Map());
  assert.deepEqual(report.pools[0], { name: 'p', range: '10.0.0.0/30', capacity: '2', used: 1, free: '1', orphans: 1, problems: [] });
});

test('buildReport() does not count allocations without a pod as orphans', () => {
  const report = buildReport('ns', [pool('p', '10.0.0.0/30', { '1': { id: 'c', podref: '', ifname: 'eth0' } })], [], new Map());
  assert.equal(report.pools[0]?.orphans, 0);
});

test('buildReport() reports a pool whose range is not a CIDR instead of failing', () => {
  const report = buildReport('ns', [pool('bad', 'nope')], [], new Map());
  assert.match(report.pools[0]?.problems[0] ?? '', /spec\.range "nope" is not a CIDR/);
  assert.match(formatTable(report), /warning: IPPool bad: spec\.range "nope"/);
});

test('buildReport() serves /32 and huge IPv6 ranges with exact decimal capacities', () => {
  const report = buildReport('ns', [pool('a', '10.0.0.1/32'), pool('b', 'fd00::/48')], [], new Map());
  assert.deepEqual(report.pools.map((p) => p.capacity), ['1', '1208925819614629174706174']);
});
