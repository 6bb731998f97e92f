// The node agent applies the same trust boundary as the plugin process: hostile configs from the generated corpus
// (corpus.ts), each run by the packaged executable in-process and then through an agent, give byte-for-byte the same
// stdout and exit code, and nothing outside the operator-allowed directory changes either way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentProcess } from '../support/agent.ts';
import { requireBinary } from '../support/paths.ts';
import { envOf, generate, makeSandbox, type HostileCase, type Sandbox } from './corpus.ts';
import { changes, protectedState } from './judge.ts';

const COUNT = 160;

function run(
  s: Sandbox,
  c: HostileCase,
  agentSocket: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = {
    ...envOf(s, c),
    HEREABOUTS_AGENT_SOCKET: agentSocket,
    HEREABOUTS_TIMINGS: '1',
  };
  return new Promise((resolve, reject) => {
    const child = spawn(requireBinary(), [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(c.stdin);
  });
}

test(
  `${COUNT} hostile configs give the same stdout and exit code in-process and through the node agent`,
  { timeout: 170_000 },
  async (t) => {
    const s = makeSandbox();
    const agentDir = mkdtempSync(join(tmpdir(), 'hab-corpus-agent-'));
    const socket = join(agentDir, 'run', 'agent.sock');
    const agent = await startAgentProcess(requireBinary(), socket);
    t.after(() => {
      agent.kill();
      rmSync(s.root, { recursive: true, force: true });
      rmSync(agentDir, { recursive: true, force: true });
    });
    const before = protectedState(s);
    const mismatches: string[] = [];
    let served = 0;
    for (const c of generate(s, COUNT)) {
      const local = await run(s, c, '');
      const remote = await run(s, c, socket);
      if (remote.stderr.includes('"in the node agent')) served++;
      if (local.stdout !== remote.stdout || local.code !== remote.code) {
        mismatches.push(
          `case ${c.id} (${c.verb}: ${c.what.join(', ')}): in-process ${local.code} ${local.stdout.slice(0, 300)} | agent ${remote.code} ${remote.stdout.slice(0, 300)}`,
        );
      }
    }
    assert.deepEqual(mismatches, []);
    // Stdin over 1 MiB never reaches the agent (the client answers as the plugin would); everything else must.
    assert.ok(served >= COUNT * 0.9, `only ${served} of ${COUNT} calls were served by the agent`);
    assert.deepEqual(changes(before, protectedState(s)), []);
    assert.equal(agent.child.exitCode, null, 'the agent survived the corpus');
  },
);
