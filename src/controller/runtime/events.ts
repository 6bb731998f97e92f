// Kubernetes Events (core/v1) about the objects the controller acts on, as `kubectl describe` shows them. The same
// event repeated within the quiet period is not sent again (a persisting problem is not an event storm); after it,
// the existing Event's count goes up, as client-go's recorder does.
import { randomBytes } from 'node:crypto';
import { statusText, type ApiClient } from '../../kube/api.ts';
import { messageOf } from '../../errors.ts';
import type { Log } from '../../log/json-log.ts';

export interface InvolvedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** "" for cluster-scoped objects (their events go to "default", as the kubelet's do). */
  readonly namespace: string;
  readonly uid?: string;
}

export type EventType = 'Normal' | 'Warning';

export const COMPONENT = 'hereabouts-controller';

interface Sent {
  readonly name: string;
  readonly namespace: string;
  count: number;
  lastMs: number;
}

export class EventRecorder {
  readonly #api: ApiClient;
  readonly #identity: string;
  readonly #log: Log;
  readonly #quietMs: number;
  readonly #sent = new Map<string, Sent>();

  constructor(api: ApiClient, options: { identity: string; log: Log; quietMs?: number }) {
    this.#api = api;
    this.#identity = options.identity;
    this.#log = options.log;
    this.#quietMs = options.quietMs ?? 10 * 60_000;
  }

  /**
   * Records the event; failures are logged, never thrown (an event is not worth failing a pass for). `transition`:
   * the caller sends it once per change of state, so a repeat within the quiet period counts up instead of being
   * dropped.
   */
  async emit(
    object: InvolvedObject,
    type: EventType,
    reason: string,
    message: string,
    options: { transition?: boolean } = {},
  ): Promise<void> {
    const key = `${object.kind}|${object.namespace}|${object.name}|${type}|${reason}|${message}`;
    const now = Date.now();
    const seen = this.#sent.get(key);
    if (seen !== undefined && now - seen.lastMs < this.#quietMs && options.transition !== true) return;
    this.#prune(now);
    const stamp = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
    try {
      if (seen !== undefined) {
        seen.count++;
        seen.lastMs = now;
        const res = await this.#api.send({
          method: 'PATCH',
          path: `/api/v1/namespaces/${encodeURIComponent(seen.namespace)}/events/${encodeURIComponent(seen.name)}`,
          body: { count: seen.count, lastTimestamp: stamp },
          contentType: 'application/merge-patch+json',
        });
        if (res.status === 200) return;
        this.#sent.delete(key); // expired on the server (events live an hour): create it again
      }
      const namespace = object.namespace === '' ? 'default' : object.namespace;
      const name = `${object.name.slice(0, 200)}.${randomBytes(8).toString('hex')}`;
      const res = await this.#api.send({
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name, namespace },
          involvedObject: {
            apiVersion: object.apiVersion,
            kind: object.kind,
            name: object.name,
            ...(object.namespace === '' ? {} : { namespace: object.namespace }),
            ...(object.uid === undefined || object.uid === '' ? {} : { uid: object.uid }),
          },
          type,
          reason,
          message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
          source: { component: COMPONENT },
          reportingComponent: COMPONENT,
          reportingInstance: this.#identity,
          firstTimestamp: stamp,
          lastTimestamp: stamp,
          count: 1,
        },
      });
      if (res.status !== 201) throw new Error(statusText(res));
      this.#sent.set(key, { name, namespace, count: 1, lastMs: now });
    } catch (err) {
      this.#log.warning(`cannot record event ${reason} on ${object.kind} ${object.name}: ${messageOf(err)}`);
    }
  }

  /** Keeps the memory of sent events bounded. */
  #prune(now: number): void {
    if (this.#sent.size < 5000) return;
    for (const [key, sent] of this.#sent) if (now - sent.lastMs > this.#quietMs) this.#sent.delete(key);
  }
}
