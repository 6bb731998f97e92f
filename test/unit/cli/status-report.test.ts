import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toJson } from '../../../src/cli/connect.ts';
import { buildReport, formatTable, type StatusReport } from '../../../src/cli/status-report.ts';

const pool = (name: string, range: string, allocations: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: { range, allocations },
});
/** The report as `-o json` prints it. */
const json = (report: StatusReport): { pools: Array<Record<string, unknown>> } =>
  JSON.parse(toJson(report)) as { pools: Array<Record<string, unknown>> };

test('buildReport() counts an allocation of a pod that no longer exists as an orphan', () => {
  const report = buildReport(
    'ns',
    [pool('p', '10.0.0.0/30', { '1': { id: 'c', podref: 'a/gone', ifname: 'eth0' } })],
    [],
    new Map(),
  );
  assert.deepEqual(json(report).pools[0], {
    name: 'p',
    range: '10.0.0.0/30',
    capacity: 2,
    used: 1,
    warm: 0,
    claims: 0,
    prefixes: 0,
    sticky: 0,
    free: 1,
    orphans: 1,
    problems: [],
  });
});

test('buildReport() does not count allocations without a pod as orphans', () => {
  const report = buildReport(
    'ns',
    [pool('p', '10.0.0.0/30', { '1': { id: 'c', podref: '', ifname: 'eth0' } })],
    [],
    new Map(),
  );
  assert.equal(report.pools[0]?.orphans, 0);
});

test('buildReport() reports a pool whose range is not a CIDR instead of failing', () => {
  const report = buildReport('ns', [pool('bad', 'nope')], [], new Map());
  assert.match(report.pools[0]?.problems[0] ?? '', /spec\.range "nope" is not a CIDR/);
  assert.match(formatTable(report), /warning: IPPool bad: spec\.range "nope"/);
  assert.equal(json(report).pools[0]?.['capacity'], null);
});

test('-o json: counts are JSON numbers up to 2^53 - 1 and exact decimal strings above (/32, /75 and /48 ranges)', () => {
  const report = buildReport(
    'ns',
    [pool('a', '10.0.0.1/32'), pool('b', 'fd00::/75'), pool('c', 'fd00::/74'), pool('d', 'fd00::/48')],
    [],
    new Map(),
  );
  // fd00::/75 spans 2^53 addresses, 2^53 - 2 usable (below 2^53 - 1); /74 twice that.
  assert.deepEqual(
    json(report).pools.map((p) => p['capacity']),
    [1, 9007199254740990, '18014398509481982', '1208925819614629174706174'],
  );
  assert.match(formatTable(report), /^d\s+fd00::\/48\s+1208925819614629174706174\s/m);
});
