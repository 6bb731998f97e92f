// Faults of a private control plane's kube-apiserver (etcd keeps running): stop it and start it again on the same
// port, or freeze it with SIGSTOP so that connections are accepted but never answered.
import { spawn } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiRequest, type ControlPlane } from './control-plane.ts';

function pidOf(cp: ControlPlane): number {
  const pid = Number(readFileSync(join(cp.dir, 'kube-apiserver.pid'), 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${cp.dir}/kube-apiserver.pid holds no pid`);
  return pid;
}

function requirePrivate(cp: ControlPlane, what: string): void {
  if (!cp.owned) throw new Error(`${what} needs a private control plane (privateControlPlane()), not the shared one`);
}

export interface StoppedApiServer {
  /** Starts kube-apiserver again with the same arguments (same port, same etcd) and waits until it is ready. */
  restart(): Promise<void>;
}

/** Kills kube-apiserver (etcd keeps running) and remembers how to start it again. */
export async function stopApiServer(cp: ControlPlane): Promise<StoppedApiServer> {
  requirePrivate(cp, 'stopApiServer');
  const pid = pidOf(cp);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  process.kill(pid, 'SIGKILL');
  while (isAlive(pid)) await sleep(20);
  return {
    async restart() {
      const [bin, ...args] = argv;
      if (bin === undefined) throw new Error('kube-apiserver had an empty command line');
      const log = openSync(join(cp.dir, 'kube-apiserver.log'), 'a');
      const child = spawn(bin, args, { detached: true, stdio: ['ignore', log, log] });
      child.unref();
      writeFileSync(join(cp.dir, 'kube-apiserver.pid'), `${child.pid}\n`);
      await waitReady(cp, 120_000);
    },
  };
}

/** SIGSTOP: connections are accepted by the kernel but never answered (requests time out). */
export function freezeApiServer(cp: ControlPlane): () => void {
  requirePrivate(cp, 'freezeApiServer');
  const pid = pidOf(cp);
  process.kill(pid, 'SIGSTOP');
  return () => process.kill(pid, 'SIGCONT');
}

export async function waitReady(cp: ControlPlane, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await apiRequest(cp, 'GET', '/readyz');
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`kube-apiserver in ${cp.dir} not ready after ${timeoutMs} ms`);
    await sleep(200);
  }
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/.test(stat);
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
