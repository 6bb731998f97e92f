// The claims side of the controller (DESIGN §12): informers on IPAddressClaims, IPAddresses, PrefixClaims and the two
// pool kinds (every replica keeps them warm; a kind whose CRD is not installed is an empty cache, looked for again
// every minute), and a work queue the leader drains: a claim or a pool per key, plus a record pass that releases
// the records of claims that are gone (a finalizer removed by hand) and unprotects their IPAddresses.
import { tryParseIP } from '../../ip/address.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { Log } from '../../log/json-log.ts';
import { recordOf } from '../../record.ts';
import { claimHolder, holderKey, sameHolder, type ClaimHolder } from '../../store/claim-record.ts';
import type { PoolView } from '../pools/view.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { Informer, type ChangeKind } from '../../kube/informer.ts';
import { ourPoolRef, reconcileAddressClaim, type ClaimContext, type PoolRefOf } from './address-claims.ts';
import { ClaimHandler } from './handler.ts';
import {
  ADDRESSPOOLS,
  getOne,
  GLOBALADDRESSPOOLS,
  IPADDRESSCLAIMS,
  IPADDRESSES,
  IPPOOL_ANNOTATION,
  metaOf,
  pathOf,
  PREFIXCLAIMS,
  type PoolKind,
} from './objects.ts';
import { claimsIn, poolCounts, protectPool, writePoolStatus } from './pool-status.ts';
import { reconcilePrefixClaim } from './prefix-claims.ts';
import { releaseGoneClaims } from './record-pass.ts';
import { WorkQueue } from './work-queue.ts';

/** How long the counts of a pool wait after an IPAddress of it changed: a burst of claims makes one status write. */
const POOL_STATUS_DELAY_MS = 1000;

interface ClaimView {
  readonly pool: PoolRefOf;
  readonly resourceVersion: string;
  readonly deleting: boolean;
}
interface AddressView {
  readonly claim: string;
  readonly pool: PoolRefOf;
  readonly address: string;
  /** The IPPool that records it (its annotation). */
  readonly ippool: string;
}
interface PoolObjectView {
  readonly deleting: boolean;
  readonly generation: number;
}

export interface ClaimsOptions {
  readonly leading: () => boolean;
  /** The controller's IPPool cache (the pools' namespace). */
  readonly pools: Informer<PoolView>;
  readonly events: EventRecorder;
  readonly log: Log;
  /** Why Whereabouts runs in the cluster, or undefined (the warm-set verdict: runtime/warm-gate.ts). */
  readonly whereabouts: () => string | undefined;
  /** The namespaces whose claims are served: all, or these (none when empty: nothing is watched). */
  readonly namespaces: 'all' | readonly string[];
  /** Told of every reconcile's result (metrics): kind claim, prefix, pool or records. */
  readonly onResult?: (kind: string, result: string) => void;
  readonly workers?: number;
}

export class ClaimsController {
  readonly claims: Informer<ClaimView>;
  readonly addresses: Informer<AddressView>;
  readonly prefixClaims: Informer<ClaimView>;
  readonly addressPools: Informer<PoolObjectView>;
  readonly globalPools: Informer<PoolObjectView>;
  readonly #api: ApiClient;
  readonly #o: ClaimsOptions;
  readonly #queue: WorkQueue;
  readonly #ctx: ClaimContext;
  /**
   * Claims whose last reconcile left them served ("claim/ns/name", "prefix/ns/name"), with the resourceVersions that
   * reconcile read or wrote: a watch event of one of those is this controller's own write, not news.
   */
  readonly #settled = new Map<string, Set<string>>();
  /** The versions the reconcile running for a key has read or written so far. */
  readonly #noted = new Map<string, Set<string>>();

  constructor(api: ApiClient, watchApi: ApiClient, options: ClaimsOptions) {
    this.#api = api;
    this.#o = options;
    const handler = new ClaimHandler(api, { log: options.log, leading: options.leading });
    this.#ctx = {
      api,
      handler,
      events: options.events,
      log: options.log,
      resting: new Map(),
      whereabouts: options.whereabouts,
      noteVersion: (claim, rv) => {
        const key = `${claim.startsWith('PrefixClaim/') ? 'prefix' : 'claim'}/${claim.slice(claim.indexOf('/') + 1)}`;
        this.#noted.get(key)?.add(rv);
      },
    };
    this.#queue = new WorkQueue((key) => this.#reconcile(key), { workers: options.workers ?? 4, log: options.log });
    const log = options.log;
    const served = (object: unknown): boolean =>
      options.namespaces === 'all' || options.namespaces.includes(metaOf(object).namespace);
    const claimView = (object: unknown): ClaimView | undefined => {
      const pool = served(object) ? ourPoolRef(object) : undefined;
      const meta = metaOf(object);
      return pool === undefined ? undefined : { pool, resourceVersion: meta.resourceVersion, deleting: meta.deleting };
    };
    this.claims = new Informer(watchApi, {
      resource: 'ipaddressclaims',
      path: pathOf(IPADDRESSCLAIMS),
      view: claimView,
      log,
      onChange: (kind, key, current) => this.#claimChanged(kind, `claim/${key}`, current),
    });
    this.prefixClaims = new Informer(watchApi, {
      resource: 'prefixclaims',
      path: pathOf(PREFIXCLAIMS),
      view: (object) => {
        if (!served(object)) return undefined;
        const ref = recordOf(recordOf(recordOf(object)['spec'])['poolRef']);
        const kind = ref['kind'] === 'GlobalAddressPool' ? 'GlobalAddressPool' : 'AddressPool';
        const name = typeof ref['name'] === 'string' ? ref['name'] : '';
        const meta = metaOf(object);
        return { pool: { kind, name }, resourceVersion: meta.resourceVersion, deleting: meta.deleting };
      },
      log,
      onChange: (kind, key, current) => this.#claimChanged(kind, `prefix/${key}`, current),
    });
    this.addresses = new Informer(watchApi, {
      resource: 'ipaddresses',
      path: pathOf(IPADDRESSES),
      view: (object) => {
        const pool = served(object) ? ourPoolRef(object) : undefined;
        if (pool === undefined) return undefined;
        const spec = recordOf(recordOf(object)['spec']);
        return {
          claim: text(recordOf(spec['claimRef'])['name']),
          pool,
          address: text(spec['address']),
          ippool: metaOf(object).annotations[IPPOOL_ANNOTATION] ?? '',
        };
      },
      log,
      onChange: (kind, key, current, previous) => {
        const view = current ?? previous;
        if (view === undefined) return;
        const namespace = key.slice(0, key.indexOf('/'));
        // Its claim made it, and deletes it when it goes: a deletion is news to a claim that is served and not going
        // (an IPAddress deleted by hand); its creation only to a claim not settled yet (a reconcile now looks again).
        const claim = `claim/${namespace}/${view.claim}`;
        const owner = this.claims.items.get(`${namespace}/${view.claim}`);
        const news =
          kind === 'deleted'
            ? owner !== undefined && !owner.deleting && this.#settled.has(claim)
            : !this.#settled.has(claim);
        if (news) this.#queue.add(claim);
        // The pool's counts follow, once for a burst of claims.
        const pool = `pool/${view.pool.kind}/${view.pool.kind === 'GlobalAddressPool' ? '' : namespace}/${view.pool.name}`;
        this.#queue.addAfter(pool, POOL_STATUS_DELAY_MS);
      },
    });
    const poolInformer = (kind: PoolKind): Informer<PoolObjectView> =>
      new Informer(watchApi, {
        resource: kind === 'AddressPool' ? 'addresspools' : 'globaladdresspools',
        path: pathOf(kind === 'AddressPool' ? ADDRESSPOOLS : GLOBALADDRESSPOOLS),
        view: (object) => {
          if (kind === 'AddressPool' && !served(object)) return undefined;
          const meta = metaOf(object);
          return { deleting: meta.deleting, generation: meta.generation };
        },
        log,
        onChange: (_kind, key, current, previous) => {
          // Its status (written by this controller) is no news: a new spec, a deletion, or a pool come or gone is.
          if (current?.generation === previous?.generation && current?.deleting === previous?.deleting) return;
          this.#poolChanged(kind, key);
        },
      });
    this.addressPools = poolInformer('AddressPool');
    this.globalPools = poolInformer('GlobalAddressPool');
  }

  get informers(): ReadonlyArray<Informer<unknown>> {
    return [this.claims, this.addresses, this.prefixClaims, this.addressPools, this.globalPools] as ReadonlyArray<
      Informer<unknown>
    >;
  }

  /** Whether any namespace's claims are served (--claims). */
  get enabled(): boolean {
    return this.#o.namespaces === 'all' || this.#o.namespaces.length > 0;
  }

  start(): void {
    if (!this.enabled) return;
    for (const informer of this.informers) informer.start();
  }

  stop(): void {
    this.#queue.stop();
    for (const informer of this.informers) informer.stop();
  }

  /**
   * Every claim, pool and the record pass, queued: the periodic resync, or (`full`) a new leader. A claim settled by
   * this replica is skipped when the caches show it as it was left (its version, its IPAddress, its pool's record).
   */
  resync(full = false): void {
    if (!this.enabled) return;
    if (full) this.#settled.clear();
    for (const key of this.claims.items.keys())
      if (!this.#stillSettled(`claim/${key}`)) this.#queue.add(`claim/${key}`);
    for (const key of this.prefixClaims.items.keys())
      if (!this.#stillSettled(`prefix/${key}`)) this.#queue.add(`prefix/${key}`);
    for (const key of this.addressPools.items.keys()) this.#queue.add(`pool/AddressPool/${key}`);
    for (const key of this.globalPools.items.keys()) this.#queue.add(`pool/GlobalAddressPool//${key}`);
    this.#queue.add('records');
  }

  /** Resolves once the queue is empty (tests, --once). */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /**
   * A claim's watch event: news unless it is a version its last reconcile read or wrote. A claim gone is left to the
   * record pass (its finalizer ran, or it was removed by hand: either way there is nothing to reconcile).
   */
  #claimChanged(kind: ChangeKind, key: string, current: ClaimView | undefined): void {
    if (current !== undefined && this.#settled.get(key)?.has(current.resourceVersion) === true) return;
    this.#settled.delete(key);
    if (kind !== 'deleted') this.#queue.add(key);
  }

  /** The caches show a settled claim as its last reconcile left it. */
  #stillSettled(key: string): boolean {
    const versions = this.#settled.get(key);
    if (versions === undefined) return false;
    const rest = key.slice(key.indexOf('/') + 1);
    const kind = key.slice(0, key.indexOf('/'));
    const view = (kind === 'claim' ? this.claims : this.prefixClaims).items.get(rest);
    if (view === undefined || !versions.has(view.resourceVersion)) return false;
    if (kind === 'prefix') return true;
    // An address claim: its IPAddress is there, and its pool's IPPool still records the address for it.
    const address = this.addresses.items.get(rest);
    const ip = address === undefined ? undefined : tryParseIP(address.address);
    const ippool =
      address === undefined ? undefined : this.#o.pools.items.get(`${this.#api.namespace}/${address.ippool}`);
    const record = ip === undefined ? undefined : ippool?.allocations.get(ip.value);
    const holder = record === undefined ? undefined : claimHolder(record);
    const slash = rest.indexOf('/');
    return (
      holder !== undefined &&
      sameHolder(holder, { kind: 'IPAddressClaim', namespace: rest.slice(0, slash), name: rest.slice(slash + 1) })
    );
  }

  #poolChanged(kind: PoolKind, key: string): void {
    const [namespace, name] = kind === 'GlobalAddressPool' ? ['', key] : splitKey(key);
    this.#queue.add(`pool/${kind}/${namespace}/${name}`);
    // Claims waiting on this pool (not found, not ready, exhausted) are looked at again; a settled one keeps its
    // address (one a new spec strands is reported by the pool's status).
    this.#wakeWaiting({ kind, name }, namespace);
  }

  /** Queues the claims of the pool (`namespace`: a namespaced pool's) that are not settled. */
  #wakeWaiting(pool: PoolRefOf, namespace: string): void {
    const ofPool = (view: ClaimView, claimKey: string): boolean =>
      view.pool.kind === pool.kind &&
      view.pool.name === pool.name &&
      (pool.kind === 'GlobalAddressPool' || claimKey.startsWith(`${namespace}/`));
    for (const [claimKey, view] of this.claims.items)
      if (ofPool(view, claimKey) && !this.#settled.has(`claim/${claimKey}`)) this.#queue.add(`claim/${claimKey}`);
    for (const [claimKey, view] of this.prefixClaims.items)
      if (ofPool(view, claimKey) && !this.#settled.has(`prefix/${claimKey}`)) this.#queue.add(`prefix/${claimKey}`);
  }

  async #reconcile(key: string): Promise<void> {
    if (!this.#o.leading()) return;
    const slash = key.indexOf('/');
    const kind = slash < 0 ? key : key.slice(0, slash);
    const rest = key.slice(slash + 1);
    const claimKind = kind === 'claim' || kind === 'prefix';
    const view = claimKind ? (kind === 'claim' ? this.claims : this.prefixClaims).items.get(rest) : undefined;
    if (claimKind) {
      // Asked again for an event of its own write (seen while it ran): nothing to do.
      if (view !== undefined && this.#settled.get(key)?.has(view.resourceVersion) === true) return;
      this.#noted.set(key, new Set());
    }
    let result: string;
    try {
      if (kind === 'claim') {
        const [namespace, name] = splitKey(rest);
        result = await reconcileAddressClaim(this.#ctx, namespace, name);
      } else if (kind === 'prefix') {
        const [namespace, name] = splitKey(rest);
        result = await reconcilePrefixClaim(this.#ctx, namespace, name);
      } else if (kind === 'pool') {
        const [poolKind, namespace, ...name] = rest.split('/');
        result = await this.#reconcilePool(poolKind as PoolKind, namespace ?? '', name.join('/'));
      } else {
        result = await this.#recordPass();
      }
    } catch (err) {
      this.#settled.delete(key);
      this.#noted.delete(key);
      this.#o.onResult?.(kind, 'error');
      throw err; // the queue retries it after a backoff
    }
    if (claimKind) {
      const noted = this.#noted.get(key);
      this.#noted.delete(key);
      // Served, or released (its last write, the finalizer's removal, is no news either).
      if ((result === 'ready' || result === 'released') && noted !== undefined) this.#settled.set(key, noted);
      else this.#settled.delete(key);
      // What a released claim gave back may serve the claims that wait on its pool.
      if (result === 'released' && view !== undefined) this.#wakeWaiting(view.pool, rest.slice(0, rest.indexOf('/')));
    }
    this.#o.onResult?.(kind, result);
    if (result === 'conflict') this.#queue.addAfter(key, 200);
  }

  /** How many claims of each kind the caches hold (metrics). */
  counts(): Array<{ kind: string; count: number }> {
    return [
      { kind: 'IPAddressClaim', count: this.claims.items.size },
      { kind: 'PrefixClaim', count: this.prefixClaims.items.size },
    ];
  }

  async #reconcilePool(kind: PoolKind, namespace: string, name: string): Promise<string> {
    const lookup = await this.#ctx.handler.fetchPool(namespace, kind, name, { release: true });
    const meta = lookup.meta;
    if (meta === undefined) return 'gone';
    const global = kind === 'GlobalAddressPool';
    const mine = (view: { pool: PoolRefOf }, key: string): boolean =>
      view.pool.kind === kind && view.pool.name === name && (global || key.startsWith(`${namespace}/`));
    const claimed: Array<{ claim: string; address: bigint }> = [];
    for (const [key, view] of this.addresses.items) {
      if (!mine(view, key)) continue;
      const ip = tryParseIP(view.address);
      if (ip !== undefined) claimed.push({ claim: `IPAddress ${key}`, address: ip.value });
    }
    const prefixesHeld = [...this.prefixClaims.items].some(([key, view]) => mine(view, key));
    // The IPPool cache is keyed namespace/name, in the pools' namespace.
    const ippool =
      lookup.kind === 'ready' ? this.#o.pools.items.get(`${this.#api.namespace}/${lookup.space.pool.name}`) : undefined;
    const ownRecords = lookup.kind === 'ready' && lookup.space.prefixes ? claimsIn(ippool) : [];
    const inUse = claimed.length > 0 || prefixesHeld || ownRecords.length > 0;
    if ((await protectPool(this.#api, kind, meta, inUse)) === 'conflict') return 'conflict';
    if (meta.deleting) return 'deleting';
    const counts =
      lookup.kind === 'ready'
        ? poolCounts(lookup.space, ippool, lookup.space.prefixes ? ownRecords : claimed)
        : undefined;
    const object = await getOne(this.#api, global ? GLOBALADDRESSPOOLS : ADDRESSPOOLS, namespace, name);
    await writePoolStatus(this.#api, this.#o.events, lookup, meta, kind, counts, recordOf(object)['status']);
    return lookup.kind;
  }

  /** The record pass (record-pass.ts) on the caches. */
  async #recordPass(): Promise<string> {
    const released = await releaseGoneClaims(this.#ctx, {
      pools: this.#o.pools.items.values(),
      addresses: this.addresses.items,
      cached: (holder) => this.#cached(holder),
      leading: this.#o.leading,
    });
    return released > 0 ? 'released' : 'clean';
  }

  #cached(holder: ClaimHolder): boolean {
    const cache = holder.kind === 'IPAddressClaim' ? this.claims : this.prefixClaims;
    return cache.items.has(holderKey(holder));
  }
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}
