// A rolling switch, with the real Whereabouts v0.9.4 plugin (built from its Go module by scripts/bench/build-tools.sh,
// cached outside the repo): both binaries run on the same nodes and ADD to the same shared pool at once, then each
// pod is deleted by the other binary (its node switched between the pod's ADD and its DEL). Whereabouts serialises
// its writers with a Lease, gives up on a reservation conflict, and reads pool offsets as int64; hereabouts must make
// none of either side's ADDs fail, hand out no address twice, keep every address recorded for its pod, and leave
// nothing behind once every pod is deleted: nothing at all but what a Whereabouts DEL that gave up left (it exits 0
// either way), and that too once the controller's orphan pass has run. The IPv4 and IPv6 variants run at once, each in its own namespace (its own
// Lease), as two clusters would; then a third runs hereabouts' calls through a node agent per node with warm sets, the
// controller running (issue 34: the agents learn of Whereabouts from its Lease).
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { reservationName } from '../../../src/config/names.ts';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { api, cacheHolds, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { repoRoot, requireBinary } from '../../support/paths.ts';
import { startAgentProcess, warmStats, type AgentProcess } from '../../support/agent.ts';
import { runOnce, startController, type Running } from '../controller/harness.ts';
import { limited, poolView, reservationNames } from './harness.ts';

/** ADDs per binary and variant, all started at once (IN_FLIGHT processes of each binary at a time). */
const PODS = 60;
const IN_FLIGHT = 30;
const NODES = ['node-a', 'node-b', 'node-c'];

type Binary = 'whereabouts' | 'hereabouts';
const BINARIES: readonly Binary[] = ['whereabouts', 'hereabouts'];
const other = (binary: Binary): Binary => (binary === 'hereabouts' ? 'whereabouts' : 'hereabouts');

/** The Whereabouts plugin, or why the suite cannot run (no Go toolchain to build it). */
function whereaboutsBinary(): { path: string } | { skip: string } {
  const go = ['go', '/usr/local/go/bin/go'].some(
    (candidate) => spawnSync(candidate, ['version'], { stdio: 'ignore' }).status === 0,
  );
  if (!go)
    return {
      skip: 'no Go toolchain: cannot build Whereabouts v0.9.4 from its Go module (scripts/bench/build-tools.sh)',
    };
  const built = spawnSync('bash', [join(repoRoot, 'scripts', 'bench', 'build-tools.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const path = built.stdout.split('\n')[0] ?? '';
  if (built.status !== 0 || !existsSync(path))
    throw new Error(`scripts/bench/build-tools.sh failed (exit ${String(built.status)}): ${built.stdout}`);
  return { path };
}

const tool = whereaboutsBinary();

interface Variant {
  readonly family: 'IPv4' | 'IPv6';
  /** A /64: hereabouts spreads contended claims over the range, Whereabouts reads offsets below 2^63 only. */
  readonly range: string;
  /** hereabouts' calls go through a node agent per node, with warm sets, and the controller runs. */
  readonly agents?: boolean;
}

const VARIANTS: readonly Variant[] = [
  { family: 'IPv4', range: '10.91.0.0/24' },
  { family: 'IPv6', range: 'fd00:91::/64' },
  { family: 'IPv4', range: '10.93.0.0/24', agents: true },
];

interface Pod {
  readonly name: string;
  readonly node: string;
  /** The binary that ADDs it; the other one DELs it. */
  readonly adder: Binary;
}

interface Outcome {
  readonly pod: Pod;
  readonly outcome: CniOutcome;
}

/** One variant's cluster: a namespace (its pools and Whereabouts' Lease) and the CNI calls of both binaries. */
class MixedCluster {
  readonly ns: Namespace;
  readonly variant: Variant;
  readonly #whereabouts: string;
  /** The node agents by node, while they run (Variant.agents). */
  readonly agents = new Map<string, AgentProcess>();

  constructor(ns: Namespace, variant: Variant, whereabouts: string) {
    this.ns = ns;
    this.variant = variant;
    this.#whereabouts = whereabouts;
    // Whereabouts refuses to run without its flat file, as its installer writes it.
    const flat = { datastore: 'kubernetes', kubernetes: { kubeconfig: ns.kubeconfig }, log_level: 'error' };
    writeFileSync(this.#flatFile(), JSON.stringify(flat), { mode: 0o600 });
  }

  get poolName(): string {
    return this.variant.range.replaceAll(':', '-').replaceAll('/', '-');
  }

  /** Every pod's call of `command` by `binary` (IN_FLIGHT at a time). */
  run(binary: Binary, command: 'ADD' | 'DEL', pods: readonly Pod[]): Promise<Outcome[]> {
    return limited(
      IN_FLIGHT,
      pods.map((pod) => async () => ({ pod, outcome: await this.#call(binary, command, pod) })),
    );
  }

  #call(binary: Binary, command: 'ADD' | 'DEL', pod: Pod): Promise<CniOutcome> {
    const ns = this.ns;
    const ipam = {
      type: binary,
      range: this.variant.range,
      enable_overlapping_ranges: true, // both binaries' default
      kubernetes: { kubeconfig: ns.kubeconfig },
      ...(binary === 'hereabouts'
        ? { cache_dir: join(ns.dir, 'nodes', pod.node), log_file: join(ns.dir, `hereabouts-${pod.node}.log`) }
        : { configuration_path: this.#flatFile() }),
      // Whereabouts' DEL tells how it ended only in its debug log (whereaboutsGaveUp()).
      ...(binary === 'whereabouts' && command === 'DEL' ? { log_level: 'debug' } : {}),
    };
    return runCni(
      binary === 'hereabouts' ? requireBinary() : this.#whereabouts,
      {
        command,
        containerId: `c-${pod.name}`,
        netns: `/var/run/netns/${pod.name}`,
        ifname: 'net1',
        path: '/opt/cni/bin',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod.name}`,
      },
      { cniVersion: '0.4.0', name: `mixed-${this.variant.family}`, type: 'bridge', ipam },
      {
        timeoutMs: 150_000,
        extraEnv: {
          NODENAME: pod.node,
          ...(binary === 'hereabouts' && this.variant.agents === true
            ? { HEREABOUTS_AGENT_SOCKET: this.socketOf(pod.node) }
            : {}),
        },
      },
    );
  }

  socketOf(node: string): string {
    return join(this.ns.dir, 'agents', node, 'agent.sock');
  }

  #flatFile(): string {
    return join(this.ns.dir, 'whereabouts.conf');
  }
}

/**
 * Why a Whereabouts DEL gave up, or undefined when it did its part. Its cmdDel discards IPManagement's error and exits 0
 * whatever happened (v0.9.4 cmd/whereabouts.go): past its 1-minute DelTimeLimit waiting for its Lease, or past the
 * 10 s its update has for all its retries, it leaves the record and the reservation. Only its debug log's last
 * `IPManagement: <ips>, <error>` line says so.
 */
function whereaboutsGaveUp(outcome: CniOutcome): string | undefined {
  const ended = [...outcome.stderr.matchAll(/\] IPManagement: \[.*\], (.*)$/gm)].at(-1)?.[1];
  if (ended === undefined) return `no IPManagement line in its log: ${outcome.stderr.trim().slice(-300)}`;
  return ended === '<nil>' ? undefined : ended;
}

/** The calls that failed, as "pod: exit code and answer". */
function failures(outcomes: readonly Outcome[]): string[] {
  return outcomes
    .filter(({ outcome }) => outcome.code !== 0)
    .map(({ pod, outcome }) => `${pod.name}: exit ${String(outcome.code)} ${outcome.stdout.trim().slice(0, 300)}`);
}

async function rollingSwitch(t: TestContext, variant: Variant, whereabouts: string): Promise<void> {
  const ns = await createNamespace(await controlPlane(), 'mixed');
  t.after(() => ns.cleanup());
  const cluster = new MixedCluster(ns, variant, whereabouts);
  let controller: Running | undefined;
  if (variant.agents === true) {
    // Its full pass an hour away: the simulated nodes are no Node object, and a pass releases a gone node's warm records
    // (node-gone) under its running agent. Only the controller's word on warm sets is wanted here.
    const running = startController(ns, '--reconcile-interval', '1h');
    controller = running;
    t.after(() => running.stop());
    // Its first pass runs once its caches sync: a Whereabouts record (no creation time) of a pod that does not exist is
    // an orphan at once, as for Whereabouts' reconciler, and these pods are no Pod objects. Done before the first ADD.
    await running.waitForLine((l) => l['pass'] === 'full' && / pass done/.test(l.msg), 60_000);
    t.after(() => {
      for (const agent of cluster.agents.values()) agent.kill();
    });
    // Started while the other variants' ADDs load the machine: given a minute to listen.
    const started = await Promise.allSettled(
      NODES.map((node) => startAgentProcess(requireBinary(), cluster.socketOf(node), [], {}, 60_000)),
    );
    for (const [i, node] of NODES.entries()) {
      const outcome = started[i];
      if (outcome?.status === 'fulfilled') cluster.agents.set(node, outcome.value);
    }
    for (const outcome of started) if (outcome.status === 'rejected') throw outcome.reason;
  }
  const began = performance.now();
  const seconds = () => ((performance.now() - began) / 1000).toFixed(1);
  const pods = new Map<Binary, Pod[]>(BINARIES.map((adder) => [adder, []]));
  for (let i = 0; i < PODS; i++)
    for (const adder of BINARIES)
      pods.get(adder)?.push({
        name: `${adder.slice(0, 2)}-${variant.family.toLowerCase()}-${i}`,
        node: NODES[i % NODES.length] ?? '',
        adder,
      });
  const podsOf = (binary: Binary): Pod[] => pods.get(binary) ?? [];

  // A switch starts from a cluster Whereabouts served: a pod it set up before, and its Lease, which shows that it
  // writes. (The first Whereabouts write after 15 minutes without one is not covered: docs/safety.md.)
  const before: Pod = { name: `wh-${variant.family.toLowerCase()}-before`, node: NODES[0] ?? '', adder: 'whereabouts' };
  const served = await cluster.run('whereabouts', 'ADD', [before]);
  podsOf('whereabouts').push(before);
  // As in a cluster Whereabouts served for a while, its Lease is in the API server's watch cache, where the plugin
  // reads it (a Lease written moments ago may not be: docs/safety.md, "What is not covered").
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/whereabouts`;
  const lease = (await api(ns.cp, 'GET', leasePath)) as { metadata: { resourceVersion: string } };
  await cacheHolds(ns.cp, leasePath, lease.metadata.resourceVersion);

  // Both binaries ADD at once.
  const added = await Promise.all(
    BINARIES.map((binary) =>
      cluster.run(
        binary,
        'ADD',
        podsOf(binary).filter((p) => p !== before),
      ),
    ),
  );
  t.diagnostic(`${variant.family}: ${2 * PODS} ADDs in ${seconds()} s`);
  const holders = new Map<string, string[]>();
  for (const { pod, outcome } of [...served, ...added.flat()]) {
    const ips = (outcome.json?.['ips'] as Array<{ address: string }> | undefined) ?? [];
    for (const { address } of ips) {
      const ip = address.replace(/\/\d+$/, '');
      holders.set(ip, [...(holders.get(ip) ?? []), pod.name]);
    }
  }
  const twice = [...holders].filter(([, names]) => names.length > 1).map(([ip, names]) => `${ip}: ${names.join(', ')}`);
  // While Whereabouts writes the pool, hereabouts plans from the top down, away from Whereabouts' lowest-first picks
  // (a deposed Whereabouts ADD goes on with its pick): no address of one lies between two of the other's.
  const byBinary = (binary: Binary) =>
    [...holders]
      .filter(([, names]) => names.some((name) => name.startsWith(binary.slice(0, 2))))
      .map(([ip]) => parseIP(ip).value);
  const highestOfWhereabouts = byBinary('whereabouts').reduce((a, b) => (a > b ? a : b), 0n);
  const interleaved = byBinary('hereabouts')
    .filter((value) => value < highestOfWhereabouts)
    .map((value) => formatIP({ family: variant.family === 'IPv4' ? 4 : 6, value }));
  // Every address handed out is recorded for its pod in the pool, and reserved.
  const pool = await poolView(ns, cluster.poolName);
  const reserved = new Set(await reservationNames(ns));
  const unrecorded: string[] = [];
  for (const [ip, names] of holders) {
    const podref = pool?.allocations.get(ip)?.['podref'];
    if (podref !== `default/${names[0] ?? ''}`)
      unrecorded.push(`${ip} of ${names.join(', ')}: the pool says ${String(podref)}`);
    if (!reserved.has(reservationName(parseIP(ip)))) unrecorded.push(`${ip} of ${names.join(', ')}: no reservation`);
  }

  // Each pod is deleted by the other binary (those whose ADD failed too, as a runtime does).
  const deleted = await Promise.all(BINARIES.map((adder) => cluster.run(other(adder), 'DEL', podsOf(adder))));
  t.diagnostic(`${variant.family}: ${2 * PODS} DELs done at ${seconds()} s`);
  // hereabouts' calls went through the agents (answered from a warm set or on their synchronous path).
  let agentCalls = 0;
  for (const agent of cluster.agents.values()) {
    const stats = await warmStats(agent);
    agentCalls += (stats?.handedOut ?? 0) + (stats?.released ?? 0) + (stats?.synchronous ?? 0);
  }
  if (variant.agents === true) assert.ok(agentCalls >= 2 * PODS, `the agents served ${agentCalls} calls`);
  // The agents stop as for an upgrade: their pending writes made, whatever they hold warm given back.
  for (const agent of cluster.agents.values()) {
    agent.kill('SIGTERM');
    assert.equal(await agent.exited, 0, agent.log());
  }
  const left = await poolView(ns, cluster.poolName);
  // A Whereabouts DEL that gave up (whereaboutsGaveUp()) leaves its pod's record and reservation: a leak, not a
  // duplicate, as it would with Whereabouts alone. Whatever else is left is hereabouts' doing.
  const gaveUp = new Map<string, string>();
  for (const { pod, outcome } of deleted[1] ?? []) {
    const why = whereaboutsGaveUp(outcome);
    if (why !== undefined) gaveUp.set(`default/${pod.name}`, why);
  }
  if (gaveUp.size > 0)
    t.diagnostic(
      `${variant.family}: ${gaveUp.size} of Whereabouts' DELs gave up: ${[...new Set(gaveUp.values())].join('; ')}`,
    );
  const leftRecords = [...(left?.allocations ?? [])]
    .filter(([, r]) => !gaveUp.has(String(r['podref'])))
    .map(([ip, r]) => `${ip} ${String(r['podref'])}`);
  const leftIPs = new Set([...(left?.allocations ?? [])].map(([ip]) => reservationName(parseIP(ip))));
  const leftReservations = (await reservationNames(ns)).filter((name) => !leftIPs.has(name));
  // The controller's orphan pass releases what they left once the pods are gone (docs/migration.md): one pass, run
  // as an operator would after the switch, must leave nothing.
  await controller?.stop(); // the pass takes the controller's Lease
  const pass = runOnce(ns, '--pending-grace', '0s');
  assert.equal(pass.code, 0, pass.stderr);
  const cleaned = await poolView(ns, cluster.poolName);

  assert.deepEqual(
    {
      failedAdds: { whereabouts: failures([...served, ...(added[0] ?? [])]), hereabouts: failures(added[1] ?? []) },
      duplicates: twice,
      interleaved,
      unrecorded,
      failedDels: failures(deleted.flat()),
      leftRecords,
      leftReservations,
      afterThePass: {
        records: [...(cleaned?.allocations ?? [])].map(([ip, r]) => `${ip} ${String(r['podref'])}`),
        reservations: await reservationNames(ns),
      },
    },
    {
      failedAdds: { whereabouts: [], hereabouts: [] },
      duplicates: [],
      interleaved: [],
      unrecorded: [],
      failedDels: [],
      leftRecords: [],
      leftReservations: [],
      afterThePass: { records: [], reservations: [] },
    },
  );
  assert.equal(holders.size, 2 * PODS + 1, 'every pod got an address');
}

describe(
  'a rolling switch between Whereabouts v0.9.4 and hereabouts on shared pools',
  { skip: 'skip' in tool ? tool.skip : false, concurrency: true },
  () => {
    for (const variant of VARIANTS.filter((v) => v.agents !== true))
      test(`${variant.family}: ${PODS} ADDs by each binary at once fail none, hand out no address twice and keep every record; DELs by the other binary leave nothing`, (t) =>
        rollingSwitch(t, variant, 'path' in tool ? tool.path : ''));
  },
);

// After the two above, not beside them: three switches at once overload a 2-core machine until Lease waits run out.
describe(
  'a rolling switch between Whereabouts v0.9.4 and hereabouts on a shared pool, through node agents with warm sets',
  { skip: 'skip' in tool ? tool.skip : false },
  () => {
    for (const variant of VARIANTS.filter((v) => v.agents === true))
      test(`${variant.family}: ${PODS} ADDs by each binary at once fail none, hand out no address twice and keep every record; DELs by the other binary leave nothing`, (t) =>
        rollingSwitch(t, variant, 'path' in tool ? tool.path : ''));
  },
);
