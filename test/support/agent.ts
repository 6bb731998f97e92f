// A node agent (`hereabouts agent --socket PATH`) for tests, and a pool-lock holder to stall a call inside it.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WarmStats } from '../../src/store/kubernetes/warm/warm-sets.ts';
import { embeddedNode, repoRoot } from './paths.ts';

export interface AgentProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  log(): string;
  /** Resolves with the exit code once it exited. */
  readonly exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts an agent; resolves once it listens (or rejects with its log if it exits first, or does not listen within
 * `timeoutMs`: then it is killed, so that no agent outlives a failed test).
 */
export async function startAgentProcess(
  bin: string,
  socketPath: string,
  extraArgs: readonly string[] = [],
  env: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<AgentProcess> {
  const agent = spawnAgent(bin, socketPath, extraArgs, env);
  try {
    await until('the agent to listen', () => agent.log().includes('listening on'), timeoutMs, agent.exited);
  } catch (err) {
    agent.kill();
    throw err;
  }
  return agent;
}

/** Starts an agent without waiting (for agents that must refuse to start). */
export function spawnAgent(
  bin: string,
  socketPath: string,
  extraArgs: readonly string[] = [],
  env: Record<string, string> = {},
): AgentProcess {
  // Each agent its own journal beside its socket, never the host's default directory.
  const warmDir = extraArgs.some((a) => a.startsWith('--warm-dir'))
    ? []
    : ['--warm-dir', join(dirname(socketPath), 'warm')];
  const child = spawn(bin, ['agent', '--socket', socketPath, ...warmDir, ...extraArgs], {
    env: { PATH: '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr.on('data', (b: Buffer) => (text += b.toString()));
  // 'close', not 'exit': the last lines of stderr may still be in the pipe when the process has exited.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, log: () => text, exited, kill: (signal = 'SIGKILL') => void child.kill(signal) };
}

export async function until(
  what: string,
  check: () => boolean,
  timeoutMs = 20_000,
  abort?: Promise<unknown>,
): Promise<void> {
  let aborted = false as boolean; // set by the callback below while the loop waits, not the constant false TypeScript assumes in it
  void abort?.then(() => (aborted = true));
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (aborted) throw new Error(`gave up waiting for ${what}: the process exited`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The agent's warm-set counters, as the line it logs on SIGUSR1 shows them; undefined before warm sets started. */
export async function warmStats(agent: AgentProcess): Promise<WarmStats | undefined> {
  const lines = (): number => agent.log().split('warm stats ').length;
  const seen = lines();
  agent.kill('SIGUSR1');
  await until('the warm stats line', () => lines() > seen, 10_000, agent.exited);
  const line = agent.log().split('warm stats ').at(-1)?.split('\n')[0] ?? 'null';
  return (JSON.parse(line) as WarmStats | null) ?? undefined;
}

export interface LockHolder {
  readonly child: ChildProcess;
  output(): string;
}

/**
 * A process that takes the local store's lock of `network`'s pool for `cidr` (a /24), plans its first free address
 * for container "holder", prints "planned", blocks until `goFile` exists, then commits and prints "committed".
 */
export function holdPoolLock(dataDir: string, network: string, cidr: string, goFile: string): LockHolder {
  const url = (path: string): string => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);
  const script = `
    const { LocalStore } = await import(${url('src/store/local/local-store.ts')});
    const { firstFree } = await import(${url('src/allocator/first-free.ts')});
    const { testRange } = await import(${url('test/support/memory-store.ts')});
    const { existsSync, writeSync } = await import('node:fs');
    const pool = { name: ${JSON.stringify(cidr.replace('/', '-'))}, network: ${JSON.stringify(network)}, networkNamed: false, range: testRange(${JSON.stringify(cidr)}) };
    const pause = new Int32Array(new SharedArrayBuffer(4));
    await new LocalStore(${JSON.stringify(dataDir)}).update(pool, (current) => {
      const address = firstFree(pool.range, current);
      writeSync(1, 'planned\\n');
      while (!existsSync(${JSON.stringify(goFile)})) Atomics.wait(pause, 0, 0, 20);
      return { change: { claim: { address, record: { containerId: 'holder', ifname: 'eth0', podRef: 'ns/holder' } } }, value: address };
    });
    writeSync(1, 'committed\\n');
  `;
  const child = spawn(embeddedNode, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (b: Buffer) => (text += b.toString()));
  child.stderr.on('data', (b: Buffer) => (text += b.toString()));
  return { child, output: () => text };
}
