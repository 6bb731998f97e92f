// The node agent against the packaged executable, local store: the plugin forwards to the agent when its socket is
// there and runs in-process otherwise; the agent keeps its socket private, replaces a stale one, and survives
// clients that send garbage, too much, or nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, chmodSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { spawnAgent, startAgentProcess } from '../support/agent.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();

function conf(dataDir: string, network = 'agent', cidr = '10.91.0.0/24'): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: network,
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: cidr },
  };
}

function add(
  socket: string,
  dataDir: string,
  containerId: string,
  extraEnv: Record<string, string> = {},
): Promise<CniOutcome> {
  return runCni(bin, { command: 'ADD', containerId, netns: '/x', ifname: 'eth0', path: '/x' }, conf(dataDir), {
    extraEnv: { HEREABOUTS_AGENT_SOCKET: socket, HEREABOUTS_TIMINGS: '1', ...extraEnv },
  });
}

const addressOf = (out: CniOutcome): string | undefined =>
  (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;
/** The client prints this timing line only when the agent answered. */
const servedByAgent = (out: CniOutcome): boolean => out.stderr.includes('"in the node agent');

function allocations(dataDir: string, network = 'agent', pool = '10.91.0.0-24'): Record<string, string> {
  const stored = JSON.parse(readFileSync(join(dataDir, network, `${pool}.json`), 'utf8')) as {
    allocations: Record<string, { id: string }>;
  };
  return Object.fromEntries(Object.entries(stored.allocations).map(([k, v]) => [k, v.id]));
}

function tempDir(t: { after: (fn: () => void) => void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('with an agent, ADD and DEL are served by it: same result, socket 0600 in a 0700 directory', async (t) => {
  const dir = tempDir(t, 'hab-agent-');
  const socket = join(dir, 'run', 'agent.sock');
  const agent = await startAgentProcess(bin, socket);
  t.after(() => agent.kill());
  assert.equal(lstatSync(socket).mode & 0o777, 0o600);
  assert.equal(lstatSync(join(dir, 'run')).mode & 0o777, 0o700);
  const first = await add(socket, join(dir, 'data'), 'c1');
  assert.equal(first.code, 0, first.stdout + first.stderr);
  assert.ok(servedByAgent(first), first.stderr);
  assert.equal(addressOf(first), '10.91.0.1/24');
  const again = await add(socket, join(dir, 'data'), 'c1');
  assert.equal(again.stdout, first.stdout, 'a repeated ADD through the agent is idempotent');
  const del = await runCni(
    bin,
    { command: 'DEL', containerId: 'c1', ifname: 'eth0', path: '/x' },
    conf(join(dir, 'data')),
    {
      extraEnv: { HEREABOUTS_AGENT_SOCKET: socket },
    },
  );
  assert.equal(del.code, 0, del.stdout + del.stderr);
  assert.equal(del.stdout, '');
  assert.deepEqual(allocations(join(dir, 'data')), {});
});

test('without an agent socket, or with a stale one (no listener), the plugin runs in-process', async (t) => {
  const dir = tempDir(t, 'hab-agent-none-');
  const missing = await add(join(dir, 'nothing.sock'), join(dir, 'data'), 'c1');
  assert.equal(missing.code, 0, missing.stdout + missing.stderr);
  assert.equal(addressOf(missing), '10.91.0.1/24');
  assert.ok(!servedByAgent(missing));

  const socket = join(dir, 'run', 'agent.sock');
  const agent = await startAgentProcess(bin, socket);
  agent.kill('SIGKILL');
  await agent.exited;
  assert.ok(lstatSync(socket).isSocket(), 'a killed agent leaves its socket file behind');
  const stale = await add(socket, join(dir, 'data'), 'c2');
  assert.equal(stale.code, 0, stale.stdout + stale.stderr);
  assert.equal(addressOf(stale), '10.91.0.2/24');
  assert.ok(!servedByAgent(stale));
  assert.equal(stale.stdout.split('\n').length, 2, 'nothing but the result on stdout');

  // A new agent removes the stale socket and serves.
  const restarted = await startAgentProcess(bin, socket);
  t.after(() => restarted.kill());
  const served = await add(socket, join(dir, 'data'), 'c3');
  assert.equal(served.code, 0, served.stdout + served.stderr);
  assert.ok(servedByAgent(served), served.stderr);
  assert.equal(addressOf(served), '10.91.0.3/24');
});

test('HEREABOUTS_AGENT_SOCKET="" turns the agent off', async (t) => {
  const dir = tempDir(t, 'hab-agent-off-');
  const socket = join(dir, 'run', 'agent.sock');
  const agent = await startAgentProcess(bin, socket);
  t.after(() => agent.kill());
  const out = await add('', join(dir, 'data'), 'c1');
  assert.equal(out.code, 0, out.stdout + out.stderr);
  assert.ok(!servedByAgent(out));
});

test('the agent refuses a socket directory that is a link, writable by others, or served by another agent (exit 1)', async (t) => {
  const dir = tempDir(t, 'hab-agent-unsafe-');
  mkdirSync(join(dir, 'real'), { mode: 0o700 });
  symlinkSync(join(dir, 'real'), join(dir, 'link'));
  const linked = spawnAgent(bin, join(dir, 'link', 'agent.sock'));
  assert.equal(await linked.exited, 1);
  assert.match(linked.log(), /is a symbolic link/);

  mkdirSync(join(dir, 'open'));
  chmodSync(join(dir, 'open'), 0o777);
  const open = spawnAgent(bin, join(dir, 'open', 'agent.sock'));
  assert.equal(await open.exited, 1);
  assert.match(open.log(), /writable by group or others/);

  const socket = join(dir, 'run', 'agent.sock');
  const first = await startAgentProcess(bin, socket);
  t.after(() => first.kill());
  const second = spawnAgent(bin, socket);
  assert.equal(await second.exited, 1);
  assert.match(second.log(), /served by another agent/);
});

/** Connects, sends `bytes` (if any), and resolves with what came back once the agent closed the connection. */
function rawExchange(socket: string, bytes: Buffer | undefined): Promise<{ answer: Buffer; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const conn = connect(socket, () => {
      if (bytes !== undefined) conn.write(bytes);
    });
    conn.on('data', (b: Buffer) => chunks.push(b));
    conn.on('error', () => undefined); // a reset is a close as well
    conn.on('close', () => resolve({ answer: Buffer.concat(chunks), ms: Date.now() - started }));
    setTimeout(() => reject(new Error('the agent kept the connection open for 20 s')), 20_000).unref();
  });
}

test('garbage, a huge frame and silence get the connection closed, and other calls are unaffected', async (t) => {
  const dir = tempDir(t, 'hab-agent-garbage-');
  const socket = join(dir, 'run', 'agent.sock');
  const agent = await startAgentProcess(bin, socket);
  t.after(() => agent.kill());

  const silent = rawExchange(socket, undefined);
  const huge = Buffer.alloc(8);
  huge.writeUInt32BE(0xffff_fff0, 0);
  const garbage = Buffer.concat([Buffer.from([0, 0, 0, 12, 0, 0, 0, 8]), Buffer.from('not json')]);
  const wrongVersion = Buffer.from('{"v":2,"env":{}}');
  const versioned = Buffer.alloc(8);
  versioned.writeUInt32BE(4 + wrongVersion.length, 0);
  versioned.writeUInt32BE(wrongVersion.length, 4);
  for (const bytes of [
    huge,
    garbage,
    Buffer.concat([versioned, wrongVersion]),
    Buffer.from('GET / HTTP/1.1\r\n\r\n'),
  ]) {
    const { answer } = await rawExchange(socket, bytes);
    assert.equal(answer.length, 0, 'no answer to a malformed request');
  }
  const meanwhile = await add(socket, join(dir, 'data'), 'c1');
  assert.equal(meanwhile.code, 0, meanwhile.stdout + meanwhile.stderr);
  assert.ok(servedByAgent(meanwhile), meanwhile.stderr);
  const { ms } = await silent;
  assert.ok(ms >= 4_000, `a silent client was dropped after ${ms} ms, before its read timeout`);
  assert.equal(agent.child.exitCode, null, 'the agent survived');
  const after = await add(socket, join(dir, 'data'), 'c2');
  assert.equal(addressOf(after), '10.91.0.2/24');
  assert.match(agent.log(), /refused a request: frame of \d+ bytes exceeds \d+/);
});
