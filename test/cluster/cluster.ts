// The single-node cluster of scripts/cluster/ (kubelet + containerd + Multus) for the cluster stage. scripts/test.sh
// starts one and exports HEREABOUTS_CLUSTER=<dir>; run alone, a test file starts its own and stops it on exit.
// Helpers drive it the way an operator does: kubectl, and for what only the node can show, the node's own files,
// containerd's task list and nsenter into a pod's network namespace.
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { request } from 'node:https';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { messageOf } from '../../src/errors.ts';
import { repoRoot } from '../support/paths.ts';

export interface Cluster {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly kubectlBin: string;
  readonly nodeName: string;
  /** The node's private /etc/cni/net.d, /opt/cni/bin, ... live under here. */
  readonly hostRoot: string;
  readonly containerdSocket: string;
  readonly owned: boolean;
}

const scripts = join(repoRoot, 'scripts', 'cluster');

export function cluster(): Cluster {
  const shared = process.env['HEREABOUTS_CLUSTER'];
  if (shared !== undefined && shared !== '') return attach(shared, false);
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-cluster-'));
  const run = spawnSync(join(scripts, 'start.sh'), [dir], { encoding: 'utf8', timeout: 1_800_000 });
  if (run.status !== 0) throw new Error(`scripts/cluster/start.sh ${dir} failed:\n${run.stderr}`);
  const c = attach(dir, true);
  process.on('exit', () => stopCluster(c));
  return c;
}

export function stopCluster(c: Cluster): void {
  if (c.owned) spawnSync(join(scripts, 'stop.sh'), [c.dir], { stdio: 'ignore' });
}

function attach(dir: string, owned: boolean): Cluster {
  const env = new Map<string, string>();
  for (const line of readFileSync(join(dir, 'env'), 'utf8').split('\n')) {
    const m = /^export ([A-Z_]+)=['"]?(.*?)['"]?$/.exec(line);
    if (m !== null) env.set(m[1]!, m[2]!);
  }
  const need = (key: string): string => {
    const value = env.get(key);
    if (value === undefined || value === '') throw new Error(`${dir}/env has no ${key}: is a cluster running there?`);
    return value;
  };
  return {
    dir,
    kubeconfig: need('KUBECONFIG'),
    kubectlBin: need('KUBECTL'),
    nodeName: need('NODE_NAME'),
    hostRoot: need('HOST_ROOT'),
    containerdSocket: join(dir, 'containerd', 'containerd.sock'),
    owned,
  };
}

export function kubectl(c: Cluster, args: readonly string[], input?: string): string {
  const run = spawnSync(c.kubectlBin, ['--kubeconfig', c.kubeconfig, '--request-timeout=30s', ...args], {
    encoding: 'utf8',
    input,
    timeout: 300_000,
  });
  if (run.status !== 0)
    throw new Error(`kubectl ${args.join(' ')} failed (${run.status}):\n${run.stderr}${run.stdout}`);
  return run.stdout;
}

/** kubectl without blocking the event loop (for checks that run while it waits). */
export function kubectlAsync(c: Cluster, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      c.kubectlBin,
      ['--kubeconfig', c.kubeconfig, '--request-timeout=30s', ...args],
      { encoding: 'utf8', timeout: 300_000 },
      (err, stdout, stderr) => {
        if (err !== null) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr}${stdout}`, { cause: err }));
        else resolve(stdout);
      },
    );
  });
}

/**
 * `kubectl get ... --watch -o jsonpath=<template>{"\n"}`: every event's line, with the time it arrived here (ms since
 * the epoch). stop() ends the watch.
 */
export function kubectlWatch(
  c: Cluster,
  args: readonly string[],
  template: string,
): { readonly lines: Array<{ readonly at: number; readonly text: string }>; stop(): void } {
  const child = spawn(
    c.kubectlBin,
    ['--kubeconfig', c.kubeconfig, 'get', ...args, '--watch', '-o', `jsonpath=${template}{"\\n"}`],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const lines: Array<{ at: number; text: string }> = [];
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const at = Date.now();
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) lines.push({ at, text });
  });
  return { lines, stop: () => void child.kill() };
}

/**
 * Whether the token the plugin on the node uses right now authenticates: the status of a SelfSubjectReview made with
 * it (201: yes; 401: an ADD now would fail).
 */
export function nodeTokenStatus(c: Cluster): Promise<number> {
  const token = readFileSync(join(c.hostRoot, 'etc/cni/net.d/hereabouts.d/token'), 'utf8').trim();
  return new Promise((resolve, reject) => {
    const req = request(
      'https://10.233.0.1/apis/authentication.k8s.io/v1/selfsubjectreviews',
      {
        method: 'POST',
        ca: readFileSync(join(c.dir, 'cp', 'ca.crt')),
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }));
  });
}

export function getJson(c: Cluster, args: readonly string[]): unknown {
  return JSON.parse(kubectl(c, ['get', ...args, '-o', 'json']));
}

/** Applies objects given as JSON (one or a List). */
export function apply(c: Cluster, objects: readonly unknown[]): void {
  kubectl(c, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
}

/** Polls `check` every 0.5 s until it returns a value (not undefined) or `ms` pass; the error says what and why. */
export async function until<T>(what: string, ms: number, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = check();
      if (value !== undefined) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}${last === undefined ? '' : `: ${messageOf(last)}`}`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

export interface Pod {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> };
  spec: { nodeName?: string };
  status: {
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; containerID?: string; ready: boolean; restartCount: number }>;
  };
}

export function podReady(p: Pod): boolean {
  return p.status.conditions?.some((cond) => cond.type === 'Ready' && cond.status === 'True') ?? false;
}

/** Multus' k8s.v1.cni.cncf.io/network-status annotation. */
export interface NetworkStatus {
  name: string;
  interface?: string;
  ips?: string[];
  default?: boolean;
}

export function networkStatus(p: Pod): NetworkStatus[] {
  const raw = p.metadata.annotations?.['k8s.v1.cni.cncf.io/network-status'];
  return raw === undefined ? [] : (JSON.parse(raw) as NetworkStatus[]);
}

/** containerd's task pid of a pod's first container: a process in the pod's network namespace. */
export function containerPid(c: Cluster, p: Pod): number {
  const id = p.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
  if (id === undefined) throw new Error(`pod ${p.metadata.name} has no container yet`);
  const out = execFileSync('ctr', ['--address', c.containerdSocket, '-n', 'k8s.io', 'task', 'ls'], {
    encoding: 'utf8',
  });
  const line = out.split('\n').find((l) => l.startsWith(`${id} `));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no running task ${id} for pod ${p.metadata.name}:\n${out}`);
  return pid;
}

/** Runs a command of the host (ping, ip) in the network namespace of process `pid`. */
export function inNetns(pid: number, command: readonly string[]): { code: number | null; out: string } {
  const run = spawnSync('nsenter', ['-t', String(pid), '-n', '--', ...command], { encoding: 'utf8', timeout: 30_000 });
  return { code: run.status, out: run.stdout + run.stderr };
}

export interface Allocation {
  id: string;
  podref: string;
  ifname?: string;
  node?: string;
  /** A sticky address's binding (docs/sticky.md). */
  binding?: string;
}

export interface IPPool {
  metadata: { name: string };
  spec: { range: string; allocations?: Record<string, Allocation> };
}

/** Every allocation in the IPv4 pools of kube-system, with its pool and its address (the range's base + offset). */
export function allocations(c: Cluster): Array<Allocation & { pool: string; offset: string; ip: string }> {
  const pools = (getJson(c, ['-n', 'kube-system', 'ippools.whereabouts.cni.cncf.io']) as { items: IPPool[] }).items;
  return pools.flatMap((pool) =>
    Object.entries(pool.spec.allocations ?? {}).map(([offset, a]) => ({
      ...a,
      pool: pool.metadata.name,
      offset,
      ip: ipv4At(pool.spec.range, Number(offset)),
    })),
  );
}

function ipv4At(range: string, offset: number): string {
  const base = (range.split('/')[0] ?? '').split('.').reduce((n, octet) => n * 256 + Number(octet), 0) + offset;
  return [24, 16, 8, 0].map((shift) => Math.floor(base / 2 ** shift) % 256).join('.');
}
