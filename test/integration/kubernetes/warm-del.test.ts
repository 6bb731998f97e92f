// A DEL that succeeded leaves no address behind, even when the node agent died with a hand-out it never wrote to the
// pool (issue 42), on a real kube-apiserver with the packaged executable as agent, plugin and controller. The agent
// reaches the API server through a proxy that delays every byte, so that its grouped write (the rename of the
// hand-out to its pod) is still on its way when the agent is SIGKILLed; the runtime's DEL then runs in the plugin
// (the agent's socket is stale), and must settle the hand-out from the agent's journal first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startAgentProcess, warmStats, type AgentProcess } from '../../support/agent.ts';
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
import { startController, type Running } from '../controller/harness.ts';
import { cniConf, podCall, poolView } from './harness.ts';

let cp: ControlPlane;
let ns: Namespace;
let controller: Running;
let proxy: Proxy;
let slowKubeconfig: string;
const agents: AgentProcess[] = [];

const NODE = 'warm-del-node';
const POOL = '10.123.0.0-24';
const NET = { name: 'warm-del-net', range: '10.123.0.0/24' };
/** Each way: a request through the proxy takes two of these, the agent's grouped write (its rename) at least four. */
const DELAY_MS = 300;

before(async () => {
  cp = await controlPlane();
  ns = await createNamespace(cp, 'warm-del');
  // Its full pass an hour away: the simulated node is no Node object, and a pass releases a gone node's warm records
  // (node-gone) under its running agent. Only the controller's word on warm sets is wanted here.
  controller = startController(ns, '--reconcile-interval', '1h');
  proxy = await startProxy(cp, ns, { delayMs: DELAY_MS });
  slowKubeconfig = proxy.kubeconfig;
});

after(async () => {
  for (const agent of agents) agent.kill();
  (proxy as Proxy | undefined)?.stop();
  await (controller as Running | undefined)?.stop();
  await (ns as Namespace | undefined)?.cleanup();
});

function call(command: 'ADD' | 'DEL', containerId: string, socket: string, slow: boolean): Promise<CniOutcome> {
  return runCni(
    requireBinary(),
    podCall(command, containerId),
    cniConf(ns, NODE, { ...NET, ...(slow ? { kubeconfig: slowKubeconfig } : {}) }),
    { extraEnv: { NODENAME: NODE, HEREABOUTS_AGENT_SOCKET: socket }, timeoutMs: 120_000 },
  );
}

const addressOf = (out: CniOutcome): string => {
  assert.equal(out.code, 0, out.stdout + out.stderr);
  const address = (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address.split('/')[0];
  assert.ok(address !== undefined, out.stdout);
  return address;
};

const records = async (): Promise<Map<string, Record<string, unknown>>> =>
  (await poolView(ns, POOL))?.allocations ?? new Map();
const isWarm = (r: Record<string, unknown> | undefined): boolean => {
  const id = r?.['id'];
  return typeof id === 'string' && id.startsWith(`hereabouts-warm:${NODE}/${POOL}/`);
};

async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('an agent SIGKILLed before it wrote a hand-out to the pool: the DEL run by the plugin leaves no record and no reservation of the pod, and the next agent brings nothing back', async () => {
  await controller.waitForLine((l) => l.msg === 'warm sets: allowed', 30_000);
  const socket = join(ns.dir, 'agent', 'agent.sock');
  const first = await startAgentProcess(requireBinary(), socket);
  agents.push(first);
  addressOf(await call('ADD', 'c-first', socket, true)); // the synchronous path; the set fills after it
  await until('warm records', async () => [...(await records()).values()].some(isWarm), 60_000);
  // The set is filled and its writes are done: the next ADD is a hand-out whose rename is all that is left to write.
  await until(
    'warm addresses and nothing pending in the agent',
    async () => {
      const stats = await warmStats(first);
      return stats !== undefined && stats.warm > 0 && stats.pending === 0;
    },
    90_000,
  );
  const victim = await call('ADD', 'c-victim', socket, true);
  first.kill('SIGKILL'); // its rename of the hand-out is still on its way through the proxy, or not sent yet
  const address = addressOf(victim);
  await first.exited;
  await new Promise((r) => setTimeout(r, 4 * DELAY_MS)); // whatever it had sent has arrived by now
  // A hand-out, not the synchronous path (which writes the pod's record before it answers), and its rename never
  // landed.
  assert.ok(isWarm((await records()).get(address)), `${address} still shows the agent's warm record`);

  const del = await call('DEL', 'c-victim', socket, false);
  assert.equal(del.code, 0, del.stdout + del.stderr);
  const ip = address;
  const reservationPath = `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/${ns.name}/overlappingrangeipreservations/${ip}`;
  const leftBehind = async (): Promise<string[]> => {
    const found: string[] = [];
    for (const [a, r] of await records()) if (r['podref'] === 'default/c-victim') found.push(`record ${a}`);
    const reservation = await apiRequest(cp, 'GET', reservationPath);
    const spec = (reservation.body as { spec?: { podref?: string } } | undefined)?.spec;
    if (reservation.status === 200 && spec?.podref === 'default/c-victim') found.push(`reservation ${ip}`);
    return found;
  };
  assert.deepEqual(await leftBehind(), [], 'nothing of the pod once its DEL succeeded');

  // The next agent on the node replays its journal: nothing of the pod is pending there.
  const next = await startAgentProcess(requireBinary(), socket);
  agents.push(next);
  addressOf(await call('ADD', 'c-after', socket, false));
  await new Promise((r) => setTimeout(r, 2_000));
  assert.doesNotMatch(next.log(), /hand-out\(s\) and release\(s\) to write/, next.log());
  assert.deepEqual(await leftBehind(), [], 'still nothing of the pod after the next agent started');
});
