// A node agent in another pid namespace than the plugin (a DaemonSet pod without hostPID) cannot judge the host's
// lock holders by their pids: it would take a stalled holder's lock by age and hand out the address the holder is
// about to commit. It must not run such calls: the plugin runs them itself, where the holder is seen alive.
// The agent runs in a real pid namespace of its own (unshare, as root); the lock holder and the plugin run here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { holdPoolLock, until } from '../support/agent.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();
/** The executable's lock timing for a holder it cannot judge by pid: a lock untouched this long is taken over. */
const STALE_MS = 10_000;

const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'true']).status === 0;

test(
  'an agent in another pid namespace does not run the call: the plugin runs it and waits for the live holder',
  { timeout: 90_000, skip: canUnshare ? false : 'no pid namespace of our own here (needs root and unshare)' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'hab-pidns-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    const logFile = join(dir, 'add.log');
    const goFile = join(dir, 'go');
    const socket = join(dir, 'run', 'agent.sock');

    const agent = spawn(
      'unshare',
      [
        '--pid',
        '--fork',
        '--mount-proc',
        '--kill-child',
        bin,
        'agent',
        '--socket',
        socket,
        '--warm-dir',
        join(dirname(socket), 'warm'),
      ],
      {
        env: { PATH: '/usr/bin:/bin' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let agentLog = '';
    agent.stderr.on('data', (b: Buffer) => (agentLog += b.toString()));
    const agentExited = new Promise((resolve) => agent.on('close', resolve));
    t.after(() => agent.kill('SIGKILL'));
    await until('the agent to listen', () => agentLog.includes('listening on'), 15_000, agentExited);

    const holder = holdPoolLock(dataDir, 'pidns', '10.78.0.0/24', goFile);
    t.after(() => holder.child.kill('SIGKILL'));
    await until('the holder to plan', () => holder.output().includes('planned'));
    const lockedAt = Date.now();

    let done: CniOutcome | undefined;
    const add = runCni(
      bin,
      { command: 'ADD', containerId: 'waiter', netns: '/x', ifname: 'eth0', path: '/x' },
      {
        cniVersion: '1.0.0',
        name: 'pidns',
        type: 'bridge',
        ipam: {
          type: 'hereabouts',
          datastore: 'local',
          data_dir: dataDir,
          range: '10.78.0.0/24',
          log_file: logFile,
          log_level: 'debug',
        },
      },
      { timeoutMs: 60_000, extraEnv: { HEREABOUTS_AGENT_SOCKET: socket, HEREABOUTS_TIMINGS: '1' } },
    ).then((out) => (done = out));
    await until(
      'the ADD to wait on the lock',
      () => done !== undefined || (existsSync(logFile) && /is held by pid \d+/.test(readFileSync(logFile, 'utf8'))),
    );
    // The holder stays stalled (it refreshes nothing) past the window after which a holder that cannot be judged by
    // its pid counts as gone.
    await new Promise((r) => setTimeout(r, Math.max(0, lockedAt + STALE_MS + 1_500 - Date.now())));
    assert.equal(
      done,
      undefined,
      `the ADD took the stalled holder's lock: ${JSON.stringify(done?.json)}\n${readFileSync(logFile, 'utf8')}`,
    );
    writeFileSync(goFile, '');
    await until('the holder to commit', () => holder.output().includes('committed'));
    const out = await add;
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.deepEqual(
      (out.json?.['ips'] as Array<{ address: string }>).map((ip) => ip.address),
      ['10.78.0.2/24'],
      'the holder committed 10.78.0.1',
    );
    assert.ok(!out.stderr.includes('"in the node agent'), 'the agent did not run the call');
    assert.match(out.stderr, /the node agent did not run this call/);
    assert.match(agentLog, /from pid namespace pid:\[\d+\].*runs in pid:\[\d+\]/);
  },
);
