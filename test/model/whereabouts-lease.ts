// Whereabouts' cluster-wide writer lock: every ADD and DEL of its plugin first wins the coordination.k8s.io Lease
// "whereabouts" in the pools' namespace (in node-slice mode, one named after the node's slice pool) (client-go leader election, ReleaseOnCancel), so its own writers never run
// at once. As client-go judges it: a Lease held by another identity is free once its record has not changed for
// the lease duration, measured from when this process first saw that record (not from renewTime).
import { monotonicMs } from '../../src/clock.ts';
import type { ApiClient, ApiResponse } from '../../src/kube/api.ts';
import type { LeaderTiming } from '../../src/config/types.ts';

export const WHEREABOUTS_LEASE = 'whereabouts';

/**
 * leader_lease_duration and leader_retry_period as the model's Whereabouts configs set them (defaults 1500 and 500
 * ms; shorter here, still far longer than one of its calls takes in the model, so that a killed holder costs the
 * waiters a quarter of a second of test time), and how long an ADD waits at most (its time limit, 2 minutes).
 */
export const LEASE_TIMING = { durationMs: 250, retryMs: 5, waitMs: 5_000 } as const;

/**
 * The same keys as hereabouts parses them (config/leader-timing.ts) for the model's hereabouts processes: it judges
 * the Lease by the duration the Lease itself states (1 s, as the model's Whereabouts writes it) and polls every
 * retry period, which it keeps at 100 ms or more.
 */
export const HEREABOUTS_LEASE_TIMING: LeaderTiming = {
  leaseDurationMs: 1_000,
  renewDeadlineMs: 500,
  retryPeriodMs: 100,
};

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export function leasePath(namespace: string, name: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${name}`;
}

/** client-go's MicroTime text. */
function microTime(): string {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Whether an answer to a GET of the Lease shows it held by someone (a writer waiting for it would wait). */
export function leaseHeld(res: ApiResponse): boolean {
  const holder = obj(obj(res.body)['spec'])['holderIdentity'];
  return res.status === 200 && typeof holder === 'string' && holder !== '';
}

function failed(what: string, res: ApiResponse): Error {
  return new Error(`Whereabouts: ${what}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
}

/** Waits for the Lease (polling every retry period) and takes it; throws when the ADD's time limit is reached. */
async function acquire(api: ApiClient, name: string, identity: string): Promise<void> {
  const path = leasePath(api.namespace, name);
  const deadline = monotonicMs() + LEASE_TIMING.waitMs;
  let observed: { record: string; atMs: number } | undefined;
  for (;;) {
    const res = await api.send({ method: 'GET', path });
    const now = microTime();
    if (res.status === 404) {
      const body = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: api.namespace },
        spec: { holderIdentity: identity, leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
      };
      const created = await api.send({ method: 'POST', path: path.replace(/\/[^/]+$/, ''), body });
      if (created.status === 201) return;
      if (created.status !== 409) throw failed('create Lease', created);
    } else if (res.status === 200) {
      const spec = obj(obj(res.body)['spec']);
      const record = JSON.stringify(spec);
      if (observed?.record !== record) observed = { record, atMs: Date.now() };
      const holder = typeof spec['holderIdentity'] === 'string' ? spec['holderIdentity'] : '';
      const expired = observed.atMs + LEASE_TIMING.durationMs < Date.now();
      if (holder === '' || holder === identity || expired) {
        const transitions = typeof spec['leaseTransitions'] === 'number' ? spec['leaseTransitions'] : 0;
        const body = {
          ...obj(res.body),
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: holder === identity ? transitions : transitions + 1,
          },
        };
        const taken = await api.send({ method: 'PUT', path, body });
        if (taken.status === 200) return;
        if (taken.status !== 409) throw failed('update Lease', taken);
      }
    } else {
      throw failed('get Lease', res);
    }
    if (monotonicMs() >= deadline) throw new Error('time limit exceeded while waiting to become leader');
    await new Promise((resolve) => setTimeout(resolve, LEASE_TIMING.retryMs));
  }
}

/** ReleaseOnCancel: an empty holder, so that the next writer need not wait for the lease to expire. */
async function release(api: ApiClient, name: string, identity: string): Promise<void> {
  const path = leasePath(api.namespace, name);
  const res = await api.send({ method: 'GET', path });
  if (res.status !== 200 || obj(obj(res.body)['spec'])['holderIdentity'] !== identity) return;
  const now = microTime();
  const body = { ...obj(res.body), spec: { ...obj(obj(res.body)['spec']), holderIdentity: '', renewTime: now } };
  await api.send({ method: 'PUT', path, body });
}

/**
 * Runs `fn` as the leader of Lease `name` ("whereabouts"; a node-slice pool's own name in node-slice mode), as
 * Whereabouts' IPManagement does; the Lease is released whatever `fn` did (a killed process releases nothing).
 */
export async function withLease<T>(api: ApiClient, name: string, identity: string, fn: () => Promise<T>): Promise<T> {
  await acquire(api, name, identity);
  try {
    return await fn();
  } finally {
    await release(api, name, identity);
  }
}
