// A link between the simulated nodes and the API server with delay and lost answers (scripts/bench/delay-proxy.ts),
// and a kubeconfig of a namespace that goes through it.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlane, Namespace } from './control-plane.ts';
import { repoRoot } from './paths.ts';

export interface Proxy {
  /** `ns`'s kubeconfig, through the proxy. */
  readonly kubeconfig: string;
  stop(): void;
}

export async function startProxy(
  cp: ControlPlane,
  ns: Namespace,
  options: { readonly delayMs: number; readonly loseRate?: number },
): Promise<Proxy> {
  const target = new URL(cp.url);
  const args = ['--target', `${target.hostname}:${target.port}`, '--delay-ms', String(options.delayMs)];
  if (options.loseRate !== undefined) args.push('--lose-rate', String(options.loseRate));
  const child = spawn(process.execPath, [join(repoRoot, 'scripts/bench/delay-proxy.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening 127\.0\.0\.1:(\d+)/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the proxy exited (${String(code)})`)));
  });
  const kubeconfig = join(ns.dir, `kubeconfig-proxy-${port}`);
  const text = readFileSync(ns.kubeconfig, 'utf8').replace(cp.url, `https://127.0.0.1:${port}`);
  writeFileSync(kubeconfig, text, { mode: 0o600 });
  return { kubeconfig, stop: () => void child.kill() };
}
