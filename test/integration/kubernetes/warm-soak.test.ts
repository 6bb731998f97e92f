// A soak of issue 42's promise, on a real kube-apiserver with the packaged executable as agents, plugins and
// controller: three nodes with agents and warm sets on, pods coming and going on all of them while the agents are
// SIGKILLed (and started again), stalled (SIGSTOP) and handed over (a new agent started while the old one stops, as a
// rolling update does), answers of API requests are lost on the way (a proxy drops the connection instead of the
// answer), and plugin processes are cut off mid-ADD or mid-DEL. Every pod is DELed until its DEL succeeds, as kubelet
// does. Afterwards no record of any of them is left and the controller (its full pass an hour away) released none:
// the DELs did it all; no address was held by two live pods; and the reservations a DEL could not delete go with one
// pass of the controller's reservation cleanup.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnAgent, startAgentProcess, warmStats, type AgentProcess } from '../../support/agent.ts';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import {
  apiRequest,
  controlPlane,
  createNamespace,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { startProxy, type Proxy } from '../../support/proxy.ts';
import { runOnce, startController, type Running } from '../controller/harness.ts';
import { cniConf, poolView } from './harness.ts';

const NODES = ['soak-a', 'soak-b', 'soak-c'];
const POOL = '10.124.0.0-24';
const NET = { name: 'warm-soak-net', range: '10.124.0.0/24' };
/** How long pods come and go under faults, and how many at once. */
const SOAK_MS = 45_000;
const WORKERS = 6;
/** Of every chunk the API server sends to the nodes: dropped with its connection (a lost answer). */
const LOSE_RATE = 0.01;

let cp: ControlPlane;
let ns: Namespace;
let controller: Running;
let proxy: Proxy;
let lossyKubeconfig: string;
const agents = new Map<string, AgentProcess>();
const retired: AgentProcess[] = [];

const socketOf = (node: string): string => join(ns.dir, node, 'agent.sock');

before(async () => {
  cp = await controlPlane();
  ns = await createNamespace(cp, 'warm-soak');
  // Its full pass (orphans, reservations) an hour away: whatever is left at the end, the DELs left.
  controller = startController(ns, '--reconcile-interval', '1h');
  proxy = await startProxy(cp, ns, { delayMs: 0, loseRate: LOSE_RATE });
  lossyKubeconfig = proxy.kubeconfig;
  for (const node of NODES) mkdirSync(join(ns.dir, node), { recursive: true });
});

after(async () => {
  for (const agent of [...agents.values(), ...retired]) agent.kill();
  (proxy as Proxy | undefined)?.stop();
  await (controller as Running | undefined)?.stop();
  await (ns as Namespace | undefined)?.cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T;

function call(command: 'ADD' | 'DEL', pod: string, node: string, timeoutMs: number): Promise<CniOutcome> {
  return runCni(
    requireBinary(),
    {
      command,
      path: '/opt/cni/bin',
      containerId: `c-${pod}`,
      netns: `/var/run/netns/${pod}`,
      ifname: 'eth0',
      args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
    },
    cniConf(ns, node, { ...NET, kubeconfig: lossyKubeconfig }),
    { extraEnv: { NODENAME: node, HEREABOUTS_AGENT_SOCKET: socketOf(node) }, timeoutMs },
  );
}

/** A plugin process: now and then cut off (SIGKILL) after a random moment, as a runtime's timeout or crash does. */
const callMaybeCut = (command: 'ADD' | 'DEL', pod: string, node: string): Promise<CniOutcome> =>
  call(command, pod, node, Math.random() < 0.1 ? 30 + Math.random() * 400 : 150_000);

const addressOf = (out: CniOutcome): string | undefined =>
  (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address.split('/')[0];

test('pods come and go on three nodes while agents are killed, stalled and handed over, answers are lost and plugins cut off: every DEL that succeeded left nothing behind', async () => {
  await controller.waitForLine((l) => l.msg === 'warm sets: allowed', 30_000);
  for (const node of NODES) agents.set(node, await startAgentProcess(requireBinary(), socketOf(node)));

  const live = new Map<string, string>(); // address -> pod, of the pods whose ADD answered it, until their DEL
  const tearingDown = new Map<string, string>(); // address -> pod, of the pods whose DEL has not succeeded yet
  const duplicates: string[] = [];
  const figures = {
    adds: 0,
    failedAdds: 0,
    dels: 0,
    delRetries: 0,
    kills: 0,
    stalls: 0,
    handovers: 0,
    handedOut: 0,
    reservationsForThePass: 0,
    /** ADDs answered an address whose previous pod's DEL had begun but not yet succeeded (a cut-off DEL's write). */
    reusedDuringTeardown: 0,
  };
  /** Counts the ADDs an agent answered from its warm set, before it goes. */
  const count = async (agent: AgentProcess): Promise<void> => {
    figures.handedOut += (await warmStats(agent))?.handedOut ?? 0;
  };
  let stop = false;
  /** Read through a call: the flag changes while the workers and the chaos loop await. */
  const stopped = (): boolean => stop;

  /** DELs until one succeeds, as kubelet does: the pod's attachment then holds nothing. */
  const delUntilDone = async (pod: string, node: string): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const out = await callMaybeCut('DEL', pod, node);
      if (out.code === 0) {
        figures.dels++;
        return;
      }
      figures.delRetries++;
      if (attempt > 200) assert.fail(`DEL of ${pod} never succeeded: ${out.stdout}${out.stderr}`);
      await sleep(200);
    }
  };

  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !stopped(); i++) {
      const pod = `s-${String(w)}-${String(i)}`;
      const node = pick(NODES);
      const out = await callMaybeCut('ADD', pod, node);
      figures.adds++;
      const address = out.code === 0 ? addressOf(out) : undefined;
      if (address !== undefined) {
        const other = live.get(address);
        if (other !== undefined) duplicates.push(`${address}: ${other} and ${pod}`);
        if (tearingDown.has(address)) figures.reusedDuringTeardown++;
        live.set(address, pod);
        await sleep(Math.random() * 1_500);
      } else figures.failedAdds++;
      // The pod's address is its own until its teardown begins: once the runtime calls DEL it no longer uses the
      // interface (CNI), and a first DEL cut off after its write landed has freed the address for the next ADD while
      // the runtime still retries it (counted, not a duplicate).
      if (address !== undefined && live.get(address) === pod) live.delete(address);
      if (address !== undefined) tearingDown.set(address, pod);
      await delUntilDone(pod, node);
      if (address !== undefined && tearingDown.get(address) === pod) tearingDown.delete(address);
    }
  };

  const chaos = async (): Promise<void> => {
    while (!stopped()) {
      await sleep(1_500 + Math.random() * 2_000);
      if (stopped()) break;
      const node = pick(NODES);
      const agent = agents.get(node);
      if (agent === undefined) continue;
      const action = pick(['kill', 'stall', 'handover'] as const);
      if (action === 'kill') {
        // SIGKILL; for a moment no agent serves the node (its calls run in the plugin), then one starts again.
        await count(agent);
        agent.kill('SIGKILL');
        await agent.exited;
        figures.kills++;
        await sleep(Math.random() * 2_000);
        agents.set(node, await startAgentProcess(requireBinary(), socketOf(node)));
      } else if (action === 'stall') {
        agent.kill('SIGSTOP');
        figures.stalls++;
        await sleep(500 + Math.random() * 2_000);
        agent.kill('SIGCONT');
      } else {
        // A rolling update: the new pod's agent starts while the old one is told to stop; as the installer's agent
        // keeper does, a start refused while the old agent still serves the socket is tried again.
        await count(agent);
        let next = spawnAgent(requireBinary(), socketOf(node));
        agent.kill('SIGTERM');
        retired.push(agent);
        const deadline = Date.now() + 30_000;
        while (!next.log().includes('listening on')) {
          if (Date.now() > deadline) assert.fail(`the new agent of ${node} did not listen:\n${next.log()}`);
          if (next.child.exitCode !== null) {
            retired.push(next);
            await sleep(200);
            next = spawnAgent(requireBinary(), socketOf(node));
          }
          await sleep(50);
        }
        await agent.exited;
        agents.set(node, next);
        figures.handovers++;
      }
    }
  };

  const running = [...Array.from({ length: WORKERS }, (_, w) => worker(w)), chaos()];
  await sleep(SOAK_MS);
  stop = true;
  await Promise.all(running);

  // The agents' pending writes land (each asked until it reports none pending; lost answers go on meanwhile).
  const settled = Date.now() + 60_000;
  for (const [node, agent] of agents) {
    await count(agent);
    for (;;) {
      const stats = await warmStats(agent);
      if (stats === undefined || stats.pending === 0) break;
      if (Date.now() > settled) assert.fail(`the agent of ${node} still has ${stats.pending} pending writes`);
      await sleep(200);
    }
  }
  const records = (await poolView(ns, POOL))?.allocations ?? new Map<string, Record<string, unknown>>();
  const leftRecords = [...records]
    .filter(([, r]) => String(r['podref']).startsWith('default/s-'))
    .map(([a, r]) => `${a} ${String(r['podref'])}`);
  const soakReservations = async (): Promise<string[]> => {
    const listed = await apiRequest(
      cp,
      'GET',
      `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/${ns.name}/overlappingrangeipreservations`,
    );
    const items = (listed.body as { items?: Array<{ metadata: { name: string }; spec: { podref?: string } }> }).items;
    return (items ?? [])
      .filter((r) => (r.spec.podref ?? '').startsWith('default/s-'))
      .map((r) => `${r.metadata.name} ${r.spec.podref ?? ''}`);
  };
  // A reservation a DEL could not delete (its plugin cut off between its pool write and the delete, a failed ADD's
  // create whose answer was lost) goes with the controller's reservation pass (docs/safety.md): counted, then that
  // pass is run once and must leave none.
  figures.reservationsForThePass = (await soakReservations()).length;
  const released = controller.lines().filter((l) => /^released .* of default\/s-/.test(l.msg));
  await controller.stop(); // the pass below takes the controller's Lease
  const pass = runOnce(ns);
  assert.equal(pass.code, 0, pass.stderr);
  const leftReservations = await soakReservations();
  console.log(`# soak: ${JSON.stringify(figures)}`);
  assert.ok(
    figures.adds > 50 && figures.handedOut > 10 && figures.kills + figures.stalls + figures.handovers > 5,
    JSON.stringify(figures),
  );
  assert.deepEqual(
    { duplicates, leftRecords, leftReservations, releasedByController: released.map((l) => l.msg) },
    { duplicates: [], leftRecords: [], leftReservations: [], releasedByController: [] },
  );
});
