// The controller loop: warm caches on every replica; on the leader, a full pass every reconcile interval (orphans,
// reservations, node slices, pool status) and quicker partial passes when the caches see a pod go, a node come or
// go, or a NAD change. Passes run one at a time; requests arriving meanwhile are merged into the next one.
import { getObject } from '../store/kubernetes/objects.ts';
import { StickyCaches } from './sticky/caches.ts';
import { prebindAddressLists } from './sticky/address-lists.ts';
import { monotonicMs } from '../clock.ts';
import { ApiClient } from '../kube/api.ts';
import { Caches } from './runtime/caches.ts';
import { cleanupPass } from './orphans/cleanup-pass.ts';
import { EventRecorder } from './runtime/events.ts';
import type { ControllerFlags } from './runtime/flags.ts';
import { LeaderElector } from './runtime/lease.ts';
import { messageOf } from '../errors.ts';
import type { Log } from '../log/json-log.ts';
import { ControllerMetrics } from './runtime/metrics.ts';
import { NodeSlices, sliceCounts } from './slices/node-slices.ts';
import { RENEW_MS as WARM_GATE_RENEW_MS, WarmGatePublisher, warmVerdict } from './runtime/warm-gate.ts';
import { WARM_ALLOWED } from '../store/kubernetes/objects.ts';
import { podReleaseReason } from './orphans/orphans.ts';
import type { PodView } from './orphans/pod-view.ts';
import { reportExhausted } from './pools/exhaustion-events.ts';
import type { PoolView } from './pools/view.ts';
import { writePoolStatuses } from './pools/status.ts';
import { reportRecreated, reportReleases } from './orphans/release-events.ts';
import { ClaimsController } from './claims/claims.ts';
import { CLAIMS_NETWORK } from '../config/names.ts';

type PassKind = 'full' | 'cleanup' | 'slices';

/**
 * How long after a pod's deletion its leftovers are looked at: deletions come in bursts (one pass for the lot),
 * and a force-deleted pod's sandbox is torn down by its kubelet (CNI DEL) in the seconds after.
 */
const DELETION_DELAY_MS = 2000;

export class Controller {
  readonly caches: Caches;
  /** IPAddressClaims and PrefixClaims on hereabouts pools (DESIGN §12). */
  readonly claims: ClaimsController;
  readonly metrics: ControllerMetrics;
  readonly #api: ApiClient;
  readonly #flags: ControllerFlags;
  readonly #log: Log;
  readonly #elector: LeaderElector;
  readonly #events: EventRecorder;
  readonly #slices: NodeSlices;
  #starved: ReadonlyMap<string, readonly string[]> = new Map();
  /** Passes asked for and waiting for their delay, and passes waiting in the queue (each kind at most once). */
  readonly #delayed = new Map<PassKind, NodeJS.Timeout>();
  readonly #queued = new Set<PassKind>();
  /** Records seen missing their reservation, and since when (monotonic). */
  readonly #firstMissing = new Map<string, number>();
  /** Sticky addresses whose binding is seen released, and since when (monotonic; cleanup-pass.ts StickyInput). */
  readonly #firstReleasable = new Map<string, number>();
  readonly sticky: StickyCaches;
  #timer: NodeJS.Timeout | undefined;
  readonly #warmGate: WarmGatePublisher;
  #warmGateTimer: NodeJS.Timeout | undefined;
  #queue: Promise<void> = Promise.resolve();
  #stopping = false;
  #scheduled = true;
  /** Passes begun (run or skipped), numbered in their log lines: tests wait for the n-th instead of sleeping. */
  #passes = 0;

  /** `api` serves the caches (long lists and watches); what a leader sends goes through a client timed out below the renew deadline. */
  constructor(api: ApiClient, flags: ControllerFlags, log: Log) {
    this.#api = new ApiClient(api.endpoint, { timeoutMs: flags.requestTimeoutMs });
    this.#flags = flags;
    this.#log = log;
    const policy = flags.policy;
    this.caches = new Caches(
      api,
      {
        pods: (kind, _key, pod, before) => {
          if (kind === 'deleted') return this.request('cleanup', DELETION_DELAY_MS);
          // A pod that by its own state just stopped needing its addresses (the same rule the pass applies).
          const now = Date.now();
          const releasable = (p: PodView | undefined): boolean =>
            p !== undefined && podReleaseReason(p, policy, now) !== undefined;
          if (releasable(pod) && !releasable(before)) this.request('cleanup', DELETION_DELAY_MS);
        },
        nodes: (kind) => kind !== 'updated' && this.request('slices', 300),
        nads: () => this.request('slices', 300),
        nodeSlicePools: (kind) => kind === 'deleted' && this.request('slices', 300),
        // A draining slice is released once its pool empties: look again when a pool changes, while one waits.
        pools: () => this.#slicesWaitingForEmptyPools() && this.request('slices', 1000),
      },
      log,
    );
    this.#elector = new LeaderElector(this.#api, {
      namespace: flags.leader.namespace ?? api.namespace,
      name: flags.leader.name,
      identity: flags.leader.identity,
      leaseDurationMs: flags.leader.leaseDurationMs,
      renewDeadlineMs: flags.leader.renewDeadlineMs,
      retryPeriodMs: flags.leader.retryPeriodMs,
      log,
      onChange: (leading) => {
        if (!leading) return;
        this.claims.resync(true);
        this.request('full', 0);
        void this.#publishWarmGate();
      },
    });
    this.#events = new EventRecorder(this.#api, { identity: flags.leader.identity, log });
    this.claims = new ClaimsController(this.#api, api, {
      leading: () => this.leading,
      pools: this.caches.pools,
      events: this.#events,
      log,
      namespaces: flags.claims,
      onResult: (kind, result) => this.metrics.claimReconciled(kind, result),
      whereabouts: () => {
        const verdict = warmVerdict(this.caches.pods.items, this.caches.pods.synced);
        return verdict === WARM_ALLOWED ? undefined : verdict.replace(/: its reconciler would free warm records$/, '');
      },
    });
    // A StatefulSet scaled down or deleted: its replicas' addresses are judged at once (their grace starts then).
    this.sticky = new StickyCaches(api, log, {
      scope: flags.sticky,
      onStatefulSet: (kind) => kind !== 'added' && this.request('cleanup', DELETION_DELAY_MS),
    });
    this.#slices = new NodeSlices(this.#api, { drainGraceMs: flags.sliceDrainGraceMs });
    this.#warmGate = new WarmGatePublisher(this.#api, flags.leader.identity, log);
    this.metrics = new ControllerMetrics({
      pools: () => this.caches.pools.items.values(),
      nodeSlicePools: () => this.caches.nodeSlicePools.items.values(),
      slices: () => sliceCounts(this.caches.nodeSlicePools.items.values()),
      starved: () => this.#starved,
      leading: () => this.leading,
      informers: () =>
        [...this.caches.all, ...this.sticky.all, ...(this.claims.enabled ? this.claims.informers : [])].map((i) => ({
          resource: i.resource,
          synced: i.synced,
          size: i.items.size,
        })),
      claims: () => this.claims.counts(),
      pods: () => (this.caches.pods.synced ? this.caches.pods.items : undefined),
    });
  }

  /** Leading, and not shutting down: checked before every write. */
  get leading(): boolean {
    return this.#elector.leading && !this.#stopping;
  }

  /** Starts the caches and the election; `scheduled: false` (--once) runs no pass but the one runOnce asks for. */
  start(options: { scheduled: boolean }): void {
    this.#scheduled = options.scheduled;
    this.caches.start();
    this.sticky.start();
    this.claims.start();
    this.#elector.start();
    // A leader elected before its caches synced skipped its first pass: run it as soon as they are.
    void Promise.all(this.caches.all.map((i) => i.whenSynced())).then(() => {
      this.request('full', 0);
      void this.#publishWarmGate();
    });
    if (options.scheduled) this.#timer = setInterval(() => this.request('full', 0), this.#flags.reconcileIntervalMs);
    this.#warmGateTimer = setInterval(() => void this.#publishWarmGate(), WARM_GATE_RENEW_MS);
  }

  /** The leader's word on warm sets, renewed (warm-gate.ts). */
  async #publishWarmGate(): Promise<void> {
    if (!this.leading) return;
    const pods = this.caches.pods;
    await this.#warmGate.publish(warmVerdict(pods.items, pods.synced));
  }

  /** Stops acting at once, lets a running pass see it, hands the lease back and closes the watches. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    clearInterval(this.#warmGateTimer);
    for (const timer of this.#delayed.values()) clearTimeout(timer);
    await this.#queue;
    this.claims.stop();
    await this.#elector.stop();
    this.caches.stop();
    this.sticky.stop();
  }

  /** Why this replica could not act now (caches not synced), or undefined. */
  notReady(): string | undefined {
    const unsynced = this.caches.unsynced();
    return unsynced.length === 0 ? undefined : `caches not synced: ${unsynced.join(', ')}`;
  }

  /** --once: waits for the caches and the lease (up to the given time), runs one full pass; false if it could not. */
  async runOnce(waitMs: number): Promise<boolean> {
    const started = process.uptime();
    const deadline = monotonicMs() + waitMs;
    while ((this.notReady() !== undefined || !this.leading) && monotonicMs() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    if (this.notReady() !== undefined || !this.leading) {
      this.#log.warning(`--once: nothing done: ${this.notReady() ?? 'the lease is held by another replica'}`);
      return false;
    }
    const counts = Object.fromEntries(this.caches.all.map((i) => [i.resource, i.items.size]));
    this.#log.info('caches synced and lease held', {
      seconds: Number((process.uptime() - started).toFixed(3)),
      ...counts,
    });
    // Sticky addresses are judged on synced caches only: one that cannot sync (RBAC) keeps them all, after a while.
    const stickyDeadline = Math.min(deadline, monotonicMs() + 10_000);
    while (this.sticky.enabled && !this.sticky.synced && monotonicMs() < stickyDeadline)
      await new Promise((r) => setTimeout(r, 50));
    await this.#run('full');
    if (this.claims.enabled) await Promise.all(this.claims.informers.map((i) => i.whenSynced()));
    this.claims.resync();
    await this.claims.idle();
    return true;
  }

  /** A cleanup pass when the first sticky address seen released comes to the end of its grace. */
  #afterStickyGrace(): void {
    let first: number | undefined;
    for (const since of this.#firstReleasable.values()) if (first === undefined || since < first) first = since;
    if (first === undefined) return;
    this.request('cleanup', Math.max(1000, first + this.#flags.stickyGraceMs - monotonicMs() + 100));
  }

  /** Asks for a pass in `delayMs`; a request for a pass already asked for (or queued) joins it. */
  request(kind: PassKind, delayMs: number): void {
    if (this.#stopping || !this.#scheduled) return;
    const waiting = this.#delayed.get(kind);
    if (waiting !== undefined) {
      if (delayMs > 0) return;
      clearTimeout(waiting);
    }
    this.#delayed.set(
      kind,
      setTimeout(() => {
        this.#delayed.delete(kind);
        // A full pass waiting in the queue does what a partial one would.
        if (this.#queued.has(kind) || this.#queued.has('full')) return;
        this.#queued.add(kind);
        this.#queue = this.#queue.then(() => {
          this.#queued.delete(kind);
          return this.#run(kind);
        });
      }, delayMs),
    );
  }

  async #run(kind: PassKind): Promise<void> {
    const n = ++this.#passes;
    if (!this.leading) {
      this.#log.debug(`${kind} pass skipped: not leading`, { pass: kind, n });
      return;
    }
    const unsynced = this.caches.unsynced();
    if (unsynced.length > 0) {
      this.#log.info(`${kind} pass skipped: caches not synced (${unsynced.join(', ')})`, { pass: kind, n });
      return;
    }
    const started = process.hrtime.bigint();
    try {
      const summary = await this.#pass(kind);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.pass(kind, seconds, true);
      const memory = process.memoryUsage();
      const mib = (bytes: number): number => Math.round(bytes / 2 ** 20);
      const maxRssMiB = Math.round(process.resourceUsage().maxRSS / 1024);
      const fields = {
        rssMiB: mib(memory.rss),
        maxRssMiB,
        heapUsedMiB: mib(memory.heapUsed),
        heapTotalMiB: mib(memory.heapTotal),
        externalMiB: mib(memory.external),
      };
      this.#log.info(`${kind} pass done in ${seconds.toFixed(3)} s`, {
        pass: kind,
        n,
        seconds: Number(seconds.toFixed(3)),
        ...fields,
        ...summary,
      });
    } catch (err) {
      this.metrics.pass(kind, 0, false);
      this.#log.error(`${kind} pass failed: ${messageOf(err)}`, { pass: kind, n });
    }
  }

  async #pass(kind: PassKind): Promise<Record<string, number>> {
    const c = this.caches;
    const leading = (): boolean => this.leading;
    const summary: Record<string, number> = {};
    const released = new Set<string>();
    if (kind === 'full') this.claims.resync(); // runs on its own queue, beside this pass
    if (kind !== 'slices') {
      const result = await cleanupPass(this.#api, {
        pods: c.pods.items,
        nodes: c.nodes.items,
        pools: c.pools.items,
        reservations: c.reservations.items,
        networkNames: new Set([...c.networkNames(), CLAIMS_NETWORK]),
        policy: this.#flags.policy,
        reservationGraceMs: this.#flags.reservationGraceMs,
        firstMissing: this.#firstMissing,
        ...(this.sticky.synced
          ? {
              sticky: {
                world: this.sticky.world(c.pods.items),
                serves: (namespace: string) => this.sticky.serves(namespace),
                graceMs: this.#flags.stickyGraceMs,
                firstReleasable: this.#firstReleasable,
              },
            }
          : {}),
        leading,
        log: this.#log,
      });
      this.#afterStickyGrace();
      this.metrics.released(result.released);
      for (const r of result.released) released.add(r.pool);
      for (const r of result.reservationsDeleted) this.metrics.reservationDeleted(r.reason);
      this.metrics.reservationsRecreated(result.reservationsRecreated.length);
      await reportReleases(result.released, c.pools.items, this.#events, this.#api.namespace);
      await reportRecreated(result.reservationsRecreated, c.pools.items, this.#events, this.#api.namespace);
      Object.assign(summary, {
        pods: c.pods.items.size,
        pools: c.pools.items.size,
        released: result.released.length,
        reservationsDeleted: result.reservationsDeleted.length,
        reservationsRecreated: result.reservationsRecreated.length,
        podsRead: result.podsRead,
        ...result.timings,
      });
      if (this.sticky.synced) {
        const lists = await prebindAddressLists(this.#api, {
          statefulSets: this.sticky.statefulSets.items,
          serves: (namespace) => this.sticky.serves(namespace),
          pools: () => c.pools.items.values(),
          nodeSlicePool: (network) => getObject(this.#api, 'nodeslicepools', network),
          events: this.#events,
          leading,
          log: this.#log,
        });
        Object.assign(summary, { prebound: lists.prebound, prebindRefused: lists.refused });
      }
    }
    if (kind !== 'cleanup') {
      const report = await this.#slices.reconcile({
        nads: c.nads.items,
        nodes: c.nodes.items,
        nodeSlicePools: c.nodeSlicePools.items,
        pools: c.pools.items,
        leading,
        log: this.#log,
        events: this.#events,
      });
      this.#starved = report.starved;
      Object.assign(summary, {
        slicesAssigned: report.assigned.length,
        slicesFreed: report.freed.length,
        networkConflicts: report.conflicts.length,
      });
    }
    if (kind === 'full' && this.#flags.poolStatus) {
      // A pool written by this pass is described by the next one (its cached version is already stale).
      const pools = [...c.pools.items.values()].filter((p) => !released.has(p.name));
      const onExhausted = (view: PoolView): Promise<void> =>
        reportExhausted(view, { nads: c.nads.items.values(), events: this.#events, namespace: this.#api.namespace });
      summary['statusWritten'] = await writePoolStatuses(this.#api, pools, { leading, log: this.#log, onExhausted });
    }
    return summary;
  }

  #slicesWaitingForEmptyPools(): boolean {
    const nodes = this.caches.nodes.items;
    for (const pool of this.caches.nodeSlicePools.items.values()) {
      if (pool.draining.length > 0 || pool.entries.some((e) => e.nodeName !== '' && !nodes.has(e.nodeName)))
        return true;
    }
    return false;
  }
}
