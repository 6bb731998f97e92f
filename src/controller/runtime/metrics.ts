// Prometheus metrics (prom-client; only the controller loads it). Pool and slice gauges are read from the caches
// at scrape time, so they are current on every replica, leader or not; counters count what this replica did.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Released } from '../orphans/pool-release.ts';
import { formatCidr } from '../../ip/cidr.ts';
import { poolIdentity, sliceOwners } from '../pools/identity.ts';
import type { PoolView } from '../pools/view.ts';
import type { NodeSlicePoolView } from './views.ts';

/**
 * Prometheus samples are float64: integers are exact up to 2^53 - 1. A pool larger than that (an IPv6 /64 holds
 * 2^64 - 2) reports that cap instead of an inexact 1.8e19; its use shows in hereabouts_pool_usage_ratio.
 */
const MAX_EXACT = Number.MAX_SAFE_INTEGER;

function exact(value: bigint): number {
  return value > BigInt(MAX_EXACT) ? MAX_EXACT : Number(value);
}

/** Allocations over capacity, computed in bigints scaled to 1e-30 so a /64 with a few allocations is not 0. */
export function usageRatio(pool: Pick<PoolView, 'allocations' | 'capacity'>): number {
  if (pool.capacity <= 0n) return pool.allocations.size > 0 ? 1 : 0;
  const scale = 10n ** 30n;
  return Number((BigInt(pool.allocations.size) * scale) / pool.capacity) / 1e30;
}

export interface MetricSources {
  readonly pools: () => Iterable<PoolView>;
  /** The NodeSlicePools, to tell a node-slice pool's network from its node. */
  readonly nodeSlicePools: () => Iterable<NodeSlicePoolView>;
  readonly slices: () => Iterable<{ readonly network: string; readonly assigned: number; readonly free: number }>;
  /** network -> nodes left without a slice, as of the last slice pass. */
  readonly starved: () => ReadonlyMap<string, readonly string[]>;
  readonly leading: () => boolean;
  readonly informers: () => Iterable<{ readonly resource: string; readonly synced: boolean; readonly size: number }>;
  /** The claims served (DESIGN §12), by kind: IPAddressClaim, PrefixClaim. */
  readonly claims?: () => Iterable<{ readonly kind: string; readonly count: number }>;
  /** The pod cache ("namespace/name" keys), for sticky addresses in use; undefined while it is not synced. */
  readonly pods?: () => ReadonlyMap<string, unknown> | undefined;
}

/** The podrefs of a pool's sticky addresses (docs/sticky.md), once per pool version: a scrape reads only these. */
const boundPodRefs = new WeakMap<PoolView, readonly string[]>();

function boundOf(pool: PoolView): readonly string[] {
  let refs = boundPodRefs.get(pool);
  if (refs === undefined) {
    const found: string[] = [];
    for (const record of pool.allocations.values()) if (record.binding !== undefined) found.push(record.podRef);
    refs = found;
    boundPodRefs.set(pool, refs);
  }
  return refs;
}

/** Sticky addresses over every pool: in-use (the podref's pod exists) and parked (no pod holds the address now). */
export function stickyCounts(
  pools: Iterable<PoolView>,
  pods: ReadonlyMap<string, unknown>,
): { readonly inUse: number; readonly parked: number } {
  let inUse = 0;
  let parked = 0;
  for (const pool of pools) {
    for (const podRef of boundOf(pool)) {
      if (pods.has(podRef)) inUse++;
      else parked++;
    }
  }
  return { inUse, parked };
}

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly #orphans: Counter<'reason'>;
  readonly #reservations: Counter<'reason'>;
  readonly #recreated: Counter;
  readonly #passes: Counter<'kind' | 'result'>;
  readonly #passSeconds: Histogram<'kind'>;
  readonly #claimReconciles: Counter<'kind' | 'result'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    const perPool = (name: string, help: string, value: (p: PoolView) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['pool', 'network', 'range'],
        registers,
        collect() {
          this.reset();
          const owners = sliceOwners(sources.nodeSlicePools());
          for (const pool of sources.pools()) {
            if (pool.range === undefined) continue;
            const labels = {
              pool: pool.name,
              network: poolIdentity(pool, owners).network ?? '',
              range: formatCidr(pool.range),
            };
            this.set(labels, value(pool));
          }
        },
      });
    };
    perPool('hereabouts_pool_allocations', 'Allocated addresses per IPPool', (p) => p.allocations.size);
    perPool(
      'hereabouts_pool_capacity',
      `Addresses the IPPool range can hand out, capped at ${MAX_EXACT} (exact below)`,
      (p) => exact(p.capacity),
    );
    perPool(
      'hereabouts_pool_free',
      `Capacity minus allocations per IPPool, capped at ${MAX_EXACT} (exact below)`,
      (p) => exact(p.free),
    );
    perPool('hereabouts_pool_usage_ratio', 'Allocations divided by capacity per IPPool (0 to 1)', usageRatio);
    new Gauge({
      name: 'hereabouts_node_slices',
      help: 'Node slices per network (NodeSlicePool), assigned or free',
      labelNames: ['network', 'state'],
      registers,
      collect() {
        this.reset();
        for (const s of sources.slices()) {
          this.set({ network: s.network, state: 'assigned' }, s.assigned);
          this.set({ network: s.network, state: 'free' }, s.free);
        }
      },
    });
    new Gauge({
      name: 'hereabouts_nodes_without_slice',
      help: 'Nodes left without a slice because the network has none free',
      labelNames: ['network'],
      registers,
      collect() {
        this.reset();
        for (const [network, nodes] of sources.starved()) this.set({ network }, nodes.length);
      },
    });
    new Gauge({
      name: 'hereabouts_leader',
      help: '1 while this replica holds the lease',
      registers,
      collect() {
        this.set(sources.leading() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'hereabouts_informer_synced',
      help: '1 while the cache of a resource reflects the API server',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const i of sources.informers()) this.set({ resource: i.resource }, i.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'hereabouts_informer_objects',
      help: 'Objects held in the cache of a resource',
      labelNames: ['resource'],
      registers,
      collect() {
        for (const i of sources.informers()) this.set({ resource: i.resource }, i.size);
      },
    });
    this.#orphans = new Counter({
      name: 'hereabouts_orphans_cleaned_total',
      help: 'Orphaned allocations released',
      labelNames: ['reason'],
      registers,
    });
    this.#reservations = new Counter({
      name: 'hereabouts_reservations_cleaned_total',
      help: 'Orphaned OverlappingRangeIPReservations deleted',
      labelNames: ['reason'],
      registers,
    });
    this.#recreated = new Counter({
      name: 'hereabouts_reservations_recreated_total',
      help: 'Missing OverlappingRangeIPReservations of held addresses re-created',
      registers,
    });
    this.#passes = new Counter({
      name: 'hereabouts_reconcile_passes_total',
      help: 'Reconciliation passes by kind and result',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.#passSeconds = new Histogram({
      name: 'hereabouts_reconcile_pass_seconds',
      help: 'Duration of reconciliation passes',
      labelNames: ['kind'],
      registers,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    });
    new Gauge({
      name: 'hereabouts_claims',
      help: 'IPAddressClaims and PrefixClaims on hereabouts pools, as the caches hold them',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        for (const c of sources.claims?.() ?? []) this.set({ kind: c.kind }, c.count);
      },
    });
    new Gauge({
      name: 'hereabouts_sticky_bindings',
      help: 'Sticky addresses bound to a StatefulSet replica or a VM: in-use (their pod exists) or parked (no pod holds them now)',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const pods = sources.pods?.();
        if (pods === undefined) return; // the pod cache is not synced: nothing to tell in-use from parked with
        const counts = stickyCounts(sources.pools(), pods);
        this.set({ state: 'in-use' }, counts.inUse);
        this.set({ state: 'parked' }, counts.parked);
      },
    });
    this.#claimReconciles = new Counter({
      name: 'hereabouts_claim_reconciles_total',
      help: 'Reconciles of claims and pool kinds by kind and result',
      labelNames: ['kind', 'result'],
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** One reconcile of the claims' queue: `kind` claim, prefix, pool or records; `result` ready, waiting, ..., error. */
  claimReconciled(kind: string, result: string): void {
    this.#claimReconciles.inc({ kind, result });
  }

  released(released: readonly Released[]): void {
    for (const r of released) this.#orphans.inc({ reason: r.reason });
  }

  reservationDeleted(reason: string): void {
    this.#reservations.inc({ reason });
  }

  reservationsRecreated(count: number): void {
    if (count > 0) this.#recreated.inc(count);
  }

  pass(kind: string, seconds: number, ok: boolean): void {
    this.#passes.inc({ kind, result: ok ? 'ok' : 'error' });
    if (ok) this.#passSeconds.observe({ kind }, seconds);
  }
}
