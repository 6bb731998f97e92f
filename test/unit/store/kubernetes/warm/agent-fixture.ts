// The node agent's warm sets on the in-memory API server, as the warm-set tests drive them: an agent of node-a (its
// journal, its node cache, a store over them), the controller's word on warm sets, and readers of the pool.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { WARM_POLICY } from '../../../../../src/agent/warm-setting.ts';
import { WHEREABOUTS_LEADER_TIMING } from '../../../../../src/config/leader-timing.ts';
import { planAssign, type AssignOutcome } from '../../../../../src/ipam/assign.ts';
import type { ApiRequest, ApiResponse } from '../../../../../src/kube/api.ts';
import { leasePath, microTime } from '../../../../../src/kube/lease.ts';
import { WriteMemory } from '../../../../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../../../../src/store/kubernetes/kubernetes-store.ts';
import {
  getObject,
  WARM_ALLOWED,
  WARM_GATE_ANNOTATION,
  WARM_GATE_LEASE,
} from '../../../../../src/store/kubernetes/objects.ts';
import { decodeAllocations } from '../../../../../src/store/kubernetes/pool-object.ts';
import { WarmSets } from '../../../../../src/store/kubernetes/warm/warm-sets.ts';
import type { WarmBounds } from '../../../../../src/store/warm-target.ts';
import type { AllocationRecord, PoolRef } from '../../../../../src/store/store.ts';
import { warmHolder } from '../../../../../src/store/warm-record.ts';
import { MemoryApiClient, MemoryApiServer } from '../../../../support/memory-apiserver.ts';
import { rangeOf } from '../../../allocator/range-fixture.ts';

export const quiet = { debug() {}, info() {}, warning() {}, error() {} };
export const NS = 'kube-system';
export const CIDR = '10.77.0.0/24';
export const pool: PoolRef = { name: '10.77.0.0-24', network: 'net', networkNamed: false, range: rangeOf(CIDR) };
export const BOUNDS = { minimum: 2, maximum: 8, maxShareOfFree: 0.5, windowMs: 10_000, idleAfterMs: 60_000 };
export type Obj = Record<string, unknown>;

/** Agents are closed before their directories go (after() hooks run in the order they were added). */
const closing = new WeakMap<TestContext, Array<() => Promise<void> | void>>();
export function cleanup(t: TestContext): Array<() => Promise<void> | void> {
  let list = closing.get(t);
  if (list === undefined) {
    const steps: Array<() => Promise<void> | void> = [];
    list = steps;
    closing.set(t, steps);
    t.after(async () => {
      for (const step of steps) await step();
    });
  }
  return list;
}

export function tempDir(t: TestContext, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `hereabouts-${name}-`));
  cleanup(t).push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The controller's word on warm sets, as it writes it. */
export async function gate(api: MemoryApiClient, verdict: string): Promise<void> {
  const now = microTime(new Date());
  const body = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: WARM_GATE_LEASE, annotations: { [WARM_GATE_ANNOTATION]: verdict } },
    spec: { holderIdentity: 'controller-0', leaseDurationSeconds: 40, acquireTime: now, renewTime: now },
  };
  assert.equal((await api.send({ method: 'POST', path: leasePath(NS), body })).status, 201);
}

export interface AgentOptions {
  /** Closed by the test itself (default: after it). */
  readonly closed?: boolean;
  readonly bounds?: WarmBounds;
  /** enable_overlapping_ranges (default true). */
  readonly reservations?: boolean;
  /** Hold the journal's lock (default false: two agents of one node may run in this one process). */
  readonly exclusive?: boolean;
  readonly log?: (msg: string) => void;
  readonly tickMs?: number;
}

export interface Agent {
  readonly api: MemoryApiClient;
  /** The node cache directory its store writes. */
  readonly cacheDir: string;
  readonly warm: WarmSets;
  readonly store: KubernetesStore;
  /** While held, requests wait unanswered until release(). */
  hold(): void;
  release(): void;
}

export function agent(
  t: TestContext,
  server: MemoryApiServer,
  dirs: { journal: string; cache: string },
  options: AgentOptions = {},
): Agent {
  const api = new MemoryApiClient(server, { namespace: NS });
  const send = api.send.bind(api);
  let held: Array<() => void> | undefined;
  api.send = async (req: ApiRequest): Promise<ApiResponse> => {
    if (held !== undefined) await new Promise<void>((resolve) => held?.push(resolve));
    return send(req);
  };
  const warm = new WarmSets({
    dir: dirs.journal,
    bounds: options.bounds ?? BOUNDS,
    policy: WARM_POLICY,
    log: options.log ?? (() => undefined),
    // Two agents of one node in this one process (the stalled one and the next): the journal's lock, judged by pid,
    // would keep the second off.
    exclusive: options.exclusive ?? false,
    ...(options.tickMs === undefined ? {} : { tickMs: options.tickMs }),
  });
  if (options.closed !== false) cleanup(t).unshift(() => warm.close());
  const store = new KubernetesStore({
    api,
    node: 'node-a',
    cacheDir: dirs.cache,
    reservations: options.reservations ?? true,
    log: quiet,
    memory: new WriteMemory(),
    warm,
    whereaboutsLease: WHEREABOUTS_LEADER_TIMING,
  });
  return {
    api,
    cacheDir: dirs.cache,
    warm,
    store,
    hold: () => void (held ??= []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const resume of waiting) resume();
    },
  };
}

export const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'net1', podRef: `default/${name}` });
export const add = (store: KubernetesStore, name: string): Promise<AssignOutcome> =>
  store.update(pool, planAssign(pool, pod(name), { createdAt: new Date().toISOString() }));
export const addressOf = (outcome: AssignOutcome): bigint => {
  assert.equal(outcome.kind, 'assigned');
  return outcome.address;
};

export async function records(api: MemoryApiClient, ref: PoolRef = pool): Promise<Map<bigint, AllocationRecord>> {
  const object = (await getObject(api, 'ippools', ref.name)) as Obj;
  const spec = object['spec'] as Obj;
  return decodeAllocations(spec['allocations'], ref.range.cidr, {
    where: 'test',
    warn: () => undefined,
    strict: false,
  });
}

export const warmIn = (all: Map<bigint, AllocationRecord>): bigint[] =>
  [...all].filter(([, r]) => warmHolder(r) === 'node-a').map(([a]) => a);

export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The in-memory API server with the controller's word on warm sets given, an admin client on it, and a warmed agent
 * of node-a (its own journal and cache directories).
 */
export async function warmWorld(t: TestContext, options: AgentOptions = {}) {
  const server = new MemoryApiServer();
  const admin = new MemoryApiClient(server, { namespace: NS });
  await gate(admin, WARM_ALLOWED);
  const a = await warmedAgent(t, server, { journal: tempDir(t, 'journal'), cache: tempDir(t, 'cache') }, options);
  return { server, admin, a };
}

/** An agent whose warm set holds BOUNDS.minimum addresses (the first ADD ran the synchronous path). */
export async function warmedAgent(
  t: TestContext,
  server: MemoryApiServer,
  dirs: { journal: string; cache: string },
  options: AgentOptions = {},
) {
  const a = agent(t, server, dirs, options);
  await add(a.store, 'first');
  await until('the warm set', async () => a.warm.stats().warm >= (options.bounds ?? BOUNDS).minimum);
  return a;
}
