// Claims beyond pods in the model (DESIGN §12): Cluster API IPAddressClaims on an AddressPool that names network A
// (so machines share net A's IPPool and reservations with its pods, and net B's overlapping ones), address and
// prefix claims on an AddressPool of its own addresses, each reconciled by the controller's real code in a process
// with faults and kills, deleted, or stripped of their finalizers by hand; the claims' record pass runs in every
// controller pass. After every step: no two IPAddresses name one address, every IPAddress of a claim that exists is
// held in its pool by that claim, no two prefix blocks (or a block and an address) overlap, and a Ready PrefixClaim
// holds its block. After quiesce: nothing is held for a claim that is gone.
import { ClaimHandler } from '../../src/controller/claims/handler.ts';
import { reconcileAddressClaim, type ClaimContext } from '../../src/controller/claims/address-claims.ts';
import { reconcilePrefixClaim } from '../../src/controller/claims/prefix-claims.ts';
import { releaseGoneClaims } from '../../src/controller/claims/record-pass.ts';
import { EventRecorder } from '../../src/controller/runtime/events.ts';
import { poolView, type PoolView } from '../../src/controller/pools/view.ts';
import { formatIP, parseIP } from '../../src/ip/address.ts';
import { masked, networkOf, parseCidr } from '../../src/ip/cidr.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import type { Log } from '../../src/log/json-log.ts';
import { claimHolder, heldThrough } from '../../src/store/claim-record.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { Killed, type FaultCounts, type FaultSpec } from './faults.ts';
import type { Violation } from './invariants.ts';
import type { Processes } from './processes.ts';
import { NETS } from './steps.ts';

/** Address claims on the network pool (m*), on the own pool (o*), and prefix claims on the own pool (x*). */
export const CLAIMS = ['m0', 'm1', 'm2', 'm3', 'o0', 'o1', 'x0', 'x1', 'x2'] as const;
export type ClaimName = (typeof CLAIMS)[number];
export const OWN_ADDRESSES = '10.60.0.0/27';

export type ClaimStep =
  /** The claim object is created (a PrefixClaim of `length` for x*). */
  | { readonly op: 'claim-create'; readonly claim: ClaimName; readonly length?: number }
  /** One reconcile of the claim by the controller (its process: faults and kills apply). */
  | { readonly op: 'claim-reconcile'; readonly claim: ClaimName; readonly faults: FaultSpec }
  | { readonly op: 'claim-delete'; readonly claim: ClaimName }
  /** Its finalizers removed by hand (then a deleting claim goes at once). */
  | { readonly op: 'claim-unfinalize'; readonly claim: ClaimName };

const CAPI = '/apis/ipam.cluster.x-k8s.io/v1beta2';
const HB = '/apis/hereabouts.cni.cncf.io/v1alpha1';
const silent: Log = { debug: () => undefined, info: () => undefined, warning: () => undefined, error: () => undefined };
type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const isPrefix = (claim: string): boolean => claim.startsWith('x');
const poolOf = (claim: string): string => (claim.startsWith('m') ? 'pa' : 'po');

export class ClaimsModel {
  /** The claims that exist (as of the last claim step): what the generator draws reconciles and deletions from. */
  readonly live = new Set<ClaimName>();
  readonly #api: ApiClient;
  readonly #ns: string;
  readonly #processes: Processes;

  readonly #counts: FaultCounts;

  constructor(api: ApiClient, processes: Processes, counts: FaultCounts) {
    this.#counts = counts;
    this.#api = api;
    this.#ns = api.namespace;
    this.#processes = processes;
  }

  #path(group: string, plural: string, name?: string): string {
    return `${group}/namespaces/${encodeURIComponent(this.#ns)}/${plural}${name === undefined ? '' : `/${name}`}`;
  }

  #claimPath(claim: string): string {
    return isPrefix(claim) ? this.#path(HB, 'prefixclaims', claim) : this.#path(CAPI, 'ipaddressclaims', claim);
  }

  async #send(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<number> {
    const res = await this.#api.send({
      method,
      path,
      ...(body === undefined ? {} : { body }),
      ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}),
    });
    if (res.status >= 300 && res.status !== 404 && res.status !== 409)
      throw new Error(`model claims: ${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.status;
  }

  /** The two pools: one naming network A's NAD, one of its own addresses. */
  async setup(): Promise<void> {
    const pool = (name: string, spec: Obj) =>
      this.#send('POST', this.#path(HB, 'addresspools'), {
        apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
        kind: 'AddressPool',
        metadata: { name },
        spec,
      });
    await pool('pa', { network: { nad: { name: NETS.A.cniName } } });
    await pool('po', { addresses: [OWN_ADDRESSES], prefix: 24, allocateReservedIPAddresses: true });
  }

  async run(step: ClaimStep): Promise<string> {
    try {
      return await this.#run(step);
    } finally {
      const res = await this.#api.send({ method: 'GET', path: this.#claimPath(step.claim) });
      if (res.status === 200) this.live.add(step.claim);
      else this.live.delete(step.claim);
    }
  }

  async #run(step: ClaimStep): Promise<string> {
    switch (step.op) {
      case 'claim-create': {
        const status = await this.#send(
          'POST',
          isPrefix(step.claim) ? this.#path(HB, 'prefixclaims') : this.#path(CAPI, 'ipaddressclaims'),
          this.#claimBody(step.claim, step.length ?? 30),
        );
        return status === 409 ? 'skip (exists)' : 'created';
      }
      case 'claim-reconcile': {
        const api = this.#processes.faulty(step.faults);
        try {
          const result = await reconcileOne(this.#context(api), step.claim);
          this.#counts.claims.reconciles++;
          if (result === 'ready') this.#counts.claims.ready++;
          if (result === 'released') this.#counts.claims.released++;
          return `reconciled: ${result}`;
        } catch (err) {
          if (!(err instanceof Killed) && step.faults.rate === 0 && step.faults.kill === undefined) throw err;
          return `reconcile failed${api.dead ? ' (killed)' : ''}: ${(err as Error).message.split('\n')[0] ?? ''}`;
        }
      }
      case 'claim-delete':
        return (await this.#send('DELETE', this.#claimPath(step.claim))) === 404 ? 'skip (none)' : 'deleted';
      case 'claim-unfinalize':
        return (await this.#send('PATCH', this.#claimPath(step.claim), { metadata: { finalizers: null } })) === 404
          ? 'skip (none)'
          : 'finalizers removed';
    }
  }

  /**
   * The claims' record pass, as the controller runs it in every full pass (`api`: the pass's own process), on the
   * IPPools and IPAddresses listed through `lister` (as its informers hold them).
   */
  async recordPass(api: ApiClient, lister: ApiClient): Promise<number> {
    const pools: PoolView[] = [];
    for (const item of await listAll(lister, objectPath(this.#ns, 'ippools'))) {
      const view = poolView(item);
      if (view !== undefined) pools.push(view);
    }
    const addresses: Array<[string, { claim: string }]> = [];
    for (const item of await listAll(lister, this.#path(CAPI, 'ipaddresses'))) {
      const meta = obj(obj(item)['metadata']);
      addresses.push([
        `${str(meta['namespace'])}/${str(meta['name'])}`,
        { claim: str(obj(obj(obj(item)['spec'])['claimRef'])['name']) },
      ]);
    }
    // No claim cache: every suspect is read live (a cache that lags only ever spares a record).
    return releaseGoneClaims(this.#context(api), { pools, addresses, cached: () => false, leading: () => true });
  }

  /** Faults have stopped: every claim is reconciled until it is settled (Ready, waiting, or gone). */
  async quiesce(): Promise<void> {
    for (const claim of CLAIMS)
      for (let i = 0; i < 3 && (await reconcileOne(this.#context(this.#api), claim)) === 'conflict'; i++);
  }

  #context(api: ApiClient): ClaimContext {
    return {
      api,
      handler: new ClaimHandler(api, { log: silent, leading: () => true }),
      events: new EventRecorder(api, { identity: 'model-controller', log: silent }),
      log: silent,
      resting: new Map(),
      // Whereabouts' components run only in sequences without node agents (runner.ts): the controller sees its pods.
      whereabouts: () => (this.#processes.agents ? undefined : 'Whereabouts runs (the model)'),
    };
  }

  #claimBody(claim: string, length: number): Obj {
    if (isPrefix(claim))
      return {
        apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
        kind: 'PrefixClaim',
        metadata: { name: claim },
        spec: { poolRef: { kind: 'AddressPool', name: 'po' }, prefixLength: length },
      };
    return {
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddressClaim',
      metadata: { name: claim },
      spec: { poolRef: { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: poolOf(claim) } },
    };
  }

  /** The invariants of the claims, read straight from the API. `after`: once quiesced, leaks count too. */
  async check(after: 'step' | 'quiesce'): Promise<Violation[]> {
    const out: Violation[] = [];
    const claims = new Set<string>();
    for (const plural of ['ipaddressclaims', 'prefixclaims'])
      for (const item of await listAll(this.#api, this.#path(plural === 'prefixclaims' ? HB : CAPI, plural)))
        claims.add(
          `${plural === 'prefixclaims' ? 'PrefixClaim' : 'IPAddressClaim'}/${str(obj(obj(item)['metadata'])['name'])}`,
        );
    // Every claim record, by address; prefix records as their blocks.
    const records: Array<{ pool: string; first: bigint; last: bigint; holder: string }> = [];
    for (const item of await listAll(this.#api, objectPath(this.#ns, 'ippools'))) {
      const name = str(obj(obj(item)['metadata'])['name']);
      const cidr = masked(parseCidr(str(obj(obj(item)['spec'])['range'])));
      for (const [offset, entry] of Object.entries(obj(obj(obj(item)['spec'])['allocations']))) {
        const e = obj(entry);
        const holder = claimHolder({ containerId: str(e['id']), ifname: str(e['ifname']), podRef: str(e['podref']) });
        const first = networkOf(cidr) + BigInt(offset);
        records.push({
          pool: name,
          first,
          last: heldThrough(holder, cidr.family, first),
          holder: holder === undefined ? `pod ${str(e['podref'])}` : `${holder.kind}/${holder.name}`,
        });
      }
    }
    const ip = (v: bigint): string => formatIP({ family: 4, value: v });
    // Blocks never overlap anything (single addresses in two records are the model's `duplicate` invariant).
    for (const block of records.filter((r) => r.last > r.first))
      for (const other of records)
        if (other !== block && other.pool === block.pool && other.first <= block.last && other.last >= block.first)
          out.push({
            invariant: 'claim',
            message: `${block.holder}'s block ${ip(block.first)}-${ip(block.last)} overlaps ${other.holder} at ${ip(other.first)} in ${block.pool}`,
          });
    const heldBy = (value: bigint, holder: string): boolean =>
      records.some((r) => r.holder === holder && r.first <= value && r.last >= value);
    const byAddress = new Map<string, string[]>();
    for (const item of await listAll(this.#api, this.#path(CAPI, 'ipaddresses'))) {
      const name = str(obj(obj(item)['metadata'])['name']);
      const claim = str(obj(obj(obj(item)['spec'])['claimRef'])['name']);
      const address = str(obj(obj(item)['spec'])['address']);
      byAddress.set(address, [...(byAddress.get(address) ?? []), name]);
      const exists = claims.has(`IPAddressClaim/${claim}`);
      if (exists && !heldBy(parseIP(address).value, `IPAddressClaim/${claim}`))
        out.push({
          invariant: 'claim',
          message: `IPAddress ${name} of claim ${claim} names ${address}, which no record of that claim holds`,
        });
      if (!exists && after === 'quiesce')
        out.push({
          invariant: 'leak',
          message: `IPAddress ${name} survived a controller pass although its claim is gone`,
        });
    }
    for (const [address, names] of byAddress)
      if (names.length > 1)
        out.push({
          invariant: 'claim',
          message: `${address} is named by ${names.length} IPAddresses: ${names.join(', ')}`,
        });
    for (const item of await listAll(this.#api, this.#path(HB, 'prefixclaims'))) {
      const name = str(obj(obj(item)['metadata'])['name']);
      const cidr = str(obj(obj(item)['status'])['cidr']);
      // Being deleted, its block may have gone back already (its finalizer goes after).
      const deleting = typeof obj(obj(item)['metadata'])['deletionTimestamp'] === 'string';
      if (cidr !== '' && !deleting && !heldBy(parseCidr(cidr).address, `PrefixClaim/${name}`))
        out.push({ invariant: 'claim', message: `PrefixClaim ${name} says ${cidr}, which no record of it holds` });
    }
    if (after === 'quiesce')
      for (const r of records)
        if (!r.holder.startsWith('pod ') && !claims.has(r.holder))
          out.push({
            invariant: 'leak',
            message: `${ip(r.first)} in ${r.pool}, held for ${r.holder}, survived a controller pass although its claim is gone`,
          });
    // After quiesce the step invariants were judged already (checkStep): only the leaks are new.
    return after === 'quiesce' ? out.filter((v) => v.invariant === 'leak') : out;
  }
}

async function reconcileOne(ctx: ClaimContext, claim: string): Promise<string> {
  return isPrefix(claim)
    ? reconcilePrefixClaim(ctx, ctx.api.namespace, claim)
    : reconcileAddressClaim(ctx, ctx.api.namespace, claim);
}
