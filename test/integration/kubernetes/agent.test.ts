// The Kubernetes store through the node agent, packaged executable, real kube-apiserver: the agent serves ADD and DEL
// with the caller's NODENAME (not its own environment), keeps one API connection open across calls (a TCP proxy in
// front of the API server counts connections), and still reads the token file on every call (a rotated token takes
// effect on the next call over the same connection).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startAgentProcess, type AgentProcess } from '../../support/agent.ts';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import {
  controlPlane,
  createNamespace,
  kubeconfigFor,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, podCall, poolView } from './harness.ts';

let cp: ControlPlane;
let ns: Namespace;
let agent: AgentProcess;
let proxy: CountingProxy;
let socket: string;
let tokenFile: string;
let kubeconfig: string;

interface CountingProxy {
  url: string;
  connections: number;
  /** Bytes from clients held back while paused (the API server sees nothing of them until resume). */
  held: number;
  pause(): void;
  resume(): void;
  close(): void;
}

/** A transparent TCP proxy (TLS passes through) that counts the connections clients open, and can hold their bytes. */
async function countingProxy(upstream: string): Promise<CountingProxy> {
  const target = new URL(upstream);
  const open = new Set<Socket>();
  const waiting: Array<() => void> = [];
  let paused = false;
  const server: Server = createServer((client) => {
    state.connections++;
    const up = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [client, up]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => (client.destroy(), up.destroy()));
    }
    client.on('data', (chunk: Buffer) => {
      if (!paused) return void up.write(chunk);
      state.held += chunk.length;
      waiting.push(() => up.write(chunk));
    });
    client.on('end', () => (paused ? waiting.push(() => up.end()) : up.end()));
    up.pipe(client);
  });
  const state: CountingProxy = {
    url: '',
    connections: 0,
    held: 0,
    pause: () => void (paused = true),
    resume: () => {
      paused = false;
      for (const release of waiting.splice(0)) release();
    },
    close: () => {
      for (const s of open) s.destroy();
      server.close();
    },
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  state.url = `https://127.0.0.1:${address.port}`;
  return state;
}

before(async () => {
  cp = await controlPlane();
  ns = await createNamespace(cp, 'agent');
  proxy = await countingProxy(cp.url);
  const dir = join(ns.dir, 'agent');
  mkdirSync(dir, { recursive: true });
  tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${cp.token}\n`, { mode: 0o600 });
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor({ ...cp, url: proxy.url }, ns.name, { tokenFile }), { mode: 0o600 });
  socket = join(dir, 'run', 'agent.sock');
  // The agent's own environment names no node: the node name must come with each call.
  agent = await startAgentProcess(requireBinary(), socket);
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  (agent as AgentProcess | undefined)?.kill();
  (proxy as CountingProxy | undefined)?.close();
  await (ns as Namespace | undefined)?.cleanup();
});

const NODE = 'agent-node-1';

function call(
  command: 'ADD' | 'DEL',
  conf: Record<string, unknown>,
  containerId: string,
  agentSocket = socket,
): Promise<CniOutcome> {
  return runCni(requireBinary(), podCall(command, containerId), conf, {
    extraEnv: { NODENAME: NODE, HEREABOUTS_AGENT_SOCKET: agentSocket, HEREABOUTS_TIMINGS: '1' },
  });
}

const conf = (name: string, range: string) => cniConf(ns, NODE, { name, range, kubeconfig });
const addressOf = (out: CniOutcome) => (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;
const servedByAgent = (out: CniOutcome): boolean => out.stderr.includes('"in the node agent');

test("ADD and DEL through the agent: the IPPool records the caller's NODENAME", async () => {
  const c = conf('agent-verbs', '10.120.0.0/24');
  const out = await call('ADD', c, 'c-agent');
  assert.equal(out.code, 0, out.stdout + out.stderr);
  assert.ok(servedByAgent(out), out.stderr);
  assert.equal(addressOf(out), '10.120.0.1/24');
  const entry = (await poolView(ns, '10.120.0.0-24'))?.allocations.get('10.120.0.1');
  assert.deepEqual([entry?.['id'], entry?.['podref'], entry?.['node']], ['c-agent', 'default/c-agent', NODE]);
  const del = await call('DEL', c, 'c-agent');
  assert.equal(del.code, 0, del.stdout + del.stderr);
  assert.equal((await poolView(ns, '10.120.0.0-24'))?.allocations.size, 0);
});

test('the agent keeps its API connection across calls; each plugin process opens its own', async () => {
  const c = conf('agent-conn', '10.121.0.0/24');
  assert.equal((await call('ADD', c, 'warm')).code, 0);
  const before = proxy.connections;
  for (const id of ['k1', 'k2', 'k3']) {
    const out = await call('ADD', c, id);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.ok(servedByAgent(out));
  }
  assert.equal(proxy.connections, before, 'the agent opened new API connections');
  const inProcess = await call('ADD', c, 'p1', '');
  assert.equal(inProcess.code, 0, inProcess.stdout + inProcess.stderr);
  assert.ok(proxy.connections > before, 'a plugin process without the agent connects anew');
});

test("a rotated token takes effect on the next call through the agent's kept connection", async () => {
  const c = conf('agent-token', '10.122.0.0/24');
  assert.equal((await call('ADD', c, 't0')).code, 0);
  writeFileSync(tokenFile, 'not-a-valid-token\n');
  try {
    const rejected = await call('ADD', c, 't1');
    assert.notEqual(rejected.code, 0, 'the old token was still used');
    assert.match(String(rejected.json?.['msg']), /401|Unauthorized/i);
  } finally {
    writeFileSync(tokenFile, `${cp.token}\n`);
  }
  const again = await call('ADD', c, 't1');
  assert.equal(again.code, 0, again.stdout + again.stderr);
  assert.equal(addressOf(again), '10.122.0.2/24');
});

test('agent SIGKILLed while its API request hangs: code 11, the retry (in-process, stale socket) gets one address, a new agent takes over', async () => {
  const c = conf('agent-kill', '10.123.0.0/24');
  assert.equal((await call('ADD', c, 'before-kill')).code, 0);
  proxy.pause();
  let out: CniOutcome;
  try {
    const pending = call('ADD', c, 'killed');
    for (let i = 0; proxy.held === 0; i++) {
      if (i > 500) throw new Error('the agent sent nothing to the API server');
      await new Promise((r) => setTimeout(r, 20));
    }
    agent.kill('SIGKILL');
    out = await pending;
  } finally {
    proxy.resume();
  }
  assert.equal(out.json?.['code'], 11, out.stdout);
  assert.match(String(out.json['msg']), /^node agent did not answer: /);
  const retry = await call('ADD', c, 'killed');
  assert.equal(retry.code, 0, retry.stdout + retry.stderr);
  assert.ok(!retry.stderr.includes('"in the node agent'), 'the socket is stale: the plugin ran in-process');
  assert.equal(addressOf(retry), '10.123.0.2/24');
  const held = [
    ...((await poolView(ns, '10.123.0.0-24'))?.allocations ?? new Map<string, Record<string, unknown>>()).entries(),
  ]
    .map(([ip, e]) => `${ip}=${String(e['id'])}`)
    .sort();
  assert.deepEqual(held, ['10.123.0.1=before-kill', '10.123.0.2=killed']);

  // A new agent replaces the stale socket; started with HEREABOUTS_TIMINGS=1 in its own environment, it still does not
  // collect the per-process timing report across calls (it would print it at exit).
  agent = await startAgentProcess(requireBinary(), socket, [], { HEREABOUTS_TIMINGS: '1' });
  const served = await call('ADD', c, 'after-kill');
  assert.ok(served.stderr.includes('"in the node agent'), served.stderr);
  assert.equal(addressOf(served), '10.123.0.3/24');
  agent.kill('SIGTERM');
  assert.equal(await agent.exited, 0);
  assert.ok(!agent.log().includes('hereabouts-timings'), agent.log());
});
