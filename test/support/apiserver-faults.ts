// Faults of a private control plane's kube-apiserver (etcd keeps running): stop it and start it again on the same
// port, or freeze it with SIGSTOP so that connections are accepted but never answered.
import { spawn } from 'node:child_process';
import { openSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
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
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a) => a !== '');
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

/**
 * SIGSTOP: connections are accepted by the kernel but never answered (requests time out). Returns only once the
 * process that listens on the control plane's port is that pid and every one of its threads is stopped: kill()
 * returns before a thread busy in the kernel has stopped, and a server that still answers makes a test pass or fail
 * by chance.
 */
export async function freezeApiServer(cp: ControlPlane): Promise<() => void> {
  requirePrivate(cp, 'freezeApiServer');
  const pid = pidOf(cp);
  const port = Number(new URL(cp.url).port);
  const listener = listenerOf(port);
  if (listener !== pid)
    throw new Error(
      `port ${port} is held by pid ${listener ?? 'none'}, not by kube-apiserver pid ${pid} (${cp.dir}/kube-apiserver.pid)`,
    );
  process.kill(pid, 'SIGSTOP');
  const deadline = Date.now() + 10_000;
  while (!allThreadsStopped(pid)) {
    if (Date.now() > deadline) throw new Error(`kube-apiserver pid ${pid} did not stop within 10 s of SIGSTOP`);
    await sleep(5);
  }
  return () => process.kill(pid, 'SIGCONT');
}

/** The pid that owns the listening TCP socket on 127.0.0.1:<port> (from /proc/net/tcp and the fds of processes). */
function listenerOf(port: number): number | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    // local_address is "IP:PORT" in hex, st 0A is LISTEN, field 9 is the socket inode
    if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9] !== undefined) inodes.add(fields[9]);
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m?.[1] !== undefined && inodes.has(m[1])) return Number(entry);
    }
  }
  return undefined;
}

function allThreadsStopped(pid: number): boolean {
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue; // the thread exited
    }
    const state = /^\d+ \(.*\) (\S)/.exec(stat)?.[1];
    if (state !== 'T' && state !== 't') return false;
  }
  return true;
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
