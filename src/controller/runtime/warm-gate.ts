// The controller's word on warm sets (DESIGN §11), on the Lease node agents read (store/kubernetes/warm/warm-gate.ts):
// "allowed" while no Whereabouts component runs in the cluster, else why not. Whereabouts' ip-reconciler frees every
// allocation whose podref is not a live pod showing the address, and a warm record names no pod. The leader renews
// the Lease every RENEW_MS; an agent stops handing out warm addresses once the record has not changed for the
// Lease's duration by its own clock, so a controller that stops (or loses its leadership) turns them off.
import { statusText, type ApiClient } from '../../kube/api.ts';
import { getLease, leaseBody, leasePath, microTime, updateLease } from '../../kube/lease.ts';
import type { Log } from '../../log/json-log.ts';
import { messageOf } from '../../errors.ts';
import { WARM_ALLOWED, WARM_GATE_ANNOTATION, WARM_GATE_LEASE } from '../../store/kubernetes/objects.ts';
import type { PodView } from '../orphans/pod-view.ts';

export const RENEW_MS = 10_000;
/** Four renewals missed: the agents stop. */
export const GATE_DURATION_S = 40;

/** The word for the cluster as the pods show it: "allowed", or why not. */
export function warmVerdict(pods: Iterable<[string, PodView]>, synced: boolean): string {
  if (!synced) return 'the controller has not listed the pods yet';
  const running: string[] = [];
  for (const [key, pod] of pods)
    if (pod.whereabouts && pod.phase !== 'Succeeded' && pod.phase !== 'Failed') running.push(key);
  if (running.length === 0) return WARM_ALLOWED;
  const shown = running.slice(0, 3).join(', ') + (running.length > 3 ? ` and ${running.length - 3} more` : '');
  return `Whereabouts runs (${shown}): its reconciler would free warm records`;
}

export class WarmGatePublisher {
  readonly #api: ApiClient;
  readonly #identity: string;
  readonly #log: Log;
  #said = '';

  constructor(api: ApiClient, identity: string, log: Log) {
    this.#api = api;
    this.#identity = identity;
    this.#log = log;
  }

  /** Writes `verdict` with a fresh renewTime (creates the Lease the first time). */
  async publish(verdict: string): Promise<void> {
    const namespace = this.#api.namespace;
    const now = new Date();
    const spec = {
      holderIdentity: this.#identity,
      leaseDurationSeconds: GATE_DURATION_S,
      renewTime: microTime(now),
    };
    const annotations = { [WARM_GATE_ANNOTATION]: verdict };
    try {
      const lease = await getLease(this.#api, namespace, WARM_GATE_LEASE);
      if (lease === undefined) {
        const body = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: WARM_GATE_LEASE, namespace, annotations },
          spec: { ...spec, acquireTime: microTime(now) },
        };
        const res = await this.#api.send({ method: 'POST', path: leasePath(namespace), body });
        if (res.status !== 409 && (res.status < 200 || res.status >= 300)) throw new Error(statusText(res));
      } else {
        await updateLease(this.#api, lease, leaseBody(lease, spec, annotations));
      }
    } catch (err) {
      this.#log.warning(`cannot write Lease ${WARM_GATE_LEASE} (agents turn warm sets off): ${messageOf(err)}`);
      return;
    }
    if (verdict !== this.#said)
      this.#log.info(`warm sets: ${verdict === WARM_ALLOWED ? 'allowed' : `off: ${verdict}`}`);
    this.#said = verdict;
  }
}
