// One commit of a plan on one IPPool, as an object (the write path and its invariants: commit.ts). Its state is its
// fields; its steps are methods: an attempt resumes (reads the pool again after a refused write), plans, reserves a
// claimed address cluster-wide, and writes the pool conditional on the version planned on; once the attempts are
// over, the commit settles (the caller's cache, then the reservations it held).
import { monotonicMs } from '../../clock.ts';
import { ErrorKind, HereaboutsError, messageOf } from '../../errors.ts';
import { formatIP, type IPAddress } from '../../ip/address.ts';
import { applyChange } from '../local/apply-change.ts';
import {
  claimsOf,
  type AllocationRecord,
  type Allocations,
  type Plan,
  type Planned,
  type PoolChange,
  type PoolRef,
} from '../store.ts';
import type { CommitContext, CommitOptions } from './commit.ts';
import { mayHaveApplied } from '../../kube/errors.ts';
import type { PoolState } from './pool-object.ts';
import { fetchPool } from './pool-read.ts';
import { isLoneClaim, writePool } from './pool-write.ts';
import { reserve, type Held } from './reservations.ts';
import { sliceGivenBack } from './slice-reassigned.ts';
import { settleUnused, settleWritten } from './settle-reservations.ts';
import { CONFLICT } from '../../kube/retry.ts';

export interface Relied {
  readonly held: Held;
  /** The record the claim committed. */
  readonly record: AllocationRecord;
  /** This commit created the reservation (else it adopted it, and never removes it). */
  readonly created: boolean;
}

export interface Settled<T> {
  readonly value: T;
  readonly state: PoolState;
  /** What was written and the allocations it was written over; absent when nothing was. */
  readonly written?: { readonly change: PoolChange; readonly before: Allocations };
}

/** A step's answer when the view changed under the plan (read fresh, or an address refused): plan again. */
export const AGAIN: unique symbol = Symbol('again');

export class PoolCommit<T> {
  /** Addresses found reserved through an overlapping range: plans skip them. */
  readonly refused = new Set<bigint>();
  /** Reservations this commit created and has not committed: the only ones it may remove. */
  readonly created = new Map<bigint, Held>();
  /** Reservations found existing for this attachment: held, never removed by this commit. */
  readonly adopted = new Map<bigint, Held>();
  /**
   * The reservation the claim of the write that landed relies on (created or adopted by this commit), as this commit
   * left it: confirmed before the commit reports success (confirm-claims.ts).
   */
  readonly relied = new Map<bigint, Relied>();
  /** The claims of a write whose answer was lost (it may have landed), with their reservations: the commit finds out. */
  uncertain: Array<Relied & { readonly address: bigint }> = [];
  /** The view plans are made on: the node cache's (`options.initial`) until something is read from the API. */
  state: PoolState | undefined;
  /** The write just refused: the version it was planned on (the re-read must show a newer one), and its form. */
  lastRefusal: { readonly version: string | undefined; readonly jsonClaim: boolean } | undefined;
  /** Lone claims as JSON patches, until one is refused on a version that had not moved (the patch did not fit). */
  jsonClaims = true;
  /**
   * Collisions with other writers on the very address planned. From the second one on (one can be a leaked or an
   * overlapping range's reservation), plans search from a random point of the range: a burst of writers racing for
   * the lowest free address would otherwise probe every address one conflict at a time.
   */
  collisions = 0;
  /** Where plans start their search (a fraction of the range); undefined: at the lowest address. */
  spread: number | undefined;
  /** The claim of a write that met a conflict. */
  contested: bigint | undefined;

  readonly #ctx: CommitContext;
  readonly #pool: PoolRef;
  readonly #plan: Plan<T>;
  readonly #options: CommitOptions;
  /** The pool in the host's memory (CommitContext.memory). */
  readonly #key: string;

  constructor(ctx: CommitContext, pool: PoolRef, plan: Plan<T>, options: CommitOptions = {}) {
    this.#ctx = ctx;
    this.#pool = pool;
    this.#plan = plan;
    this.#options = options;
    this.state = options.initial;
    this.#key = `${ctx.api.namespace}/${pool.name}`;
    ctx.memory.remember(this.#key, options.contention);
    // A pool this process raced others on a moment ago (a node agent serving a burst) is searched spread at once.
    this.spread = ctx.memory.contention.contended(this.#key, monotonicMs()) ? Math.random() : undefined;
  }

  /** The view of the attempt under way (resume() reads one when there is none). */
  get view(): PoolState {
    if (this.state === undefined) throw new Error(`IPPool ${this.#pool.name}: no view to plan on before resume()`);
    return this.state;
  }

  /** One attempt (retry.ts runs them): the settled outcome, or CONFLICT when its write was refused. */
  async attempt(): Promise<Settled<T> | typeof CONFLICT> {
    await this.resume();
    // Each turn returns, turns the state fresh, or grows `refused`: bounded by the range.
    for (;;) {
      const planned = await this.plan();
      if (planned === AGAIN) continue;
      if (planned.change === null) return { value: planned.value, state: this.view };
      if ((await this.admit()) === AGAIN) continue;
      if ((await this.catchUp()) === AGAIN) continue;
      if ((await this.reserve(planned.change)) === AGAIN) continue;
      return this.write(planned.change, planned.value);
    }
  }

  /** The start of an attempt: the view to plan on (read again after a refused write), and what the refusal showed. */
  async resume(): Promise<void> {
    if (this.lastRefusal !== undefined || this.state === undefined)
      this.state = await this.readAgain(this.lastRefusal?.version);
    // A claim refused, yet the pool had not moved: the object is not what the JSON patch expects (no spec.allocations).
    if (this.lastRefusal?.jsonClaim === true && this.lastRefusal.version === this.state.resourceVersion)
      this.jsonClaims = false;
    this.lastRefusal = undefined;
    // A write planned on a fresh view lost to another writer's claim of the very same address.
    if (this.contested !== undefined && this.state.allocations.has(this.contested)) this.collided();
    this.contested = undefined;
  }

  /**
   * The plan on the current view (its change stamped with this writer's node), or AGAIN once the view was read
   * fresh. Throws on a claim in a retired pool, unless the NodeSlicePool read now gives the slice back to this node.
   */
  async plan(): Promise<Planned<T> | typeof AGAIN> {
    const state = this.view;
    const hints = {
      reserved: new Set([...this.created.keys(), ...this.adopted.keys()]),
      ...(this.spread === undefined ? {} : { spread: this.spread }),
      ...((await this.#options.lease?.whereaboutsWrites()) === true ? { highestFirst: true } : {}),
    };
    const planned = this.#plan(state.allocations, this.refused, hints);
    if (planned.change === null) {
      if (!state.fresh) {
        await this.freshen(); // "nothing to do" is confirmed on the API's view, never the node cache's
        return AGAIN;
      }
      return { value: planned.value, change: null };
    }
    const change = stamped(planned.change, this.#ctx.node);
    if (claimsOf(change).length > 0 && state.retired !== undefined) {
      if (!state.fresh) {
        await this.freshen();
        return AGAIN;
      }
      if (await sliceGivenBack(this.#ctx.api, this.#pool)) return { value: planned.value, change };
      throw new HereaboutsError(
        ErrorKind.Unavailable,
        `IPPool ${this.#pool.name} was retired: its node slice was released after this request read it`,
        {
          details: "the next ADD reads this node's current slice",
        },
      );
    }
    return { value: planned.value, change };
  }

  /**
   * Whereabouts' Lease, when the caller passed it (whereabouts-lease.ts): throws LeaseNeeded while a Whereabouts
   * plugin writes the pool and the Lease is not this update's. Held, a plan made on the node cache is made again on
   * the API's view: the other writers wrote the pool while this one waited for the Lease.
   */
  async admit(): Promise<'ready' | typeof AGAIN> {
    const lease = this.#options.lease;
    if (lease === undefined) return 'ready';
    await lease.beforeWrite();
    if (!lease.held || this.view.fresh) return 'ready';
    await this.freshen();
    return AGAIN;
  }

  /**
   * A plan made on the node cache of a pool others keep writing (a node agent's renames on a shared pool, a DEL) is
   * made again on the API server's watch cache first: its version is nearly always gone, and a read (~2 ms of API
   * server CPU) spares a refused write (~12 ms) and the backoff after it. A claim reads anyway before it reserves.
   */
  async catchUp(): Promise<'ready' | typeof AGAIN> {
    if (this.view.fresh || this.#options.trustInitial === true) return 'ready';
    if (!this.#ctx.memory.busy.contended(this.#key, monotonicMs())) return 'ready';
    await this.freshen();
    return AGAIN;
  }

  /**
   * Reserves the change's claim cluster-wide (enable_overlapping_ranges) unless this commit holds its reservation
   * already: 'ready' when the change may be written, AGAIN when the plan must be made again.
   */
  async reserve(change: PoolChange): Promise<'ready' | typeof AGAIN> {
    if (!this.#ctx.reservations) return 'ready';
    const unreserved = claimsOf(change).filter((c) => !this.created.has(c.address) && !this.adopted.has(c.address));
    if (unreserved.length === 0) return 'ready';
    if (!this.view.fresh && this.#options.trustInitial !== true) {
      await this.freshen(); // reserve only what this plan can commit
      return AGAIN;
    }
    for (const claim of unreserved) {
      await this.#options.lease?.beforeWrite(); // the Lease renewed if due
      const outcome = await reserve(this.#ctx.api, this.#pool, this.#ip(claim.address), claim.record);
      if (outcome.kind === 'taken') {
        this.#ctx.log.info(
          `IPPool ${this.#pool.name}: ${formatIP(this.#ip(claim.address))} is reserved through an overlapping range; planning again`,
        );
        this.refused.add(claim.address);
        if (this.view.fresh)
          this.collided(); // planned on the API's view: a writer racing for the same address
        else await this.freshen(); // someone else got there first: the cached view is behind
        return AGAIN; // the reservations held so far are preferred by the next plan (PlanHints.reserved)
      }
      if (outcome.kind === 'created') this.created.set(claim.address, outcome.held);
      else this.adopted.set(claim.address, outcome.held);
    }
    // On a pool others keep writing, the version planned on is likely gone by the time the reservation is
    // answered: a read from the watch cache now (~2 ms of API server CPU) spares a refused write (~12 ms) and
    // the round trips and backoff after it. Only a writer that does not reserve first (Whereabouts, a network
    // without enable_overlapping_ranges) can commit the reserved address meanwhile: the plan then moves on.
    if (
      this.view.fresh &&
      this.#options.trustInitial !== true &&
      this.#ctx.memory.busy.contended(this.#key, monotonicMs())
    ) {
      await this.freshen();
      return AGAIN;
    }
    return 'ready';
  }

  /** Writes the change conditional on the version planned on: the settled outcome, or CONFLICT when refused. */
  async write(change: PoolChange, value: T): Promise<Settled<T> | typeof CONFLICT> {
    const state = this.view;
    const claim = change.claim;
    const next = applyChange(this.#pool, state.allocations, change);
    await this.#options.lease?.beforeWrite();
    this.#options.beforeWrite?.();
    // A slice assigned again after its pool was retired: the claim lifts the mark in the same conditional write.
    const unretire = claim !== undefined && state.retired !== undefined;
    const lone = this.jsonClaims && !unretire && claim !== undefined && isLoneClaim(change) ? claim : undefined;
    let written: PoolState | typeof CONFLICT;
    try {
      written = await writePool(this.#ctx, this.#pool, state, next, {
        unretire,
        ...(lone === undefined ? {} : { lone }),
      });
    } catch (err) {
      // The write may have landed: its claim's reservation must then stay, or an overlapping range could reuse it,
      // and the caller's cache no longer says what this node last wrote.
      if (mayHaveApplied(err)) {
        for (const { address, record } of claimsOf(change)) {
          const held = this.created.get(address) ?? this.adopted.get(address);
          const created = this.created.delete(address);
          if (held !== undefined) this.uncertain.push({ address, held, record, created });
        }
        this.#options.onUncertain?.();
      }
      throw err;
    }
    if (written === CONFLICT) return this.#refusedWrite(claim?.address, lone !== undefined);
    this.relied.clear();
    for (const { address, record } of claimsOf(change)) {
      const held = this.created.get(address) ?? this.adopted.get(address);
      if (held !== undefined) this.relied.set(address, { held, record, created: this.created.has(address) });
      this.created.delete(address);
      this.adopted.delete(address);
    }
    return { value, state: written, written: { change, before: state.allocations } };
  }

  /**
   * After the last attempt: the caller's cache learns the state and the contention, then the reservations settle,
   * and only then does Whereabouts' Lease go back: a held address found without its reservation gets one as the
   * Lease's holder, when no Whereabouts ADD can be between its check of that reservation and its create. A cache
   * that cannot be written does not undo what the API holds: the caller drops it instead (onUncertain), and the
   * commit is done.
   */
  async settle(settled: Settled<T>): Promise<void> {
    try {
      this.#options.onSettled?.(settled.state, this.#ctx.memory.marksOf(this.#key));
    } catch (err) {
      this.#ctx.log.warning(
        `IPPool ${this.#pool.name}: written, but the node cache could not be updated; dropping it (the next request reads the API): ${messageOf(err)}`,
      );
      this.#options.onUncertain?.();
    }
    const lease = this.#options.lease;
    try {
      await this.settleUnused(settled.state.allocations);
      if (this.#ctx.reservations && settled.written !== undefined)
        await settleWritten(this.#ctx, this.#pool, settled.written.change, settled.written.before, {
          ...(lease === undefined ? {} : { mayCreate: () => lease.mayWrite() }),
          ...(this.#options.unfollowed === undefined ? {} : { unfollowed: this.#options.unfollowed }),
          ...(this.#options.knownReservation === undefined ? {} : { known: this.#options.knownReservation }),
        });
    } finally {
      await lease?.release();
    }
  }

  /** The reservations held and not committed, against the pool's `final` allocations (undefined: the commit failed). */
  async settleUnused(final: Allocations | undefined): Promise<void> {
    await settleUnused(this.#ctx, this.#pool, { created: this.created, adopted: this.adopted }, final);
  }

  /**
   * The pool again: after a refused write, from the API server's watch cache if it already holds a newer version than
   * the one refused (it nearly always does: the write that won is milliseconds old), else a quorum read.
   */
  async readAgain(refusedVersion: string | undefined): Promise<PoolState> {
    if (refusedVersion !== undefined) {
      const cached = await fetchPool(this.#ctx, this.#pool, { notOlderThan: refusedVersion });
      if (cached.resourceVersion !== undefined && cached.resourceVersion !== refusedVersion) return cached;
    }
    return fetchPool(this.#ctx, this.#pool);
  }

  /**
   * The API's view of a pool known from the node cache: served from the API server's watch cache, never older than
   * the cached version. The node cache holds this node's own last write (it is dropped when a write's answer was
   * lost), and this node's records are written only by this node, so such a view is as good as a quorum read taken
   * the watch's delay earlier — a stall that short, which every decision here already tolerates.
   */
  async freshen(): Promise<void> {
    const known = this.view;
    this.state = await fetchPool(
      this.#ctx,
      this.#pool,
      known.resourceVersion === undefined ? {} : { notOlderThan: known.resourceVersion },
    );
  }

  /** A collision with another writer on the very address planned (see `collisions`). */
  collided(): void {
    this.#ctx.memory.busy.mark(this.#key, monotonicMs());
    if (++this.collisions < 2) return;
    this.spread ??= Math.random();
    this.#ctx.memory.contention.mark(this.#key, monotonicMs());
  }

  /** The write was refused: the next attempt reads the pool again (resume()). */
  #refusedWrite(claimed: bigint | undefined, jsonClaim: boolean): typeof CONFLICT {
    const state = this.view;
    this.#ctx.log.info(
      `IPPool ${this.#pool.name}: changed since resourceVersion ${state.resourceVersion ?? '(none)'}; reading it again`,
    );
    this.lastRefusal = { version: state.resourceVersion, jsonClaim };
    if (state.fresh) {
      this.contested = claimed; // planned on the API's view: another writer raced us
      this.#ctx.memory.busy.mark(this.#key, monotonicMs());
    }
    return CONFLICT;
  }

  #ip(value: bigint): IPAddress {
    return { family: this.#pool.range.cidr.family, value };
  }
}

/** Records written by this node carry its name (claims, and the new container of an idempotent ADD). */
function stamped(change: PoolChange, node: string | undefined): PoolChange {
  if (node === undefined) return change;
  const withNode = (record: AllocationRecord): AllocationRecord =>
    record.node === node ? record : { ...record, node };
  return {
    ...change,
    ...(change.claim === undefined ? {} : { claim: { ...change.claim, record: withNode(change.claim.record) } }),
    ...(change.moreClaims === undefined
      ? {}
      : { moreClaims: change.moreClaims.map((c) => ({ ...c, record: withNode(c.record) })) }),
    ...(change.update === undefined
      ? {}
      : { update: change.update.map((u) => ({ ...u, record: withNode(u.record) })) }),
  };
}
