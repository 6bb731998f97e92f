// Runs a CNI plugin the way a runtime does: CNI_* environment, the request on stdin, the result on stdout.
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';

/**
 * Tests keep their data_dir, kubeconfig and log_file in temp dirs, which a node's default trust policy does not
 * allow (docs/security.md): the runtime's environment allows them, as an operator would. The tenant suite
 * (test/security/) overrides this to play by the default policy.
 */
export const TEST_TRUST_ENV: Readonly<Record<string, string>> = {
  HEREABOUTS_ALLOWED_DIRS: tmpdir(),
  // No node agent: a test's calls run in the process it spawns, whatever a cluster on this host left in
  // /run/hereabouts. Agent tests name their own socket.
  HEREABOUTS_AGENT_SOCKET: '',
};

export interface CniCall {
  /** ADD, DEL, CHECK, GC, STATUS, VERSION, or any other string for malformed-request tests. */
  readonly command: string;
  readonly containerId?: string;
  readonly netns?: string;
  readonly ifname?: string;
  readonly path?: string;
  readonly args?: string;
  /** Replaces the whole CNI_* environment (for malformed-environment tests). */
  readonly rawEnv?: Record<string, string>;
}

export interface CniOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON, or undefined when stdout is empty. Throws if stdout is not exactly one JSON document. */
  readonly json: Record<string, unknown> | undefined;
}

export function cniEnv(call: CniCall): Record<string, string> {
  if (call.rawEnv !== undefined) return { ...call.rawEnv };
  const env: Record<string, string> = { CNI_COMMAND: call.command };
  if (call.containerId !== undefined) env['CNI_CONTAINERID'] = call.containerId;
  if (call.netns !== undefined) env['CNI_NETNS'] = call.netns;
  if (call.ifname !== undefined) env['CNI_IFNAME'] = call.ifname;
  if (call.path !== undefined) env['CNI_PATH'] = call.path;
  if (call.args !== undefined) env['CNI_ARGS'] = call.args;
  return env;
}

export interface RunOptions {
  /** Run inside this network namespace (`ip netns exec`). */
  readonly inNetns?: string;
  readonly timeoutMs?: number;
  readonly extraEnv?: Record<string, string>;
}

export function runCni(binary: string, call: CniCall, stdin: unknown, options: RunOptions = {}): Promise<CniOutcome> {
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...TEST_TRUST_ENV, ...cniEnv(call), ...options.extraEnv };
  const [file, argv] =
    options.inNetns === undefined ? [binary, [] as string[]] : ['ip', ['netns', 'exec', options.inNetns, binary]];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      resolve({
        code,
        signal,
        stdout,
        stderr: Buffer.concat(err).toString('utf8'),
        json: stdout.trim() === '' ? undefined : (JSON.parse(stdout) as Record<string, unknown>),
      });
    });
    child.stdin.on('error', () => undefined); // the plugin may exit before reading stdin (e.g. env errors)
    child.stdin.end(typeof stdin === 'string' ? stdin : stdin === undefined ? '' : JSON.stringify(stdin));
  });
}

/**
 * Runs a CNI call again, at most `retries` times, while it answers code 11 after waiting out a pool lock (as kubelet
 * retries a failed sandbox call): with dozens of processes queued on one lock, a slow 2-CPU machine can make the
 * last of them wait longer than the lock's 30 s. `onRetry` counts them.
 */
export async function retryLockWaits(
  run: () => Promise<CniOutcome>,
  onRetry: () => void,
  retries = 2,
): Promise<CniOutcome> {
  for (let attempt = 0; ; attempt++) {
    const outcome = await run();
    const lockWait =
      outcome.code !== 0 && outcome.json?.['code'] === 11 && /waiting for the lock/.test(String(outcome.json['msg']));
    if (!lockWait || attempt === retries) return outcome;
    onRetry();
  }
}
