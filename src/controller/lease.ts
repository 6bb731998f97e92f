// Leader election on a coordination.k8s.io/v1 Lease, every write conditional on the resourceVersion read. Only
// the holder acts; a holder that cannot renew within the renew deadline stops acting at once.
import type { ApiClient } from '../store/kubernetes/api.ts';
import { statusText } from '../store/kubernetes/api.ts';

export interface LeaseOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly log: (msg: string) => void;
}

interface LeaseObject {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

export class LeaderElector {
  readonly #api: ApiClient;
  readonly #o: LeaseOptions;
  #lastRenewMs = 0;
  #leading = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(api: ApiClient, options: LeaseOptions) {
    this.#api = api;
    this.#o = options;
  }

  /** True only while the lease is ours and was renewed within the renew deadline. */
  get leading(): boolean {
    return this.#leading && Date.now() - this.#lastRenewMs < this.#o.renewDeadlineMs;
  }

  start(): void {
    const tick = async (): Promise<void> => {
      try {
        await this.#tryAcquireOrRenew();
      } catch (err) {
        this.#o.log(`lease ${this.#o.name}: ${(err as Error).message}`);
      }
      if (this.#leading && !this.leading) this.#setLeading(false, 'renew deadline passed');
      this.#timer = setTimeout(() => void tick(), this.#o.retryPeriodMs);
    };
    void tick();
  }

  /** Stops renewing and, when leading, hands the lease back so another replica takes over at once. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (!this.#leading) return;
    this.#setLeading(false, 'shutting down');
    const current = await this.#get();
    if (current?.spec.holderIdentity !== this.#o.identity) return;
    current.spec.holderIdentity = '';
    current.spec.leaseDurationSeconds = 1;
    await this.#api.send({ method: 'PUT', path: this.#path(), body: current });
  }

  async #tryAcquireOrRenew(): Promise<void> {
    const now = new Date();
    const current = await this.#get();
    const seconds = Math.ceil(this.#o.leaseDurationMs / 1000);
    if (current === undefined) {
      const body: LeaseObject = {
        metadata: { name: this.#o.name, namespace: this.#o.namespace },
        spec: { holderIdentity: this.#o.identity, leaseDurationSeconds: seconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
      };
      const res = await this.#api.send({ method: 'POST', path: this.#path(true), body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...body } });
      if (res.status === 201) this.#renewed(now);
      else if (res.status !== 409) throw new Error(`create: ${statusText(res)}`);
      return;
    }
    const holder = current.spec.holderIdentity ?? '';
    const renewedAt = Date.parse(current.spec.renewTime ?? '') || 0;
    const expired = renewedAt + (current.spec.leaseDurationSeconds ?? seconds) * 1000 < now.getTime();
    if (holder !== this.#o.identity && holder !== '' && !expired) {
      if (this.#leading) this.#setLeading(false, `lease held by ${holder}`);
      return;
    }
    if (holder !== this.#o.identity) {
      current.spec.acquireTime = microTime(now);
      current.spec.leaseTransitions = (current.spec.leaseTransitions ?? 0) + 1;
    }
    current.spec.holderIdentity = this.#o.identity;
    current.spec.leaseDurationSeconds = seconds;
    current.spec.renewTime = microTime(now);
    const res = await this.#api.send({ method: 'PUT', path: this.#path(), body: current });
    if (res.status === 200) this.#renewed(now);
    else if (res.status !== 409) throw new Error(`update: ${statusText(res)}`);
  }

  #renewed(at: Date): void {
    this.#lastRenewMs = at.getTime();
    if (!this.#leading) this.#setLeading(true, 'acquired');
  }

  #setLeading(value: boolean, why: string): void {
    this.#leading = value;
    this.#o.log(`${value ? 'leading' : 'not leading'}: lease ${this.#o.namespace}/${this.#o.name} ${why}`);
  }

  async #get(): Promise<LeaseObject | undefined> {
    const res = await this.#api.send({ method: 'GET', path: this.#path() });
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`get: ${statusText(res)}`);
    return res.body as LeaseObject;
  }

  #path(collection = false): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/leases`;
    return collection ? base : `${base}/${encodeURIComponent(this.#o.name)}`;
  }
}

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits (Go rejects three). */
function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
