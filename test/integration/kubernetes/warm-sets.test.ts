// Warm sets on a real kube-apiserver, with the packaged executable as agent, plugin and controller: the controller's
// word turns them on; an ADD through the agent takes a warm address and its IPPool record names the pod within a
// second; a DEL is released in a grouped write within a second; a pod running Whereabouts turns them off and the warm records go
// back to the pool's free addresses.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startAgentProcess, type AgentProcess } from '../../support/agent.ts';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { api, controlPlane, createNamespace, type ControlPlane, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { startController, type Running } from '../controller/harness.ts';
import { cniConf, podCall, poolView } from './harness.ts';

let cp: ControlPlane;
let ns: Namespace;
let agent: AgentProcess;
let controller: Running;
let socket: string;

const NODE = 'warm-node-1';
const POOL = '10.122.0.0-24';
/** Warm records' ids end in the digest of the settings they were claimed with (src/store/warm-record.ts). */
const WARM_ID = `hereabouts-warm:${NODE}/${POOL}/`;

before(async () => {
  cp = await controlPlane();
  ns = await createNamespace(cp, 'warm');
  socket = join(ns.dir, 'agent', 'agent.sock');
  agent = await startAgentProcess(requireBinary(), socket);
  // Its full pass an hour away: the simulated node is no Node object, and a pass releases a gone node's warm records
  // (node-gone) under its running agent. Only the controller's word on warm sets is wanted here.
  controller = startController(ns, '--reconcile-interval', '1h');
});

after(async () => {
  (agent as AgentProcess | undefined)?.kill();
  await (controller as Running | undefined)?.stop();
  await (ns as Namespace | undefined)?.cleanup();
});

function call(command: 'ADD' | 'DEL', containerId: string): Promise<CniOutcome> {
  return runCni(
    requireBinary(),
    podCall(command, containerId),
    cniConf(ns, NODE, { name: 'warm-net', range: '10.122.0.0/24' }),
    { extraEnv: { NODENAME: NODE, HEREABOUTS_AGENT_SOCKET: socket } },
  );
}

const addressOf = (out: CniOutcome): string => {
  assert.equal(out.code, 0, out.stdout + out.stderr);
  const ips = out.json?.['ips'] as Array<{ address: string }> | undefined;
  const address = ips?.[0]?.address.split('/')[0];
  assert.ok(address !== undefined, out.stdout);
  return address;
};

async function records(): Promise<Map<string, Record<string, unknown>>> {
  return (await poolView(ns, POOL))?.allocations ?? new Map();
}

const warmAddresses = async (): Promise<string[]> =>
  [...(await records())].filter(([, r]) => String(r['id']).startsWith(WARM_ID)).map(([a]) => a);

async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) assert.fail(`${what}: not within ${ms} ms\nagent:\n${agent.log()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
}

test("with the controller's word, ADDs take warm addresses and each pod's record names it within a second", async () => {
  await controller.waitForLine((l) => l.msg === 'warm sets: allowed', 30_000);
  addressOf(await call('ADD', 'c-first')); // the synchronous path: the agent had not read the pool yet
  await until('a warm record', async () => (await warmAddresses()).length > 0, 15_000);

  const seen = new Set<string>();
  let fromWarm = 0;
  for (let round = 0; round < 4; round++) {
    const warmBefore = new Set(await warmAddresses());
    const ids = Array.from({ length: 5 }, (_, i) => `c-${round}-${i}`);
    const outcomes = await Promise.all(ids.map((id) => call('ADD', id)));
    const answeredAt = Date.now();
    const addresses = outcomes.map(addressOf);
    for (const address of addresses) {
      assert.ok(!seen.has(address), `${address} handed out twice`);
      seen.add(address);
      if (warmBefore.has(address)) fromWarm++;
    }
    // Every pod's record under its own name, within a second of the answers.
    await until(
      `records of round ${round} named after their pods`,
      async () => {
        const now = await records();
        return ids.every((id, i) => now.get(addresses[i] ?? '')?.['podref'] === `default/${id}`);
      },
      Math.max(0, 1_000 - (Date.now() - answeredAt)),
    );
  }
  assert.ok(fromWarm > 0, 'some ADDs were answered from warm addresses');
  // No pod holds two addresses, and no address is both warm and a pod's.
  const byPod = new Map<string, number>();
  for (const r of (await records()).values()) {
    const pod = String(r['podref']);
    if (pod !== '') byPod.set(pod, (byPod.get(pod) ?? 0) + 1);
  }
  for (const [pod, n] of byPod) assert.equal(n, 1, `${pod} holds ${n} addresses`);

  // A DEL answered by the agent: the address is released in its grouped write, within a second.
  const out = await call('ADD', 'c-del');
  const address = addressOf(out);
  await until('the record of c-del', async () => (await records()).get(address)?.['podref'] === 'default/c-del', 1_000);
  assert.equal((await call('DEL', 'c-del')).code, 0);
  await until('the address released', async () => !(await records()).has(address), 1_000);
});

test('a pod running Whereabouts turns warm sets off: the warm records go back, ADDs run the synchronous path', async () => {
  assert.ok((await warmAddresses()).length > 0, 'warm records to give back');
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'whereabouts-x', namespace: ns.name },
    spec: { containers: [{ name: 'whereabouts', image: 'ghcr.io/k8snetworkplumbingwg/whereabouts:v0.9.4' }] },
  };
  const podPath = `/api/v1/namespaces/${ns.name}/pods`;
  await api(cp, 'POST', podPath, pod);
  try {
    await controller.waitForLine((l) => /^warm sets: off: Whereabouts runs/.test(l.msg), 30_000);
    await until('the warm records to go back', async () => (await warmAddresses()).length === 0, 30_000);
    const address = addressOf(await call('ADD', 'c-after'));
    assert.equal((await records()).get(address)?.['podref'], 'default/c-after', 'written before the answer');
    assert.deepEqual(await warmAddresses(), []);
  } finally {
    await api(cp, 'DELETE', `${podPath}/whereabouts-x?gracePeriodSeconds=0`);
  }
});
