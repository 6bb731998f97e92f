// Warm sets (DESIGN §11): the node agent answers an ADD from an address its node already holds cluster-wide, and a
// plain DEL at once, each made durable in the node-local journal before the answer; the pool catches up in grouped
// writes off the call's path (group-plan.ts). Every call that is not a plain claim from
// the warm set or a plain release runs the synchronous path, after this pool's pending writes have landed.
//
// Why nothing is handed out twice: the pool is the only record of who holds an address, and the set is a cache of it.
// An address is handed out only when the pool view this node holds (the node cache: its own last write or fresh read)
// names it as this node's warm record for this pool with this call's settings, checked at the hand-out; it leaves the
// set before the journal append that hands it out, and the journal is replayed before the agent serves (its pending
// addresses never join a set). A write that failed, or whose answer was lost, restores nothing: the set is derived
// again from the pool, by a write (so that no older write of the pool can land after it). Give-backs release only what
// the agent took out of the set first. No other writer frees a warm record while its node
// exists: hereabouts' controller releases it only when the node is gone, the Whereabouts reconciler would, so warm
// sets are on only while the controller says no Whereabouts component runs (warm-gate.ts), and a pool a Whereabouts
// plugin writes gives its warm records back.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { monotonicMs } from '../../../clock.ts';
import { DEFAULT_LOCK_TIMING, tryAcquireLock, type HeldLock } from '../../../fs/lock.ts';
import { messageOf } from '../../../errors.ts';
import { formatIP } from '../../../ip/address.ts';
import { poolPaths } from '../../local/paths.ts';
import type { AllocationRecord, Plan, PoolChange, PoolRef } from '../../store.ts';
import { readCachedPool } from '../pool-cache.ts';
import { getObject } from '../objects.ts';
import { allocatesFrom, slicingOf } from '../node-slices.ts';
import { followRecord, releaseReservation, type Held } from '../reservations.ts';
import { updatePool, type WriteContext } from '../pool-update.ts';
import { MIXED_WINDOW_MS } from '../whereabouts-seen.ts';
import { groupPlan, type GroupOutcome, type PendingWrite, type WarmPolicy } from './group-plan.ts';
import {
  Journal,
  JOURNAL_FILE,
  journalAttachment,
  type HandOut,
  type JournalAttachment,
  type JournalEntry,
} from './journal.ts';
import { WarmGate } from './warm-gate.ts';
import { decodePoolRef, encodePoolRef } from './pool-ref-json.ts';
import { warmTarget, type WarmBounds } from '../../warm-target.ts';
import { warmId } from '../../warm-record.ts';

export type { WarmPolicy } from './group-plan.ts';

export interface WarmOptions {
  /** The agent's own directory on the host (the journal lives there). */
  readonly dir: string;
  readonly bounds: WarmBounds;
  readonly policy: WarmPolicy;
  readonly log: (msg: string) => void;
  /**
   * Hold the journal's lock for the agent's life (default true): a second agent on the same directory gets no warm
   * sets. Off only for tests that play two agents of one node in one process (the lock is judged by pid).
   */
  readonly exclusive?: boolean;
  /** How often the agent looks after its pools (refills, give-backs, the journal's lock); tests shorten it. */
  readonly tickMs?: number;
}

/** What the agent's metrics show (counters since start, gauges now). */
export interface WarmStats {
  /** Warm addresses held, over every pool. */
  readonly warm: number;
  /** Hand-outs and releases the pools do not show yet. */
  readonly pending: number;
  readonly handedOut: number;
  readonly released: number;
  readonly groupWrites: number;
  /** Pending writes settled by the grouped writes (divided by groupWrites: the batch size). */
  readonly groupedEntries: number;
  readonly groupWriteMs: number;
  readonly groupWriteFailures: number;
  /** Hand-outs the pool no longer held for the agent when their rename came (never expected; see docs/safety.md). */
  readonly lost: number;
  /** Calls that ran the synchronous path. */
  readonly synchronous: number;
  /** Journal appends (one write and one fdatasync each, for every call of a turn of the event loop). */
  readonly journalWrites: number;
  /** Time spent in them. */
  readonly journalMs: number;
  /**
   * 1 while warm sets are off because the journal is not open: it could not be replayed (corrupt, unreadable) or
   * another agent of the node holds its lock (a rolling update's old agent, for seconds; tried again every tick).
   */
  readonly journalOff: number;
}

const RETRY_MS = [200, 1_000, 5_000];
/** Warm addresses one grouped write claims at most: each is a reservation create and a confirming read. */
const MAX_CLAIMS_PER_WRITE = 8;
const TICK_MS = 5_000;
/** How long close() waits for the pending writes and give-backs. */
const CLOSE_GIVE_BACK_MS = 5_000;
/** Settled lines in the journal before it is compacted. */
const COMPACT_AFTER = 4_096;

interface Counters {
  handedOut: number;
  released: number;
  groupWrites: number;
  groupedEntries: number;
  groupWriteMs: number;
  groupWriteFailures: number;
  lost: number;
  synchronous: number;
  journalWrites: number;
  journalMs: number;
}

/** One pool the agent serves: its warm set and what the pool does not show yet. */
class WarmPool {
  readonly key: string;
  /** The settings its warm records are claimed with (settingsOf): the last part of their id. */
  settings: string;
  ctx: WriteContext;
  ref: PoolRef;
  warm = new Set<bigint>();
  /** Taken out of the set to be given back by the grouped write under way or the next one: never handed out. */
  readonly withdrawn = new Set<bigint>();
  /** The reservations of warm addresses as this agent's claims left them: their renames follow without a read. */
  readonly reservations = new Map<bigint, Held>();
  readonly pending = new Map<bigint, PendingWrite>();
  /** Left the warm set, their journal append under way. */
  readonly handing = new Set<bigint>();
  /** The warm set was derived from the pool by a grouped write; false: derive it again before any hand-out. */
  adopted = false;
  /** A Whereabouts plugin wrote the pool lately: no warm set until then (monotonic). */
  mixedUntilMs = 0;
  /**
   * A node-slice pool that is no longer this node's slice to allocate from (draining, or another slice is): its warm
   * records go back, or the controller would wait for ever for the pool to empty.
   */
  superseded = false;
  free = Number.MAX_SAFE_INTEGER;
  readonly adds: number[] = [];
  /** Pods (and interfaces) whose DEL this agent answered: when (monotonic) and the address; see recentlyDeleted(). */
  readonly recentDels = new Map<string, { readonly at: number; readonly address: bigint }>();
  lastAddMs: number | undefined;
  writing: Promise<void> | undefined;
  again = false;
  failures = 0;
  retry: NodeJS.Timeout | undefined;

  constructor(key: string, ctx: WriteContext, ref: PoolRef) {
    this.key = key;
    this.settings = settingsOf(ctx, ref);
    this.ctx = ctx;
    this.ref = ref;
  }

  /** Nothing of this agent's is in the pool's records under these settings, nor on its way there. */
  get quiet(): boolean {
    const { warm, withdrawn, pending, handing, writing } = this;
    return warm.size === 0 && withdrawn.size === 0 && pending.size === 0 && handing.size === 0 && writing === undefined;
  }

  /** Forgets the set: the next grouped write derives it from the pool again. */
  forget(): void {
    this.warm.clear();
    this.withdrawn.clear();
    this.adopted = false;
  }
}

/**
 * What a pool's warm records are claimed with, as a short digest: the range (exclusions, gateway, slice) and the
 * settings its writes depend on (pool-ref-json.ts). A call with other settings never takes from this set.
 */
function settingsOf(ctx: WriteContext, ref: PoolRef): string {
  return crc32(JSON.stringify(encodePoolRef(ref, ctx)))
    .toString(16)
    .padStart(8, '0');
}

export class WarmSets {
  readonly #options: WarmOptions;
  /** Undefined when the journal could not be replayed: warm sets are off, and no warm record is ever adopted. */
  #journal: Journal | undefined;
  #replayed: readonly HandOut[] = [];
  /** Another agent of this node held the journal's lock at the start (a rolling update): taken once it goes. */
  #lockWanted = false;
  readonly #pools = new Map<string, WarmPool>();
  /** Namespaces whose replayed writes were started (#resume). */
  readonly #resumed = new Set<string>();
  readonly #gates = new Map<string, WarmGate>();
  readonly #counters: Counters = {
    handedOut: 0,
    released: 0,
    groupWrites: 0,
    groupedEntries: 0,
    groupWriteMs: 0,
    groupWriteFailures: 0,
    lost: 0,
    synchronous: 0,
    journalWrites: 0,
    journalMs: 0,
  };
  /** Journal entries of the calls of this turn of the event loop: one fdatasync for all of them. */
  #batch: { entries: JournalEntry[]; done: Promise<void> } | undefined;
  readonly #tick: NodeJS.Timeout;
  #lock: HeldLock | undefined;
  /** A read of the NodeSlicePools is under way (#checkSlices). */
  #checking = false;
  /** close() was called: every warm address goes back. */
  #closing = false;
  /** close() is done: nothing is written any more. */
  #stopped = false;

  constructor(options: WarmOptions) {
    this.#options = options;
    this.#openJournal();
    this.#tick = setInterval(() => this.#onTick(), options.tickMs ?? TICK_MS).unref();
  }

  /**
   * Takes the journal's lock and replays the journal. Held by another agent of this node (the one a rolling update
   * replaces, still giving its warm addresses back), it is tried again at every tick: warm sets start once it goes.
   */
  #openJournal(): void {
    const options = this.#options;
    this.#lockWanted = false;
    let journal: Journal | undefined;
    try {
      mkdirSync(options.dir, { recursive: true, mode: 0o700 });
      if (options.exclusive !== false) {
        const lock = join(options.dir, `${JOURNAL_FILE}.lock`);
        this.#lock = tryAcquireLock({ lock }, DEFAULT_LOCK_TIMING);
        if (this.#lock === undefined) {
          this.#lockWanted = true;
          throw new Error(`another agent on this node holds ${lock} (tried again every tick)`);
        }
      }
      journal = Journal.open(options.dir);
    } catch (err) {
      options.log(`warm sets off: ${messageOf(err)}`);
      void this.#lock?.release();
      this.#lock = undefined;
    }
    this.#journal = journal;
    this.#replayed = journal?.pending() ?? [];
    if (this.#replayed.length > 0)
      options.log(`journal: ${this.#replayed.length} hand-out(s) and release(s) to write to their pools`);
    // Pools that calls named before: their replayed writes join them; every namespace is resumed again.
    for (const wp of this.#pools.values())
      for (const entry of this.#replayed)
        if (entry.pool === wp.key) wp.pending.set(BigInt(entry.address), pendingOf(entry, wp.ctx));
    this.#resumed.clear();
  }

  /** The journal is open: this process holds its lock and replayed it. */
  get journaled(): boolean {
    return this.#journal !== undefined;
  }

  stats(): WarmStats {
    let warm = 0;
    let pending = 0;
    for (const pool of this.#pools.values()) {
      warm += pool.warm.size;
      pending += pool.pending.size;
    }
    pending += this.#replayed.filter((h) => !this.#pools.has(h.pool)).length;
    return { warm, pending, ...this.#counters, journalOff: this.#journal === undefined ? 1 : 0 };
  }

  /** Runs `plan` on `pool`: from the warm set when it is a plain claim or release, else through `sync`. */
  async update<T>(ctx: WriteContext, pool: PoolRef, plan: Plan<T>, sync: (plan: Plan<T>) => Promise<T>): Promise<T> {
    this.#resume(ctx);
    const { wp, own } = this.#pool(ctx, pool);
    if (own && pool.sliceNode !== undefined) this.#current(wp);
    if (own && this.#serves(wp)) {
      const fast = this.#fast(wp, plan);
      if (fast !== undefined) return fast;
    }
    // A hand-out whose rename has not landed is this call's to release now, through the journal: else a grouped write
    // after a failed flush could land the rename after this DEL answered, leaving the pod's record behind.
    await this.#releasePendingOf(wp, plan);
    // The pool shows this node's pending writes first (a DEL on the synchronous path must find the pod's record).
    await this.#flush(wp);
    // The write just waited for refilled the set (a burst emptied it): a claim is served from it rather than by a
    // write of its own.
    if (own && this.#serves(wp) && wp.warm.size > 0) {
      const fast = this.#fast(wp, plan);
      if (fast !== undefined) return fast;
    }
    this.#counters.synchronous++;
    try {
      return await sync(preferringPrevious(plan, new Map(wp.recentDels)));
    } finally {
      // Adopt or refill the set off the path, while warm sets are on.
      if (own && this.#journal !== undefined && this.#gate(ctx).open(ctx.api)) this.#schedule(wp);
    }
  }

  /**
   * Until no pool has a pending write or a write under way, trying each pool at most `rounds` times (a failing API
   * leaves the rest pending, as it would be). For a caller that must see the pools at rest (tests, shutdown).
   */
  async settle(rounds = 5): Promise<void> {
    for (let round = 0; round < rounds; round++) {
      const busy = [...this.#pools.values()].filter((wp) => wp.pending.size > 0 || wp.writing !== undefined);
      if (busy.length === 0) return;
      for (const wp of busy) {
        if (wp.writing === undefined) this.#schedule(wp);
        await wp.writing;
      }
    }
  }

  /** Once the pending writes of `pool` answered so far have landed (a read of the pool then shows them). */
  async landed(ctx: WriteContext, pool: PoolRef): Promise<void> {
    await this.#flush(this.#pool(ctx, pool).wp);
  }

  /**
   * Stops: the pending writes are made and the warm addresses given back, within `giveBackMs` (a pool the API server
   * does not answer for keeps them: the next agent adopts them at its first call to the pool, or the controller
   * releases them once the node is gone). Without the give-back, an agent restarted for an upgrade would leave its
   * warm records in every pool no call names again.
   */
  async close(giveBackMs = CLOSE_GIVE_BACK_MS): Promise<void> {
    clearInterval(this.#tick);
    this.#closing = true;
    await this.#batch?.done.catch(() => undefined);
    for (const wp of this.#pools.values()) {
      clearTimeout(wp.retry);
      wp.retry = undefined;
      if (wp.pending.size > 0 || wp.warm.size > 0) this.#schedule(wp);
    }
    const writes = [...this.#pools.values()].flatMap((wp) => (wp.writing === undefined ? [] : [wp.writing]));
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, giveBackMs)));
    await Promise.race([Promise.all(writes), timeUp]);
    clearTimeout(timer);
    this.#stopped = true;
    this.#journal?.close();
    await this.#lock?.release();
  }

  /**
   * The pool's warm set, and whether this call may use it: a call whose settings differ from the set's (another NAD
   * naming the same pool) runs the synchronous path, unless the set holds nothing, which then takes its settings.
   */
  #pool(ctx: WriteContext, ref: PoolRef): { readonly wp: WarmPool; readonly own: boolean } {
    const key = `${ctx.api.namespace}/${ref.name}`;
    let wp = this.#pools.get(key);
    if (wp === undefined) {
      wp = new WarmPool(key, ctx, ref);
      for (const entry of this.#replayed)
        if (entry.pool === key) wp.pending.set(BigInt(entry.address), pendingOf(entry, ctx));
      this.#pools.set(key, wp);
    } else {
      const settings = settingsOf(ctx, ref);
      if (settings !== wp.settings) {
        if (!wp.quiet) return { wp, own: false };
        wp.settings = settings; // the other settings' records go back with its next write (group-plan.ts)
        wp.forget();
      }
    }
    // The latest call's connection (its token is the freshest) and pool.
    wp.ctx = ctx;
    wp.ref = ref;
    return { wp, own: true };
  }

  /**
   * The first call with a connection to a namespace starts the pending writes the journal holds for its pools, each
   * from the pool the journal recorded: a pool no call names again is not left showing the agent's record.
   */
  #resume(ctx: WriteContext): void {
    if (this.#resumed.has(ctx.api.namespace)) return;
    this.#resumed.add(ctx.api.namespace);
    for (const entry of this.#replayed) {
      if (!entry.pool.startsWith(`${ctx.api.namespace}/`) || this.#pools.has(entry.pool)) continue;
      const recorded = decodePoolRef(entry.ref);
      if (recorded === undefined || `${ctx.api.namespace}/${recorded.ref.name}` !== entry.pool) continue;
      this.#schedule(this.#pool({ ...ctx, ...recorded.settings }, recorded.ref).wp);
    }
  }

  #gate(ctx: WriteContext): WarmGate {
    const key = `${ctx.scope.server}|${ctx.api.namespace}`;
    let gate = this.#gates.get(key);
    if (gate === undefined) {
      // Turned on: every pool of this cluster and namespace gets its set (adopted, filled) at once; turned off: the
      // sets go back (#target is 0).
      gate = new WarmGate(this.#options.log, () => {
        for (const wp of this.#pools.values()) if (this.#gate(wp.ctx) === gate) this.#schedule(wp);
      });
      this.#gates.set(key, gate);
    }
    return gate;
  }

  #serves(wp: WarmPool): boolean {
    return (
      this.#journal !== undefined &&
      !this.#closing &&
      wp.adopted &&
      wp.mixedUntilMs <= monotonicMs() &&
      this.#gate(wp.ctx).open(wp.ctx.api)
    );
  }

  /** The call answered from node-local state, or undefined when it must take the synchronous path. */
  #fast<T>(wp: WarmPool, plan: Plan<T>): Promise<T> | undefined {
    const { ctx, ref } = wp;
    const cached = readCachedPool(poolPaths(ctx.cacheDir, ref), ref, ctx.scope, (msg) => ctx.log.warning(msg));
    if (cached === undefined || cached.retired !== undefined) return undefined;
    // The pool as it will be once the pending writes land (a DEL's address gone: a second interface's legacy DEL
    // then finds the next one), with the warm addresses free to choose.
    const view = new Map(cached.allocations);
    for (const [address, write] of wp.pending) {
      if (write.kind === 'name') view.set(address, write.record);
      else view.delete(address);
    }
    for (const address of wp.warm) view.delete(address);
    let planned = plan(view, new Set(), { reserved: wp.warm });
    if (planned.change === null) return undefined;
    let claimed = loneClaim(planned.change);
    const previous = claimed === undefined ? undefined : recentlyDeleted(wp, claimed.record);
    if (previous !== undefined) {
      // A new sandbox of a pod whose DEL this agent answered a moment ago (its sandbox died and is being re-created)
      // gets the address it just had, as the lowest-first pick gives it without warm sets: from the set once the
      // DEL's write made it warm again, else on the synchronous path (after that write, or once it was given back).
      if (!wp.warm.has(previous)) return undefined;
      planned = plan(view, new Set(), { reserved: new Set([previous]) });
      claimed = planned.change === null ? undefined : loneClaim(planned.change);
      if (claimed?.address !== previous) return undefined;
    }
    const change = planned.change;
    if (change === null) return undefined;
    if (claimed !== undefined && wp.warm.has(claimed.address)) {
      // The check that keeps the set a cache of the pool: the view this node holds names the address as its warm
      // record, with these settings. Anything else means the set is behind: derived again, and this call waits.
      const held = cached.allocations.get(claimed.address);
      if (held?.containerId !== warmId(ctx.node, ref.name, wp.settings) || held.podRef !== '') {
        this.#options.log(
          `IPPool ${ref.name}: ${formatIP({ family: ref.range.cidr.family, value: claimed.address })} is not this node's warm record in the pool view it holds; deriving the set again`,
        );
        wp.forget();
        return undefined;
      }
      const record: AllocationRecord = { ...claimed.record, node: ctx.node };
      return this.#handOut(wp, claimed.address, record).then(() => planned.value);
    }
    const released = loneRelease(change);
    if (released !== undefined && released.every((a) => view.has(a) && !wp.handing.has(a))) {
      const records = released.map((a) => [a, view.get(a)] as [bigint, AllocationRecord]);
      return this.#release(wp, records).then(() => planned.value);
    }
    return undefined;
  }

  /**
   * Releases the pending hand-outs `plan` releases (the DEL of an attachment answered from the set, whose rename has not
   * landed), as a DEL answered from the set does: journaled before the call goes on, then written by a grouped write
   * whatever the pool shows by then (the rename landed: released; it did not: the warm record stays the node's).
   */
  async #releasePendingOf<T>(wp: WarmPool, plan: Plan<T>): Promise<void> {
    const named = new Map<bigint, AllocationRecord>();
    for (const [address, write] of wp.pending) if (write.kind === 'name') named.set(address, write.record);
    if (named.size === 0) return;
    let released: readonly bigint[] | undefined;
    try {
      const planned = plan(named, new Set(), { reserved: new Set() });
      released = planned.change === null ? undefined : loneRelease(planned.change);
    } catch {
      return; // not a release on this view (an ADD, a CHECK): the synchronous path decides
    }
    const records: Array<readonly [bigint, AllocationRecord]> = [];
    for (const address of released ?? []) {
      const record = named.get(address);
      if (record !== undefined) records.push([address, record]);
    }
    if (records.length > 0) await this.#release(wp, records);
  }

  async #handOut(wp: WarmPool, address: bigint, record: AllocationRecord): Promise<void> {
    wp.warm.delete(address);
    wp.handing.add(address);
    const settings = wp.settings;
    try {
      await this.#durable([
        {
          op: 'handed-out',
          pool: wp.key,
          address: String(address),
          ...journaled(record),
          ref: encodePoolRef(wp.ref, wp.ctx),
        },
      ]);
    } catch (err) {
      wp.handing.delete(address);
      if (wp.adopted && wp.settings === settings) wp.warm.add(address); // never answered: still the node's
      throw err;
    }
    wp.handing.delete(address);
    wp.pending.set(address, { kind: 'name', record });
    this.#counters.handedOut++;
    const now = monotonicMs();
    wp.adds.push(now);
    wp.lastAddMs = now;
    setImmediate(() => this.#schedule(wp)); // after the answer has gone out
  }

  async #release(wp: WarmPool, records: ReadonlyArray<readonly [bigint, AllocationRecord]>): Promise<void> {
    await this.#durable(
      records.map(([address, record]) => ({
        op: 'released',
        pool: wp.key,
        address: String(address),
        ...journaled(record),
        ref: encodePoolRef(wp.ref, wp.ctx),
      })),
    );
    const now = monotonicMs();
    for (const [address, attachment] of records) {
      wp.pending.set(address, { kind: 'warm', attachment });
      if (attachment.podRef !== '') wp.recentDels.set(ownerKey(attachment), { at: now, address });
    }
    this.#counters.released += records.length;
    setImmediate(() => this.#schedule(wp));
  }

  /** Appends `entries` with the other calls of this turn: one write and one fdatasync for all of them. */
  #durable(entries: readonly JournalEntry[]): Promise<void> {
    const journal = this.#journal;
    if (journal === undefined) return Promise.reject(new Error('warm sets are off: no journal'));
    if (this.#batch === undefined) {
      const batch: { entries: JournalEntry[]; done: Promise<void> } = { entries: [], done: Promise.resolve() };
      batch.done = new Promise<void>((resolve, reject) =>
        setImmediate(() => {
          this.#batch = undefined;
          try {
            const started = monotonicMs();
            journal.append(batch.entries);
            this.#counters.journalWrites++;
            this.#counters.journalMs += monotonicMs() - started;
            resolve();
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        }),
      );
      this.#batch = batch;
    }
    this.#batch.entries.push(...entries);
    return this.#batch.done;
  }

  /** Waits until this pool's pending writes have landed (or a grouped write failed: the sync path reports that). */
  async #flush(wp: WarmPool): Promise<void> {
    // Bounded: a write that lands but leaves an entry pending (a reservation it cannot bring in step) is tried again
    // by the next grouped write, not by this call for ever.
    for (let round = 0; round < 3 && (wp.pending.size > 0 || wp.writing !== undefined); round++) {
      const failures = wp.failures;
      if (wp.writing === undefined) this.#schedule(wp);
      await wp.writing;
      if (wp.failures > failures) return;
    }
  }

  #schedule(wp: WarmPool): void {
    if (wp.writing !== undefined) {
      wp.again = true; // everything that arrives meanwhile goes in the next write
      return;
    }
    clearTimeout(wp.retry);
    wp.retry = undefined;
    wp.writing = this.#writeLoop(wp).finally(() => (wp.writing = undefined));
  }

  async #writeLoop(wp: WarmPool): Promise<void> {
    for (;;) {
      wp.again = false;
      // Calls answered meanwhile ask for a write each; once one write took them all, nothing is left to do.
      if (wp.adopted && wp.pending.size === 0 && wp.warm.size === this.#target(wp)) return;
      const progress = await this.#groupWrite(wp);
      if (!again(wp) && !(progress && this.#short(wp))) return;
    }
  }

  /** The warm target of `wp` now (0 while warm sets are off for it). */
  #target(wp: WarmPool): number {
    const now = monotonicMs();
    const { bounds } = this.#options;
    while (wp.adds.length > 0 && (wp.adds[0] ?? now) < now - bounds.windowMs) wp.adds.shift();
    if (
      this.#journal === undefined ||
      this.#closing ||
      wp.mixedUntilMs > now ||
      wp.superseded ||
      !this.#gate(wp.ctx).open(wp.ctx.api)
    )
      return 0;
    return warmTarget(bounds, {
      addsInWindow: wp.adds.length,
      sinceLastAddMs: wp.lastAddMs === undefined ? undefined : now - wp.lastAddMs,
      free: wp.free,
      warm: wp.warm.size,
    });
  }

  #short(wp: WarmPool): boolean {
    return wp.warm.size < this.#target(wp);
  }

  /** One grouped write; true when it changed the pool (so another may be worth making at once). */
  async #groupWrite(wp: WarmPool): Promise<boolean> {
    const pending = new Map(wp.pending);
    const target = this.#target(wp);
    const over = wp.adopted ? Math.max(0, wp.warm.size - target) : 0;
    for (const address of [...wp.warm].slice(0, over)) {
      wp.warm.delete(address); // not handed out while it is given back
      wp.withdrawn.add(address);
    }
    const adopt = !wp.adopted;
    const settings = wp.settings;
    const started = monotonicMs();
    let outcome: GroupOutcome;
    // Renames whose reservation did not follow stay pending: the next write brings it in step (`landed`).
    const unfollowed = new Set<bigint>();
    try {
      outcome = await updatePool(
        wp.ctx,
        wp.ref,
        groupPlan({
          node: wp.ctx.node,
          pool: wp.ref.name,
          settings,
          range: wp.ref.range,
          pending,
          withdrawn: wp.withdrawn,
          adopt,
          claim: Math.min(MAX_CLAIMS_PER_WRITE, Math.max(0, target - wp.warm.size)),
          policy: this.#options.policy,
          createdAt: new Date().toISOString(),
        }),
        {
          unfollowed: (address) => unfollowed.add(address),
          claimed: (address, held) => wp.reservations.set(address, held),
          knownReservation: (address) => wp.reservations.get(address),
          // Whereabouts writes the pool: hand-outs stop before the write waits for its Lease, and the set goes back.
          mixed: () => this.#stopForWhereabouts(wp),
          // An agent that stopped (its journal's lock given back) writes nothing more, not even a retry.
          beforeWrite: () => this.#assertOwnJournal(),
        },
      );
    } catch (err) {
      // Nothing is restored from memory: the write may have landed (a lost answer). The set is derived again.
      if (wp.settings === settings) wp.forget();
      this.#counters.groupWriteFailures++;
      const delay = RETRY_MS[Math.min(wp.failures, RETRY_MS.length - 1)] ?? 5_000;
      wp.failures++;
      this.#options.log(`IPPool ${wp.ref.name}: grouped write failed (again in ${delay} ms): ${messageOf(err)}`);
      if (!this.#stopped && (wp.pending.size > 0 || this.#target(wp) > 0))
        wp.retry = setTimeout(() => this.#schedule(wp), delay).unref();
      return false;
    }
    wp.failures = 0;
    this.#counters.groupWrites++;
    this.#counters.groupWriteMs += monotonicMs() - started;
    for (const address of await this.#followLanded(wp, outcome.landed)) unfollowed.add(address);
    for (const address of await this.#dropUnreserved(wp, outcome.unreserved)) unfollowed.add(address);
    const entries: JournalEntry[] = [];
    for (const address of outcome.settled) {
      // Only what this write planned: a DEL that came meanwhile is the next write's.
      if (wp.pending.get(address) !== pending.get(address) || unfollowed.has(address)) continue;
      wp.pending.delete(address);
      entries.push({ op: 'settled', pool: wp.key, address: String(address) });
      this.#counters.groupedEntries++;
    }
    for (const { address, holder } of outcome.lost) this.#lost(wp, address, pending.get(address), holder);
    // Whatever was withdrawn before the plan was run is given back by it, or is no warm record of these settings now.
    wp.withdrawn.clear();
    if (wp.settings !== settings) return false; // the set took other settings meanwhile: the next write derives it
    wp.warm = new Set([...outcome.warm].filter((a) => !wp.pending.has(a) && !wp.handing.has(a)));
    for (const address of wp.reservations.keys())
      if (!wp.warm.has(address) && !wp.pending.has(address) && !wp.handing.has(address))
        wp.reservations.delete(address);
    wp.free = outcome.free;
    wp.adopted = true;
    if (outcome.mixed) wp.mixedUntilMs = monotonicMs() + MIXED_WINDOW_MS;
    try {
      // Settled entries only spare work on replay, so they wait for no fdatasync of their own. Appended now, they
      // precede any later hand-out of the same address in the file, as replay needs.
      const journal = this.#journal;
      journal?.append(entries, { durable: false });
      if (journal !== undefined && journal.lines > COMPACT_AFTER) journal.compact();
    } catch (err) {
      // Settled entries only spare work on replay: one not written is written again, harmlessly.
      this.#options.log(`journal: cannot record settled writes: ${messageOf(err)}`);
    }
    return outcome.claimed.length > 0 || outcome.released.length > 0;
  }

  /**
   * Reservations of renames an earlier write landed without bringing them in step (it failed, or its agent died):
   * the addresses whose reservation still does not follow.
   */
  async #followLanded(wp: WarmPool, landed: GroupOutcome['landed']): Promise<bigint[]> {
    if (!wp.ctx.reservations) return [];
    const family = wp.ref.range.cidr.family;
    const failed: bigint[] = [];
    for (const { address, record, previous } of landed) {
      try {
        const known = wp.reservations.get(address);
        await followRecord(wp.ctx.api, wp.ref, { family, value: address }, record, {
          previous,
          ...(known === undefined ? {} : { known }),
        });
      } catch (err) {
        failed.push(address);
        this.#options.log(
          `IPPool ${wp.ref.name}: cannot bring the reservation of ${formatIP({ family, value: address })} in step: ${messageOf(err)}`,
        );
      }
    }
    return failed;
  }

  /**
   * The reservations of DELs answered from the set whose record is already gone (released by a write whose answer was
   * lost, or by an agent that died before it settled): deleted where they still name the attachment, so that the
   * reservation goes with its record. The addresses whose deletion failed (the DEL stays pending, tried again).
   */
  async #dropUnreserved(wp: WarmPool, unreserved: GroupOutcome['unreserved']): Promise<bigint[]> {
    if (!wp.ctx.reservations) return [];
    const family = wp.ref.range.cidr.family;
    const failed: bigint[] = [];
    for (const { address, attachment } of unreserved) {
      try {
        await releaseReservation(wp.ctx.api, wp.ref, { family, value: address }, attachment);
      } catch (err) {
        failed.push(address);
        this.#options.log(
          `IPPool ${wp.ref.name}: cannot delete the reservation of ${formatIP({ family, value: address })}, released: ${messageOf(err)}`,
        );
      }
    }
    return failed;
  }

  #lost(wp: WarmPool, address: bigint, write: PendingWrite | undefined, holder: AllocationRecord | undefined): void {
    this.#counters.lost++;
    const ip = formatIP({ family: wp.ref.range.cidr.family, value: address });
    const pod = write?.kind === 'name' ? write.record.podRef || write.record.containerId : '?';
    const now = holder === undefined ? 'nobody' : `${holder.podRef || holder.containerId} (${holder.ifname})`;
    this.#options.log(
      `IPPool ${wp.ref.name}: ${ip}, handed out to ${pod}, was not held by this node's agent when its rename came: ` +
        `the pool gives it to ${now}. Something freed a warm record (Whereabouts' reconciler, a manual edit); ` +
        `the controller's cleanup and \`hereabouts check\` show the outcome`,
    );
  }

  /** A call allocates from `wp`, a node-slice pool: this node's other slices of the network are not allocated from. */
  #current(wp: WarmPool): void {
    wp.superseded = false;
    for (const other of this.#pools.values()) {
      if (other === wp || other.superseded || other.ref.sliceNode !== wp.ref.sliceNode) continue;
      if (other.ref.network !== wp.ref.network || other.ctx.api.namespace !== wp.ctx.api.namespace) continue;
      other.superseded = true;
      this.#schedule(other);
    }
  }

  /**
   * The node-slice pools holding warm addresses whose slice is no longer this node's to allocate from, by the
   * NodeSlicePool read now (from the API server's cache): draining, or another slice assigned. Without it a node that
   * makes no more ADDs on the network would keep a warm record in a draining slice, and the drain would never end.
   */
  async #checkSlices(): Promise<void> {
    for (const wp of this.#pools.values()) {
      const node = wp.ref.sliceNode;
      if (node === undefined || wp.superseded || wp.warm.size === 0) continue;
      try {
        const object = await getObject(wp.ctx.api, 'nodeslicepools', wp.ref.network, { notOlderThan: '0' });
        if (object !== undefined && allocatesFrom(slicingOf(object, wp.ref.network, node), wp.ref.range.cidr)) continue;
        wp.superseded = true;
        this.#options.log(
          `IPPool ${wp.ref.name}: no longer this node's slice to allocate from; its warm addresses go back`,
        );
        this.#schedule(wp);
      } catch (err) {
        this.#options.log(`NodeSlicePool ${wp.ref.network}: cannot read it: ${messageOf(err)}`);
      }
    }
  }

  /** A Whereabouts plugin writes the pool: no hand-out from now on (until MIXED_WINDOW_MS), the set given back. */
  #stopForWhereabouts(wp: WarmPool): void {
    wp.mixedUntilMs = monotonicMs() + MIXED_WINDOW_MS;
    for (const address of wp.warm) wp.withdrawn.add(address);
    wp.warm.clear();
  }

  /** Throws once close() gave the journal's lock back: another agent of the node may own the pools' warm records. */
  #assertOwnJournal(): void {
    if (this.#stopped) throw new Error('the agent stopped: its warm records are the next agent to judge');
  }

  #onTick(): void {
    if (this.#lockWanted && !this.#closing) this.#openJournal();
    if (!this.#checking) {
      this.#checking = true;
      void this.#checkSlices().finally(() => (this.#checking = false));
    }
    for (const wp of this.#pools.values()) {
      if (wp.writing !== undefined || wp.retry !== undefined) continue;
      const target = this.#target(wp);
      if (wp.pending.size > 0 || wp.warm.size !== target || (!wp.adopted && target > 0)) this.#schedule(wp);
    }
  }
}

/** How long a pod's DEL keeps the address it released for its next ADD in the pool (a re-created sandbox). */
const RECENT_DEL_MS = 60_000;

const ownerKey = (record: AllocationRecord): string => `${record.podRef}\u0000${record.ifname}`;

/** The address a DEL this agent answered lately released for the attachment `record` names, if any. */
function recentlyDeleted(wp: WarmPool, record: AllocationRecord): bigint | undefined {
  if (record.podRef === '') return undefined;
  const now = monotonicMs();
  for (const [key, { at }] of wp.recentDels) if (now - at > RECENT_DEL_MS) wp.recentDels.delete(key);
  return wp.recentDels.get(ownerKey(record))?.address;
}

/**
 * `plan`, with the address a pod's DEL released a moment ago preferred for its new sandbox's claim (PlanHints.reserved:
 * taken when still free). The lowest free address is most often that one, but not when a lower one was freed since
 * (a warm address given back): the re-created sandbox keeps its address, as the DEL and ADD of a sandbox would
 * without warm sets.
 */
function preferringPrevious<T>(plan: Plan<T>, recent: ReadonlyMap<string, { readonly address: bigint }>): Plan<T> {
  return (current, refused, hints) => {
    const planned = plan(current, refused, hints);
    const claimed = planned.change === null ? undefined : loneClaim(planned.change);
    const previous = claimed === undefined ? undefined : recent.get(ownerKey(claimed.record))?.address;
    if (previous === undefined || previous === claimed?.address) return planned;
    return plan(current, refused, { ...hints, reserved: new Set([...(hints?.reserved ?? []), previous]) });
  };
}

/** Whether calls asked for another write while one ran (read through a call: it changes while a write awaits). */
const again = (wp: WarmPool): boolean => wp.again;

/** A plain claim of one address, nothing else. */
function loneClaim(change: PoolChange): PoolChange['claim'] {
  if (change.release !== undefined && change.release.length > 0) return undefined;
  if (change.update !== undefined && change.update.length > 0) return undefined;
  return change.claim;
}

/** A plain release of addresses, nothing else. */
function loneRelease(change: PoolChange): readonly bigint[] | undefined {
  if (change.claim !== undefined || (change.update !== undefined && change.update.length > 0)) return undefined;
  return change.release !== undefined && change.release.length > 0 ? change.release : undefined;
}

function journaled(record: AllocationRecord): { attachment: JournalAttachment; at: string } {
  return {
    attachment: journalAttachment(record),
    at: record.createdAt ?? new Date().toISOString(),
  };
}

function pendingOf(entry: HandOut, ctx: WriteContext): PendingWrite {
  const record: AllocationRecord = { ...entry.attachment, node: ctx.node, createdAt: entry.at };
  return entry.op === 'handed-out' ? { kind: 'name', record } : { kind: 'warm', attachment: record };
}
