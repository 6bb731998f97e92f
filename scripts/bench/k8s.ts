// `npm run bench:k8s`: the Kubernetes store of the packaged executable against a real kube-apiserver.
//   1. API requests per ADD and per DEL in the steady state, counted by the API server itself (audit log), for
//      node slices and a shared pool, reservations off and on. Target (node slices): 1 write per ADD without
//      reservations, 2 with, and no GET, no LIST.
//   2. A burst of ADDs across simulated nodes (own NODENAME, cache dir and slice each): wall time, ops/s, latency.
// Usage: node scripts/bench/k8s.ts [--no-build] [--steady N] [--burst N] [--nodes N] [--concurrency N]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCni, type CniOutcome } from '../../test/support/cni.ts';
import {
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type Namespace,
} from '../../test/support/control-plane.ts';
import { hereaboutsBin, repoRoot } from '../../test/support/paths.ts';
import { cniConf, createNodeSlicePool, limited, type ConfOptions } from '../../test/integration/kubernetes/harness.ts';

const { values: flags } = parseArgs({
  options: {
    'no-build': { type: 'boolean', default: false },
    steady: { type: 'string', default: '20' },
    burst: { type: 'string', default: '500' },
    nodes: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '50' },
  },
});
const steady = positive('steady');
const burst = positive('burst');
const burstNodes = positive('nodes');
const concurrency = positive('concurrency');

function positive(name: keyof typeof flags): number {
  const value = Number(flags[name]);
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`--${name} ${String(flags[name])}: need a positive integer`);
  return value;
}

const work = mkdtempSync(join(tmpdir(), 'hereabouts-bench-k8s-'));
const auditLog = join(work, 'audit.log');

interface Counts {
  readonly byKind: Map<string, number>;
  readonly total: number;
}

/** Requests made by hereabouts (its User-Agent) since `offset` of the audit log, by "<verb> <resource>". */
function countSince(offset: number): { counts: Counts; offset: number } {
  const buffer = readFileSync(auditLog);
  const byKind = new Map<string, number>();
  let total = 0;
  for (const line of buffer.subarray(offset).toString('utf8').split('\n')) {
    if (line === '') continue;
    const event = JSON.parse(line) as { userAgent?: string; verb?: string; objectRef?: { resource?: string } };
    if (!event.userAgent?.startsWith('hereabouts/')) continue;
    const kind = `${event.verb} ${event.objectRef?.resource ?? '(none)'}`;
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    total++;
  }
  return { counts: { byKind, total }, offset: buffer.length };
}

function auditOffset(): number {
  return existsSync(auditLog) ? readFileSync(auditLog).length : 0;
}

function cni(ns: Namespace, command: 'ADD' | 'DEL', node: string, pod: string, conf: ConfOptions): Promise<CniOutcome> {
  return runCni(
    hereaboutsBin,
    {
      command,
      containerId: `c-${pod}`,
      netns: `/var/run/netns/${pod}`,
      ifname: 'eth0',
      path: '/opt/cni/bin',
      args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
    },
    quiet(cniConf(ns, node, conf)),
    { timeoutMs: 120_000, extraEnv: { NODENAME: node } },
  );
}

/** Benchmarks measure the plugin, not its debug log. */
function quiet(conf: Record<string, unknown>): Record<string, unknown> {
  return { ...conf, ipam: { ...(conf['ipam'] as Record<string, unknown>), log_level: 'error' } };
}

function checked(outcome: CniOutcome, what: string): CniOutcome {
  if (outcome.code !== 0)
    throw new Error(`${what} failed (exit ${outcome.code ?? outcome.signal}): ${outcome.stdout}${outcome.stderr}`);
  return outcome;
}

interface Scenario {
  readonly label: string;
  readonly slices: boolean;
  readonly reservations: boolean;
}

function perOp(counts: Counts, ops: number): string {
  const kinds = [...counts.byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${(n / ops).toFixed(2)}`);
  const reads = [...counts.byKind].filter(([k]) => /^(get|list|watch) /.test(k)).reduce((a, [, n]) => a + n, 0);
  const writes = counts.total - reads;
  return `${(writes / ops).toFixed(2)} writes, ${(reads / ops).toFixed(2)} reads  (${kinds.join(', ') || 'none'})`;
}

async function requestCounts(ns: Namespace, scenario: Scenario, index: number): Promise<void> {
  const name = `steady-${index}`;
  const range = `10.${100 + index}.0.0/16`;
  const node = 'bench-node';
  const conf: ConfOptions = {
    name,
    range,
    enableOverlappingRanges: scenario.reservations,
    ...(scenario.slices ? { nodeSliceSize: '/24' } : {}),
  };
  if (scenario.slices) await createNodeSlicePool(ns, name, range, 24, [node]);
  checked(await cni(ns, 'ADD', node, `${name}-warm`, conf), 'warm-up ADD'); // creates the pool, fills the node cache
  let offset = auditOffset();
  for (let i = 0; i < steady; i++) checked(await cni(ns, 'ADD', node, `${name}-${i}`, conf), 'ADD');
  const adds = countSince(offset);
  offset = adds.offset;
  for (let i = 0; i < steady; i++) checked(await cni(ns, 'DEL', node, `${name}-${i}`, conf), 'DEL');
  const dels = countSince(offset);
  console.log(`${scenario.label.padEnd(36)} per ADD: ${perOp(adds.counts, steady)}`);
  console.log(`${''.padEnd(36)} per DEL: ${perOp(dels.counts, steady)}`);
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function burstRun(ns: Namespace, reservations: boolean): Promise<void> {
  const name = `burst-${reservations ? 'on' : 'off'}`;
  const range = reservations ? '10.64.0.0/16' : '10.65.0.0/16';
  const nodes = Array.from({ length: burstNodes }, (_, i) => `burst-node-${String(i).padStart(3, '0')}`);
  const slicePrefix = 24;
  if (burstNodes > 256) throw new RangeError(`--nodes ${burstNodes}: at most 256 /24 slices in a /16`);
  await createNodeSlicePool(ns, name, range, slicePrefix, nodes);
  const conf: ConfOptions = { name, range, nodeSliceSize: `/${slicePrefix}`, enableOverlappingRanges: reservations };
  const offset = auditOffset();
  const latencies: number[] = [];
  const started = performance.now();
  const outcomes = await limited(
    concurrency,
    Array.from({ length: burst }, (_, i) => async () => {
      const t0 = performance.now();
      const outcome = await cni(ns, 'ADD', nodes[i % burstNodes] ?? '', `${name}-${i}`, conf);
      latencies.push(performance.now() - t0);
      return outcome;
    }),
  );
  const wall = performance.now() - started;
  const failed = outcomes.filter((o) => o.code !== 0);
  const addresses = new Set(
    outcomes.map((o) => JSON.stringify((o.json?.['ips'] as unknown[] | undefined)?.[0] ?? null)),
  );
  const { counts } = countSince(offset);
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    `burst, node slices, reservations ${reservations ? 'on ' : 'off'}: ${burst} ADDs on ${burstNodes} nodes, ${concurrency} at a time: ` +
      `${(wall / 1000).toFixed(1)} s, ${(burst / (wall / 1000)).toFixed(1)} ADD/s, p50 ${quantile(sorted, 0.5).toFixed(0)} ms, ` +
      `p99 ${quantile(sorted, 0.99).toFixed(0)} ms; ${failed.length} failed, ${addresses.size} distinct results`,
  );
  console.log(
    `${''.padEnd(36)} per ADD: ${perOp(counts, burst)} (every ADD reads its NodeSlicePool, the first of each node its pool too)`,
  );
  if (failed.length > 0) console.log(`  first failure: ${failed[0]?.stdout}`);
}

async function main(): Promise<void> {
  if (!flags['no-build']) {
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  if (!existsSync(hereaboutsBin)) throw new Error(`${hereaboutsBin} is missing: run "npm run build"`);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`starting a private control plane with an audit log (load average ${load})`);
  const cp = await privateControlPlane({ auditLog });
  try {
    const ns = await createNamespace(cp, 'bench');
    console.log(
      `\nAPI requests per operation, steady state (${steady} sequential ADDs then DELs on one warm node), counted by kube-apiserver:`,
    );
    const scenarios: Scenario[] = [
      { label: 'node slices, reservations off', slices: true, reservations: false },
      { label: 'node slices, reservations on', slices: true, reservations: true },
      { label: 'shared pool, reservations off', slices: false, reservations: false },
      { label: 'shared pool, reservations on', slices: false, reservations: true },
    ];
    for (const [i, scenario] of scenarios.entries()) await requestCounts(ns, scenario, i);
    console.log('');
    for (const reservations of [true, false]) await burstRun(ns, reservations);
    await ns.cleanup();
  } finally {
    stopControlPlane(cp);
  }
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
