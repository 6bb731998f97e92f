// The provider adapter of Cluster API's ipamutil, for hereabouts' pool kinds: FetchPool (the pool object and the
// space its claims draw on), EnsureAddress and ReleaseAddress (one conditional IPPool write each, through the store's
// writer: DESIGN §9), and the same for prefix claims. No Kubernetes object but IPPools and reservations is written
// here; the claim's lifecycle (finalizers, IPAddress, conditions) is the reconciler's.
import { formatIP } from '../../ip/address.ts';
import type { ApiClient } from '../../kube/api.ts';
import type { Log } from '../../log/json-log.ts';
import { parseCidr, type Cidr } from '../../ip/cidr.ts';
import { claimRecord, type ClaimHolder } from '../../store/claim-record.ts';
import { KeyedQueue } from '../../store/keyed-queue.ts';
import { PoolWriter } from '../../store/kubernetes/writer.ts';
import type { PoolRef } from '../../store/store.ts';
import { networkConfigsOf } from '../slices/spec.ts';
import { claimSpaceOf, type ClaimSpace, type PoolIdentity } from './claim-space.ts';
import {
  planAddressClaim,
  planClaimRelease,
  planPrefixClaim,
  type AddressOutcome,
  type PrefixOutcome,
} from './claim-plan.ts';
import { ADDRESSPOOLS, GLOBALADDRESSPOOLS, getOne, metaOf, NADS, type Meta, type PoolKind } from './objects.ts';
import { parsePoolSpec } from './pool-spec.ts';
import { recordOf } from '../../record.ts';

/** Time one claim's pool write may spend on conflicts with other writers (pods' ADDs) before it is tried again. */
const COMMIT_BUDGET_MS = 10_000;

export type PoolLookup =
  | { readonly kind: 'ready'; readonly meta: Meta; readonly identity: PoolIdentity; readonly space: ClaimSpace }
  /** The pool object, when it exists, and why its claims cannot be served now. */
  | { readonly kind: 'not-ready'; readonly meta?: Meta; readonly message: string };

export class ClaimHandler {
  readonly #api: ApiClient;
  readonly #writer: PoolWriter;
  readonly #log: Log;
  readonly #leading: () => boolean;
  /**
   * This controller's writes of one IPPool go one at a time: claims of one pool reconciled by several workers would
   * otherwise all plan the same lowest free address and refuse each other (a reservation taken, a 409).
   */
  readonly #perPool = new KeyedQueue();

  constructor(api: ApiClient, options: { readonly log: Log; readonly leading: () => boolean }) {
    this.#api = api;
    this.#writer = new PoolWriter(api);
    this.#log = options.log;
    this.#leading = options.leading;
  }

  /**
   * The pool a claim in `namespace` names, read live, and its claim space. A pool being deleted serves no new claim,
   * but its space is still given to a `release`.
   */
  async fetchPool(
    namespace: string,
    kind: PoolKind,
    name: string,
    options: { readonly release?: boolean } = {},
  ): Promise<PoolLookup> {
    const global = kind === 'GlobalAddressPool';
    const object = await getOne(this.#api, global ? GLOBALADDRESSPOOLS : ADDRESSPOOLS, namespace, name);
    const identity: PoolIdentity = global ? { kind, name } : { kind, namespace, name };
    const what = global ? `${kind} ${name}` : `${kind} ${namespace}/${name}`;
    if (object === undefined) return { kind: 'not-ready', message: `${what} not found` };
    const meta = metaOf(object);
    if (meta.deleting && options.release !== true)
      return { kind: 'not-ready', meta, message: `${what} is being deleted` };
    try {
      const spec = parsePoolSpec(recordOf(object)['spec'], global ? undefined : namespace);
      const nad =
        spec.mode === 'network' ? await getOne(this.#api, NADS, spec.nad.namespace, spec.nad.name) : undefined;
      const networks = nad === undefined ? undefined : networkConfigsOf(nad);
      return { kind: 'ready', meta, identity, space: claimSpaceOf(identity, spec, networks) };
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      return { kind: 'not-ready', meta, message: `${what}: ${err.message}` };
    }
  }

  /** EnsureAddress: the address the claim holds in the pool, claiming one (or `wanted`) when it holds none. */
  ensureAddress(
    space: ClaimSpace,
    holder: ClaimHolder,
    options: { readonly wanted?: bigint; readonly resting?: ReadonlySet<bigint>; readonly claimable?: boolean } = {},
  ): Promise<AddressOutcome> {
    const plan = planAddressClaim(space, holder, { createdAt: now(), ...options });
    return this.#perPool.run(space.pool.name, () =>
      this.#writer.claim(space.pool, plan, this.#commitOptions(space.reservations)),
    );
  }

  /** The block a prefix claim holds, claiming one of its length (or exactly `cidr`) when it holds none. */
  ensurePrefix(
    space: ClaimSpace,
    holder: ClaimHolder & { readonly prefixLength: number },
    cidr?: Cidr,
  ): Promise<PrefixOutcome> {
    const plan = planPrefixClaim(space, holder, { createdAt: now(), ...(cidr === undefined ? {} : { cidr }) });
    // A block's reservation would name its first address only: prefixes live in pools no other writer shares.
    return this.#perPool.run(space.pool.name, () => this.#writer.claim(space.pool, plan, this.#commitOptions(false)));
  }

  /**
   * ReleaseAddress: the claim's records leave the pool (one conditional write), then the reservation of each
   * released address goes if it still names the claim. The released addresses.
   */
  async releaseAddress(pool: PoolRef, holder: ClaimHolder): Promise<bigint[]> {
    const released = await this.#perPool.run(pool.name, () =>
      this.#writer.commit(pool, planClaimRelease(holder), {
        budgetMs: COMMIT_BUDGET_MS,
        log: this.#log,
        beforeWrite: () => this.#checkLeading(),
      }),
    );
    for (const address of released) {
      const ip = { family: pool.range.cidr.family, value: address };
      // The reservation names the claim as its record did (podref, ifname and id are what is compared).
      const outcome = await this.#writer.releaseReservation(pool, ip, claimRecord(holder, ''));
      this.#log.debug(
        `reservation of ${formatIP(ip)} of ${holder.kind} ${holder.namespace}/${holder.name}: ${outcome}`,
      );
    }
    return released;
  }

  #commitOptions(reservations: boolean): {
    reservations: boolean;
    budgetMs: number;
    log: Log;
    beforeWrite: () => void;
  } {
    return { reservations, budgetMs: COMMIT_BUDGET_MS, log: this.#log, beforeWrite: () => this.#checkLeading() };
  }

  #checkLeading(): void {
    if (!this.#leading()) throw new Error('lost the lease: no more writes');
  }
}

/**
 * The pool a released claim's records live in, from what its IPAddress (or status) recorded: its IPPool's name,
 * range and reservation prefix. Enough to release even once the pool object is gone.
 */
export function recordedPool(ippool: string, range: string, reservationNetwork: string): PoolRef | undefined {
  let cidr: Cidr;
  try {
    cidr = parseCidr(range);
  } catch {
    return undefined;
  }
  return {
    name: ippool,
    network: reservationNetwork,
    networkNamed: reservationNetwork !== '',
    range: { cidr, start: cidr.address, end: cidr.address, exclude: [] },
  };
}

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}
