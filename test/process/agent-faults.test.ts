// The node agent under faults, local store, packaged executable. Once a call was handed to the agent the client
// never runs it itself: a killed, frozen or late agent is CNI code 11, and whatever the agent did with the call, a
// runtime's retry neither duplicates an address nor leaks one it cannot reclaim. A call is stalled inside the agent
// by a process holding the pool's lock (the agent's call waits on it, and says so in its debug log).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { holdPoolLock, startAgentProcess, until } from '../support/agent.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();
const NETWORK = 'stall';
const CIDR = '10.92.0.0/24';

function conf(dataDir: string, logFile: string, network = NETWORK, cidr = CIDR): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: network,
    type: 'bridge',
    ipam: {
      type: 'hereabouts',
      datastore: 'local',
      data_dir: dataDir,
      range: cidr,
      log_file: logFile,
      log_level: 'debug',
    },
  };
}

interface Setup {
  readonly dir: string;
  readonly dataDir: string;
  readonly logFile: string;
  readonly socket: string;
  readonly goFile: string;
}

function setup(t: { after: (fn: () => void) => void }): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'hab-agent-fault-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    dataDir: join(dir, 'data'),
    logFile: join(dir, 'plugin.log'),
    socket: join(dir, 'run', 'agent.sock'),
    goFile: join(dir, 'go'),
  };
}

function add(
  s: Setup,
  containerId: string,
  extraEnv: Record<string, string> = {},
  network = NETWORK,
  cidr = CIDR,
): Promise<CniOutcome> {
  return runCni(
    bin,
    { command: 'ADD', containerId, netns: '/x', ifname: 'eth0', path: '/x' },
    conf(s.dataDir, s.logFile, network, cidr),
    {
      extraEnv: { HEREABOUTS_AGENT_SOCKET: s.socket, ...extraEnv },
      timeoutMs: 60_000,
    },
  );
}

const addressOf = (out: CniOutcome): string | undefined =>
  (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;

function allocations(s: Setup): Record<string, string> {
  const file = join(s.dataDir, NETWORK, `${CIDR.replace('/', '-')}.json`);
  if (!existsSync(file)) return {};
  const stored = JSON.parse(readFileSync(file, 'utf8')) as { allocations: Record<string, { id: string }> };
  return Object.fromEntries(Object.entries(stored.allocations).map(([k, v]) => [k, v.id]));
}

/** The pool's lock held by another process (writing s.goFile lets it go), and an agent on s.socket. */
async function lockedPoolAndAgent(
  t: { after: (fn: () => void) => void },
  agentArgs: string[] = [],
): Promise<{
  s: Setup;
  agent: Awaited<ReturnType<typeof startAgentProcess>>;
  holder: ReturnType<typeof holdPoolLock>;
}> {
  const s = setup(t);
  const holder = holdPoolLock(s.dataDir, NETWORK, CIDR, s.goFile);
  t.after(() => holder.child.kill('SIGKILL'));
  await until('the holder to take the lock', () => holder.output().includes('planned'));
  const agent = await startAgentProcess(bin, s.socket, agentArgs);
  t.after(() => agent.kill());
  return { s, agent, holder };
}

/** The agent's call for `containerId` is waiting on the held lock. */
const waitingOnLock = (s: Setup, containerId: string) => (): boolean =>
  existsSync(s.logFile) &&
  readFileSync(s.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { verb?: string; container?: string; msg?: string })
    .some((l) => l.verb === 'ADD' && l.container === containerId && /is held by pid \d+/.test(l.msg ?? ''));

function assertNoAnswer(out: CniOutcome, why: RegExp): void {
  assert.notEqual(out.code, 0);
  assert.equal(out.json?.['code'], 11, out.stdout);
  assert.match(String(out.json['msg']), /^node agent did not answer: /);
  assert.match(String(out.json['msg']), why);
  assert.equal(out.json['cniVersion'], '1.0.0', "rendered in the request's version");
}

test(
  'agent SIGKILLed mid-call: the client answers code 11 and does not run the call itself; the retry duplicates nothing',
  { timeout: 60_000 },
  async (t) => {
    const { s, agent, holder } = await lockedPoolAndAgent(t);
    const call = add(s, 'victim');
    await until("the agent's call to wait on the lock", waitingOnLock(s, 'victim'));
    agent.kill('SIGKILL');
    const out = await call;
    assertNoAnswer(out, /closed without an answer|connection failed/);
    writeFileSync(s.goFile, '');
    await until('the holder to commit', () => holder.output().includes('committed'));
    assert.deepEqual(
      allocations(s),
      { '1': 'holder' },
      'the killed call committed nothing, and the client ran nothing',
    );
    // kubelet retries: the socket is stale now, so the plugin runs in-process.
    const retry = await add(s, 'victim');
    assert.equal(retry.code, 0, retry.stdout + retry.stderr);
    assert.equal(addressOf(retry), '10.92.0.2/24');
    assert.deepEqual(allocations(s), { '1': 'holder', '2': 'victim' });
  },
);

test(
  "agent SIGSTOPped before it read the call: code 11 at the client's deadline, and the resumed agent drops the call",
  { timeout: 60_000 },
  async (t) => {
    const s = setup(t);
    const agent = await startAgentProcess(bin, s.socket);
    t.after(() => agent.kill());
    agent.kill('SIGSTOP');
    // The client answers on its own deadline (that message is its answer timer's, armed from
    // HEREABOUTS_AGENT_TIMEOUT_MS) while the agent is still stopped; a client that waited on regardless would hang
    // until the test's timeout.
    const out = await add(s, 'frozen', { HEREABOUTS_AGENT_TIMEOUT_MS: '1000' });
    assertNoAnswer(out, /no answer within 1000 ms/);
    agent.kill('SIGCONT');
    await until('the agent to drop the abandoned call', () =>
      agent.log().includes('dropped a request: its client went away'),
    );
    assert.deepEqual(allocations(s), {}, 'nothing committed for a call the client reported as failed');
    const retry = await add(s, 'frozen');
    assert.equal(retry.code, 0, retry.stdout + retry.stderr);
    assert.equal(addressOf(retry), '10.92.0.1/24');
  },
);

test(
  'a call that completes in the agent after the client gave up: the retried ADD gets the same address, DEL frees it',
  { timeout: 60_000 },
  async (t) => {
    const { s } = await lockedPoolAndAgent(t);
    const out = await add(s, 'late', { HEREABOUTS_AGENT_TIMEOUT_MS: '1500' });
    assertNoAnswer(out, /no answer within 1500 ms/);
    assert.ok(waitingOnLock(s, 'late')(), 'the call had started in the agent');
    writeFileSync(s.goFile, '');
    await until('the agent to commit the late call', () => allocations(s)['2'] === 'late');
    const retry = await add(s, 'late');
    assert.equal(retry.code, 0, retry.stdout + retry.stderr);
    assert.equal(addressOf(retry), '10.92.0.2/24', 'the retry returns the address the late call committed');
    assert.deepEqual(allocations(s), { '1': 'holder', '2': 'late' });
    const del = await runCni(
      bin,
      { command: 'DEL', containerId: 'late', ifname: 'eth0', path: '/x' },
      conf(s.dataDir, s.logFile),
      {
        extraEnv: { HEREABOUTS_AGENT_SOCKET: s.socket },
      },
    );
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.deepEqual(allocations(s), { '1': 'holder' });
  },
);

test(
  'calls for different pools run concurrently in the agent: one waiting on a lock does not hold up another',
  { timeout: 60_000 },
  async (t) => {
    const { s } = await lockedPoolAndAgent(t);
    let waiterDone = false;
    const waiter = add(s, 'waiter').then((out) => {
      waiterDone = true;
      return out;
    });
    await until('the call to wait on the lock', waitingOnLock(s, 'waiter'));
    const other = await add(s, 'other', {}, 'elsewhere', '10.93.0.0/24');
    assert.equal(other.code, 0, other.stdout + other.stderr);
    assert.equal(addressOf(other), '10.93.0.1/24');
    assert.equal(waiterDone, false, "the other pool's call finished while the first still waits");
    writeFileSync(s.goFile, '');
    const first = await waiter;
    assert.equal(first.code, 0, first.stdout + first.stderr);
    assert.equal(addressOf(first), '10.92.0.2/24');
  },
);

test(
  'a call the agent has not finished by --deadline-seconds is answered with code 11; it completes later and the retry finds it',
  { timeout: 60_000 },
  async (t) => {
    const { s } = await lockedPoolAndAgent(t, ['--deadline-seconds', '1']);
    const out = await add(s, 'slow');
    assertNoAnswer(out, /the call did not finish within 1000 ms/);
    writeFileSync(s.goFile, '');
    await until('the slow call to commit', () => allocations(s)['2'] === 'slow');
    const retry = await add(s, 'slow');
    assert.equal(addressOf(retry), '10.92.0.2/24');
  },
);

test(
  '--max-concurrent bounds the calls in flight: the next one waits for a slot (and is dropped if its client gave up meanwhile)',
  { timeout: 60_000 },
  async (t) => {
    const { s, agent } = await lockedPoolAndAgent(t, ['--max-concurrent', '1']);
    const first = add(s, 'first');
    await until('the first call to wait on the lock', waitingOnLock(s, 'first'));
    // A call for another pool has nothing to wait for but the slot: its client's deadline passes without an answer...
    const second = await add(s, 'second', { HEREABOUTS_AGENT_TIMEOUT_MS: '1000' }, 'elsewhere', '10.93.0.0/24');
    assertNoAnswer(second, /no answer within 1000 ms/);
    writeFileSync(s.goFile, '');
    assert.equal((await first).code, 0);
    // ...and once the first call frees the slot, the agent finds that the second waited there past its client: it was
    // never started, so it is dropped, not run.
    await until('the agent to drop the second call', () =>
      agent.log().includes('dropped a request: its client went away before it started'),
    );
    assert.equal(existsSync(join(s.dataDir, 'elsewhere')), false, 'nothing was written for the dropped call');
    const retry = await add(s, 'second', {}, 'elsewhere', '10.93.0.0/24');
    assert.equal(retry.code, 0, retry.stdout + retry.stderr);
    assert.equal(addressOf(retry), '10.93.0.1/24');
  },
);
