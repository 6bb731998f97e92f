// Whereabouts' Lease, taken part in while a Whereabouts plugin may still write a pool (a rolling switch; docs/safety.md,
// "In a mixed cluster").
//
// Whereabouts v0.9.4 (pkg/storage/kubernetes/ipam.go) runs every ADD and DEL as the holder of a coordination.k8s.io
// Lease in the pools' namespace, named `whereabouts` for a shared pool and after the slice pool with node_slice_size.
// Under it an ADD reads the pool, GETs the chosen address's reservation (404: free), writes the pool, and only then
// creates the reservation; AlreadyExists there fails the ADD (code 999), it is not retried. hereabouts reserves before
// its pool write, so a reservation it created inside that window failed Whereabouts' ADD; and pool writes of both racing
// each other made both retry, until hereabouts' waiters ran out of the node's pool lock. Hence: while the Lease shows
// a Whereabouts write within MIXED_WINDOW_MS, every pool update of the plugin writes as the Lease's holder (its
// reservation, its pool write), as Whereabouts does; taken and kept by client-go's rules (conditional writes; another
// holder's lease has expired only once its record stood still for its duration on our own clock; renewed every retry
// period while held) and handed back as soon as the pool write is done. With no Lease, or none that Whereabouts wrote
// lately, nothing is written to it: one read from the API server's watch cache per pool update.
//
// The Lease has no fencing, and Whereabouts' update runs on after its process was deposed (a stall past the Lease's
// 1 s): so while Whereabouts is detected, plans also take the highest free address (whereaboutsWrites()), away from
// the lowest-first pick a deposed Whereabouts ADD may still be committing.
//
// The Lease is waited for before the node's pool lock is taken (pool-update.ts), never while holding it: the two never
// deadlock, and a node's processes do not queue on its pool lock behind one that waits for Whereabouts. A commit that
// finds it needs the Lease anyway (it was lost meanwhile) throws LeaseNeeded, and runs again once the Lease is back.

import { monotonicMs, sleep } from '../../clock.ts';
import type { LeaderTiming } from '../../config/types.ts';
import { ErrorKind, HereaboutsError, messageOf } from '../../errors.ts';
import type { ApiClient } from '../../kube/api.ts';
import { ApiStatusError } from '../../kube/errors.ts';
import { getLease, leaseBody, LeaseObservation, microTime, updateLease, type Lease } from '../../kube/lease.ts';
import type { PoolRef } from '../store.ts';
import type { ContentionMemory } from './contention.ts';
import {
  MIXED_WINDOW_MS,
  SEEN_ANNOTATION,
  TRANSITIONS_ANNOTATION,
  whereaboutsLeaseName,
  whereaboutsSeenAt,
} from './whereabouts-seen.ts';

/** How long an update waits for the Lease: Whereabouts gives its own ADD 2 minutes (AddTimeLimit), kubelet as long. */
export const LEASE_WAIT_MS = 90_000;

/** Thrown inside the pool lock when a write must be made as the Lease's holder: wait for it outside, run again. */
export class LeaseNeeded extends Error {
  constructor(lease: string) {
    super(`Lease ${lease} is needed before writing`);
    this.name = 'LeaseNeeded';
  }
}

export interface LeaseLog {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
}

export interface WhereaboutsLeaseOptions {
  /** Whereabouts' leader_* keys (config/leader-timing.ts). */
  readonly timing: LeaderTiming;
  /** Part of the holder identity the Lease shows. */
  readonly node: string | undefined;
  readonly cleanupTimeoutMs: number;
  readonly log: LeaseLog;
  /**
   * The Leases this host was lately refused a read of (403), kept by a long-lived host (the node agent) across its
   * updates: not asked for again until the memory passes. Not reading a Lease is what a 403 makes an update do anyway.
   */
  readonly forbidden?: ContentionMemory;
  /** Told when the update finds a Whereabouts plugin writing the pool, before it waits for the Lease or plans. */
  readonly onMixed?: () => void;
  /** How long the update may wait for the Lease in all (LEASE_WAIT_MS). */
  readonly waitMs?: number;
}

/** A Lease read, and when its request was sent (monotonic): where an observation of its record starts. */
interface Read {
  readonly lease: Lease;
  readonly sentAt: number;
}

/** One pool update's part in Whereabouts' Lease of its pool. */
export class WhereaboutsLease {
  readonly #api: ApiClient;
  readonly #name: string;
  readonly #options: WhereaboutsLeaseOptions;
  readonly #identity: string;
  readonly #observation = new LeaseObservation();
  /** Detection's verdict: 'free' (no Whereabouts writer: go on without the Lease), 'mixed', or not read yet. */
  #verdict: 'free' | 'mixed' | undefined;
  /** The Lease as this update last wrote it while holding it. */
  #held: Lease | undefined;
  /** When the write that last took or renewed it was sent (monotonic). */
  #renewedAtMs = 0;
  #renewTimer: NodeJS.Timeout | undefined;
  #renewing: Promise<void> | undefined;
  /** The first read of the Lease, kept for acquire(). */
  #seen: Read | undefined;
  /** How long the update may wait for the Lease in all, however often it waits. */
  readonly #waitMs: number;
  /** When waiting for the Lease fails (monotonic): #waitMs after the update began. */
  readonly #deadlineMs: number;

  constructor(api: ApiClient, pool: PoolRef, options: WhereaboutsLeaseOptions) {
    this.#api = api;
    this.#name = whereaboutsLeaseName(pool);
    this.#options = options;
    this.#waitMs = options.waitMs ?? LEASE_WAIT_MS;
    this.#deadlineMs = monotonicMs() + this.#waitMs;
    // Unique per update (a node agent runs many at once); not a secret.
    this.#identity = `hereabouts/${options.node ?? 'unknown'}/${Math.random().toString(36).slice(2, 10)}`;
  }

  /** True while this update holds the Lease. */
  get held(): boolean {
    return this.#held !== undefined;
  }

  /**
   * Before every write of the update (inside the pool lock): returns when it may write; throws LeaseNeeded when the
   * Lease must be waited for first (acquire(), outside the lock).
   */
  async beforeWrite(): Promise<void> {
    if (await this.mayWrite()) return;
    // Held, but not renewed within its margin (a loaded API server): given up, not kept renewed. Renewals that keep
    // the record moving while the holder cannot write would keep every waiter out for as long as the load lasts;
    // the update waits for it again as any candidate, within its time.
    if (this.#held !== undefined) {
      this.#options.log.info(
        `Lease ${this.#where()} not renewed within its margin: handed back, to be waited for again`,
      );
      await this.release();
    }
    throw new LeaseNeeded(this.#where());
  }

  /** Whether the update may write now, without waiting (no Whereabouts writer around, or the Lease is ours). */
  async mayWrite(): Promise<boolean> {
    if (this.#held !== undefined) return this.#fresh();
    return (await this.#verdictNow()) === 'free';
  }

  /**
   * Whether a Whereabouts plugin may be writing the pool now (read once per update; held: yes). Plans then take the
   * highest free address: the Lease alone cannot keep a deposed Whereabouts ADD from going on with its pick.
   */
  async whereaboutsWrites(): Promise<boolean> {
    const mixed = this.#held !== undefined || (await this.#verdictNow()) === 'mixed';
    if (mixed) this.#options.onMixed?.();
    return mixed;
  }

  /**
   * Before the update takes its pool lock: reads the Lease, and waits until it is ours when a Whereabouts plugin wrote
   * it lately. The update's processes then do not hold the pool lock only to find out that they must wait, which would
   * keep the Lease's holder waiting for the lock.
   */
  async prepare(): Promise<void> {
    if ((await this.#verdictNow()) !== 'mixed') return;
    this.#options.onMixed?.();
    await this.acquire();
  }

  /**
   * The update had to wait for its pool lock: a Whereabouts plugin may have taken the Lease since a 'free' verdict was
   * read, so it is read again before the next write (the wait must not widen the window for a race).
   */
  waitedForLock(): void {
    if (this.#verdict === 'free') this.#verdict = undefined;
  }

  /** Waits until the Lease is ours (outside any pool lock), then keeps it renewed until release(). */
  async acquire(): Promise<void> {
    if (this.#held !== undefined) return;
    const began = monotonicMs();
    let read = this.#seen;
    this.#seen = undefined;
    for (;;) {
      read ??= await this.#read();
      if (read === undefined) {
        this.#verdict = 'free'; // deleted meanwhile: nothing left to take part in
        return;
      }
      const { lease, sentAt } = read;
      read = undefined;
      this.#observation.observe(lease.spec, sentAt);
      const left = this.#deadlineMs - monotonicMs();
      // Checked whoever holds it: an update that takes it and cannot keep it fresh must not go round for ever.
      if (left <= 0)
        throw new HereaboutsError(
          ErrorKind.Unavailable,
          `Lease ${this.#where()} is held by ${holderOf(lease)}: gave up waiting for it after ${this.#waitMs} ms`,
          { details: 'a Whereabouts plugin writes this pool during a switch; retry the request' },
        );
      if (this.#observation.heldByOther(lease.spec, this.#identity)) {
        // client-go's candidates wait a jittered retry period (factor 1.2): no faster than Whereabouts' own waiters.
        await sleep(Math.min(left, this.#options.timing.retryPeriodMs * (1 + Math.random() * 1.2)));
        continue;
      }
      if (await this.#take(lease)) {
        this.#options.log.debug(`Lease ${this.#where()} taken after ${Math.round(monotonicMs() - began)} ms`);
        return;
      }
    }
  }

  /** Hands the Lease back at once (as client-go's ReleaseOnCancel does), so that a waiting Whereabouts goes on. */
  async release(): Promise<void> {
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    await this.#renewing;
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    const now = microTime(new Date());
    const body = leaseBody(held, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now });
    try {
      await updateLease(this.#api, held, body, { timeoutMs: this.#options.cleanupTimeoutMs });
      this.#options.log.debug(`Lease ${this.#where()} handed back`);
    } catch (err) {
      // It expires after its duration all the same.
      this.#options.log.warning(`could not hand back Lease ${this.#where()}: ${messageOf(err)}`);
    }
  }

  /** The update's verdict, read from the Lease once (and again after waitedForLock() forgot a 'free' one). */
  async #verdictNow(): Promise<'free' | 'mixed'> {
    this.#verdict ??= await this.#detect();
    return this.#verdict;
  }

  /** 'mixed' when a Whereabouts plugin wrote the Lease within the window, else 'free'. */
  async #detect(): Promise<'free' | 'mixed'> {
    const sentAt = monotonicMs();
    const forbidden = this.#options.forbidden;
    if (forbidden?.contended(this.#where(), sentAt) === true) return 'free';
    let lease: Lease | undefined;
    try {
      lease = await getLease(this.#api, this.#api.namespace, this.#name, { notOlderThan: '0' });
    } catch (err) {
      if (!(err instanceof ApiStatusError && err.status === 403)) throw err;
      // deploy/ grants the node only Whereabouts' `whereabouts` Lease (of the shared pools), by name: a node-slice
      // pool's Lease needs an operator's grant (docs/migration.md).
      this.#options.log.debug(`cannot read Lease ${this.#where()} (forbidden): going on without it`);
      forbidden?.mark(this.#where(), sentAt);
      return 'free';
    }
    if (lease === undefined) return 'free';
    const seen = whereaboutsSeenAt(lease);
    if (seen === undefined || Date.now() - seen > MIXED_WINDOW_MS) return 'free';
    this.#options.log.info(
      `Lease ${this.#where()}: a Whereabouts plugin wrote it ${Math.max(0, Math.round((Date.now() - seen) / 1000))} s ago; writing as its holder`,
    );
    this.#seen = { lease, sentAt };
    return 'mixed';
  }

  /** One conditional write that takes the Lease; false when someone wrote it since it was read. */
  async #take(lease: Lease): Promise<boolean> {
    const now = microTime(new Date());
    const transitions = (lease.spec.leaseTransitions ?? 0) + 1;
    const seen = whereaboutsSeenAt(lease);
    const body = leaseBody(
      lease,
      {
        holderIdentity: this.#identity,
        leaseDurationSeconds: this.#seconds(),
        acquireTime: now,
        renewTime: now,
        leaseTransitions: transitions,
      },
      {
        [TRANSITIONS_ANNOTATION]: String(transitions),
        ...(seen === undefined ? {} : { [SEEN_ANNOTATION]: new Date(seen).toISOString() }),
      },
    );
    const sentAt = monotonicMs();
    const written = await updateLease(this.#api, lease, body);
    if (written === 'conflict') return false;
    this.#held = written;
    this.#renewedAtMs = sentAt;
    this.#renewTimer = setInterval(() => void this.#renew(), this.#options.timing.retryPeriodMs);
    this.#renewTimer.unref();
    return true;
  }

  /**
   * True while the Lease is ours with a margin of a retry period before a waiter could take it (renewed now if
   * due); false once it was lost.
   */
  async #fresh(): Promise<boolean> {
    const marginMs = this.#seconds() * 1000 - this.#options.timing.retryPeriodMs;
    if (monotonicMs() - this.#renewedAtMs >= marginMs) await this.#renew();
    return this.#held !== undefined && monotonicMs() - this.#renewedAtMs < marginMs;
  }

  /** Renews the held Lease (one renewal at a time); a conflict means another holder took it: it is lost. */
  #renew(): Promise<void> {
    this.#renewing ??= (async () => {
      const held = this.#held;
      if (held === undefined) return;
      const sentAt = monotonicMs();
      try {
        const written = await updateLease(this.#api, held, leaseBody(held, { renewTime: microTime(new Date()) }));
        if (written === 'conflict') {
          this.#lost();
          return;
        }
        this.#held = written;
        this.#renewedAtMs = sentAt;
      } catch (err) {
        // Still ours until its duration has passed without a renewal; #fresh() judges that.
        this.#options.log.warning(`could not renew Lease ${this.#where()}: ${messageOf(err)}`);
      }
    })().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  #lost(): void {
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    this.#held = undefined;
    this.#options.log.info(`Lease ${this.#where()} lost (taken by another holder)`);
  }

  /** A quorum read of the Lease, with when it was sent. */
  async #read(): Promise<Read | undefined> {
    const sentAt = monotonicMs();
    const lease = await getLease(this.#api, this.#api.namespace, this.#name);
    return lease === undefined ? undefined : { lease, sentAt };
  }

  /**
   * The duration this holder writes: client-go writes int(LeaseDuration / time.Second), 1 s for Whereabouts' 1500 ms;
   * rounded up here, so that a holder slowed by a loaded node keeps a margin of a retry period.
   */
  #seconds(): number {
    return Math.max(1, Math.ceil(this.#options.timing.leaseDurationMs / 1000));
  }

  #where(): string {
    return `${this.#api.namespace}/${this.#name}`;
  }
}

const holderOf = (lease: Lease): string => {
  const holder = lease.spec.holderIdentity ?? '';
  return holder === '' ? 'nobody' : holder;
};
