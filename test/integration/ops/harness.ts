// Helpers of the operator-command suites: the packaged executable run as an operator would (a kubeconfig whose
// context names the test namespace, an empty environment), and the pools and reservations it reads, created
// through the API.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { GROUP } from '../controller/harness.ts';

export const bin = requireBinary();

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `hereabouts <args>` with the namespace's kubeconfig (unless `env` says otherwise). */
export function hb(ns: Namespace | undefined, args: readonly string[], env: Record<string, string> = {}): Run {
  const kube = ns === undefined ? [] : ['--kubeconfig', ns.kubeconfig];
  const run = spawnSync(bin, [...args, ...kube], { encoding: 'utf8', env, timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The same, without blocking the event loop (a test serving the API in-process needs it turning). */
export function hbAsync(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function json(run: Run, code = 0): unknown {
  assert.equal(run.code, code, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

export interface Entry {
  readonly id: string;
  readonly podref: string;
  readonly ifname: string;
  readonly podUid?: string;
  readonly node?: string;
  readonly createdAt?: string;
}

export const entry = (ns: Namespace, pod: string, extra: Partial<Entry> = {}): Entry => ({
  id: `ctr-${pod}`,
  podref: `${ns.name}/${pod}`,
  ifname: 'net1',
  ...extra,
});

export async function pool(
  ns: Namespace,
  name: string,
  range: string,
  allocations: Record<string, Entry>,
): Promise<void> {
  await ns.create('ippools', { apiVersion: GROUP, kind: 'IPPool', metadata: { name }, spec: { range, allocations } });
}

/** An OverlappingRangeIPReservation as the plugin writes it (createdAt: how long ago it was made, by default long). */
export async function reservation(ns: Namespace, name: string, e: Entry): Promise<void> {
  await ns.create('overlappingrangeipreservations', {
    apiVersion: GROUP,
    kind: 'OverlappingRangeIPReservation',
    metadata: { name },
    spec: { podref: e.podref, ifname: e.ifname, containerid: e.id },
  });
}

export async function sliceOwner(
  ns: Namespace,
  network: string,
  range: string,
  sliceSize: string,
  slices: ReadonlyArray<{ nodeName: string; sliceRange: string }>,
): Promise<void> {
  await ns.create('nodeslicepools', {
    apiVersion: GROUP,
    kind: 'NodeSlicePool',
    metadata: { name: network },
    spec: { range, sliceSize },
    status: { allocations: slices },
  });
}

/** The allocations of a pool as stored (offset -> entry). */
export async function allocationsOf(ns: Namespace, name: string): Promise<Record<string, Entry>> {
  const object = await ns.get('ippools', name);
  return (object?.['spec'] as { allocations?: Record<string, Entry> } | undefined)?.allocations ?? {};
}
