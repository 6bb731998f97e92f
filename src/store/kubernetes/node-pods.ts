// The node agent's view of the pods bound to its node, for sticky networks (docs/sticky.md): an ADD learns its pod's
// owner without a read. kubelet calls ADD only for pods bound to its node, and learns of them through the same kind
// of watch, so the pod is almost always here already; when not, the lookup waits a little for it, then reads it.
// Either way, a controller that would bind an address is checked against the live object (pod-facts.ts
// verifyOwner), through the owners this agent verified lately.
// Loaded only by the node agent (open.ts longLivedHost), never by a plugin process.
import type { ApiClient } from '../../kube/api.ts';
import { Informer } from '../../kube/informer.ts';
import type { Log } from '../../log/json-log.ts';
import { monotonicMs } from '../../clock.ts';
import type { PodFacts } from '../store.ts';
import { OwnerChecks, podFactsOf, readPodFacts, verifyOwner, type ObservedPodFacts } from './pod-facts.ts';

/** How long an ADD waits for the agent's watch to show its pod before it reads the pod itself. */
export const WATCH_WAIT_MS = 2_000;

export interface NodePodsStats {
  /** Answered from the watch at once. */
  readonly watched: number;
  /** Answered from the watch after waiting for it. */
  readonly waited: number;
  /** The watch did not show the pod in time: read. */
  readonly read: number;
}

/** One watch per API server, node and credentials (a rotated token starts a new one). */
export class NodePods {
  readonly #log: Log;
  readonly #watches = new Map<
    string,
    { informer: Informer<ObservedPodFacts>; api: ApiClient; waiters: Set<() => void> }
  >();
  /** The pods' owners read lately under the uid the pods name (pod-facts.ts OwnerChecks). */
  readonly #owners = new OwnerChecks();
  #counts = { watched: 0, waited: 0, read: 0 };

  constructor(log: Log) {
    this.#log = log;
  }

  stats(): NodePodsStats {
    return { ...this.#counts };
  }

  async facts(
    call: ApiClient,
    node: string,
    pod: { readonly namespace: string; readonly name: string; readonly uid: string | undefined },
  ): Promise<PodFacts | undefined> {
    const watch = this.#watch(call, node);
    const key = `${pod.namespace}/${pod.name}`;
    const verified = (facts: ObservedPodFacts): Promise<PodFacts> =>
      verifyOwner(call, pod.namespace, pod.name, facts, { log: this.#log, checks: this.#owners });
    const matches = (): ObservedPodFacts | undefined => {
      const facts = watch.informer.items.get(key);
      return facts !== undefined && (pod.uid === undefined || facts.uid === pod.uid) ? facts : undefined;
    };
    const now = watch.informer.synced ? matches() : undefined;
    if (now !== undefined) {
      this.#counts.watched++;
      return verified(now);
    }
    const deadline = monotonicMs() + WATCH_WAIT_MS;
    while (monotonicMs() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(1, deadline - monotonicMs()));
        function done(): void {
          clearTimeout(timer);
          watch.waiters.delete(done);
          resolve();
        }
        watch.waiters.add(done);
      });
      const later = watch.informer.synced ? matches() : undefined;
      if (later !== undefined) {
        this.#counts.waited++;
        return verified(later);
      }
    }
    this.#counts.read++;
    return readPodFacts(call, pod.namespace, pod.name, pod.uid, { log: this.#log, checks: this.#owners });
  }

  close(): void {
    for (const { informer, api } of this.#watches.values()) {
      informer.stop();
      api.close();
    }
    this.#watches.clear();
  }

  #watch(call: ApiClient, node: string): { informer: Informer<ObservedPodFacts>; waiters: Set<() => void> } {
    const auth = JSON.stringify(call.endpoint.requestOptions.headers ?? {});
    const key = `${call.endpoint.server}|${node}|${auth}`;
    const known = this.#watches.get(key);
    if (known !== undefined) return known;
    for (const [other, stale] of this.#watches) {
      if (!other.startsWith(`${call.endpoint.server}|${node}|`)) continue;
      stale.informer.stop(); // the credentials changed: the old watch would fail once the old token is revoked
      this.#watches.delete(other);
    }
    const api = call.detached();
    const waiters = new Set<() => void>();
    const wake = (): void => {
      for (const waiter of [...waiters]) waiter();
    };
    const informer = new Informer<ObservedPodFacts>(api, {
      resource: 'pods (this node)',
      path: '/api/v1/pods',
      query: `fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`,
      view: podFactsOf,
      onChange: wake,
      log: this.#log,
    });
    const entry = { informer, api, waiters };
    this.#watches.set(key, entry);
    informer.start();
    void informer.whenSynced().then(wake);
    return entry;
  }
}
