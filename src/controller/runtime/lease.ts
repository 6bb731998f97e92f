// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: every write carries the
// resourceVersion it read (two candidates can never both win); a candidate takes a lease only when its record
// has not changed for leaseDuration by the candidate's own clock (no trust in other clocks); a leader that could
// not renew within renewDeadline (< leaseDuration) stops acting at once, before anyone else may take over. Every
// duration is measured on the monotonic clock: a wall-clock step (NTP, a resumed VM) neither stretches nor shrinks
// a margin; the wall clock only fills the Lease's timestamps, which no replica compares with its own clock.
import { monotonicMs } from '../../clock.ts';
import { statusText, type ApiClient, type ApiRequest, type ApiResponse } from '../../kube/api.ts';
import { LeaseObservation, leasePath, microTime, type LeaseSpec } from '../../kube/lease.ts';
import { CONFLICT, retryOnConflict, type Conflict } from '../../kube/retry.ts';
import type { Log } from '../../log/json-log.ts';

export interface LeaseOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly log: Log;
  /** Called on every change of leadership. */
  readonly onChange?: (leading: boolean) => void;
}

interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: LeaseSpec;
}

export class LeaderElector {
  readonly #api: ApiClient;
  readonly #o: LeaseOptions;
  /** The lease as last read or written. */
  #lease: LeaseObject | undefined;
  readonly #observation = new LeaseObservation();
  /** When the last successful renewal was sent (monotonic; not answered: the conservative end). */
  #renewedAtMs = 0;
  #leading = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #tick: Promise<void> = Promise.resolve();

  constructor(api: ApiClient, options: LeaseOptions) {
    this.#api = api;
    this.#o = options;
  }

  /** True only while the lease is ours and was renewed within the renew deadline. */
  get leading(): boolean {
    return this.#leading && monotonicMs() - this.#renewedAtMs < this.#o.renewDeadlineMs;
  }

  start(): void {
    const loop = async (): Promise<void> => {
      try {
        await this.#tryAcquireOrRenew();
      } catch (err) {
        this.#o.log.warning(`lease ${this.#where()}: ${(err as Error).message}`);
      }
      if (this.#leading && !this.leading) this.#setLeading(false, `not renewed within ${this.#o.renewDeadlineMs} ms`);
      if (this.#stopped) return;
      // Candidates jitter their attempts (client-go's factor 1.2) so that they do not move in lockstep.
      const wait = this.#leading ? this.#o.retryPeriodMs : this.#o.retryPeriodMs * (1 + Math.random() * 1.2);
      this.#timer = setTimeout(() => {
        this.#tick = loop();
      }, wait);
    };
    this.#tick = loop();
  }

  /** Stops renewing and, when leading, hands the lease back so that another replica takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#tick;
    const wasLeading = this.leading;
    if (this.#leading) this.#setLeading(false, 'shutting down');
    if (!wasLeading || this.#lease === undefined) return;
    const now = microTime(new Date());
    const released: LeaseObject = {
      ...this.#lease,
      spec: { ...this.#lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
    };
    const res = await this.#send({ method: 'PUT', path: this.#path(), body: released });
    if (res.status === 200) this.#o.log.info(`lease ${this.#where()} released`);
    else this.#o.log.warning(`lease ${this.#where()} not released: ${statusText(res)}`);
  }

  /**
   * One read -> decide -> conditional write, through the shared retry loop: a 409 (someone wrote the lease since it
   * was read) reads again and decides again at once, within a budget that keeps the answer before the renew deadline.
   */
  async #tryAcquireOrRenew(): Promise<void> {
    await retryOnConflict((attempt) => this.#attempt(attempt), {
      attempts: 3,
      budgetMs: this.#requestTimeoutMs(),
      proceed: () => !this.#stopped,
    });
  }

  async #attempt(attempt: number): Promise<undefined | Conflict> {
    const sentAt = monotonicMs();
    const wallAt = new Date();
    // The leader renews from the object it last wrote: one request; a 409 means someone else wrote it.
    if (
      attempt === 0 &&
      this.#leading &&
      this.#lease !== undefined &&
      this.#lease.spec.holderIdentity === this.#o.identity
    ) {
      const res = await this.#put(this.#withHolder(this.#lease, wallAt));
      if (res.status === 200) {
        this.#renewed(res, sentAt);
        return undefined;
      }
      if (res.status === 409) return CONFLICT;
      throw new Error(`renew: ${statusText(res)}`);
    }
    const got = await this.#send({ method: 'GET', path: this.#path() });
    if (got.status === 404) return this.#create(sentAt, wallAt);
    if (got.status !== 200) throw new Error(`get: ${statusText(got)}`);
    const current = got.body as LeaseObject;
    this.#lease = current;
    // A body cast from the API: a Lease written by hand may have no spec at all.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    const spec = current.spec ?? {};
    this.#observation.observe(spec, sentAt);
    const durationMs = (spec.leaseDurationSeconds ?? Math.ceil(this.#o.leaseDurationMs / 1000)) * 1000;
    if (this.#observation.heldByOther(spec, this.#o.identity, durationMs)) {
      if (this.#leading) this.#setLeading(false, `lease held by ${spec.holderIdentity ?? ''}`);
      return;
    }
    const res = await this.#put(this.#withHolder(current, wallAt));
    if (res.status === 200) {
      this.#renewed(res, sentAt);
      return undefined;
    }
    if (res.status === 409) return CONFLICT;
    throw new Error(`update: ${statusText(res)}`);
  }

  async #create(sentAt: number, wallAt: Date): Promise<undefined | Conflict> {
    const now = microTime(wallAt);
    const body: LeaseObject = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#o.name, namespace: this.#o.namespace },
      spec: {
        holderIdentity: this.#o.identity,
        leaseDurationSeconds: this.#seconds(),
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    };
    const res = await this.#send({ method: 'POST', path: this.#path(true), body });
    if (res.status === 201) {
      this.#renewed(res, sentAt);
      return undefined;
    }
    if (res.status === 409) return CONFLICT;
    throw new Error(`create: ${statusText(res)}`);
  }

  #withHolder(lease: LeaseObject, at: Date): LeaseObject {
    const spec = { ...lease.spec };
    if (spec.holderIdentity !== this.#o.identity) {
      spec.acquireTime = microTime(at);
      spec.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    spec.holderIdentity = this.#o.identity;
    spec.leaseDurationSeconds = this.#seconds();
    spec.renewTime = microTime(at);
    return { ...lease, spec };
  }

  #renewed(res: ApiResponse, sentAt: number): void {
    this.#lease = res.body as LeaseObject;
    this.#renewedAtMs = sentAt;
    if (!this.#leading && !this.#stopped) this.#setLeading(true, 'acquired');
  }

  #setLeading(value: boolean, why: string): void {
    this.#leading = value;
    this.#o.log.info(`${value ? 'leading' : 'not leading'}: lease ${this.#where()} ${why}`, {
      identity: this.#o.identity,
    });
    this.#o.onChange?.(value);
  }

  #put(body: LeaseObject): Promise<ApiResponse> {
    return this.#send({ method: 'PUT', path: this.#path(), body });
  }

  #send(req: ApiRequest): Promise<ApiResponse> {
    return this.#api.send(req, { timeoutMs: this.#requestTimeoutMs() });
  }

  /** A request must not outlive the renew deadline: the answer would come too late to matter. */
  #requestTimeoutMs(): number {
    return requestTimeoutMs(this.#o);
  }

  #seconds(): number {
    return Math.max(1, Math.ceil(this.#o.leaseDurationMs / 1000));
  }

  #where(): string {
    return `${this.#o.namespace}/${this.#o.name}`;
  }

  #path(collection = false): string {
    return leasePath(this.#o.namespace, collection ? undefined : this.#o.name);
  }
}

/** The timeout of a request made while leading: answered (or given up) a retry period before the renew deadline. */
export function requestTimeoutMs(timing: { readonly renewDeadlineMs: number; readonly retryPeriodMs: number }): number {
  return timing.renewDeadlineMs - timing.retryPeriodMs;
}
