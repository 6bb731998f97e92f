// A StatefulSet's declared addresses (docs/sticky.md): the annotation hereabouts.cni.cncf.io/sticky-addresses maps a
// NetworkAttachmentDefinition of the set's namespace ("name", or "namespace/name") to one entry per ordinal, from
// spec.ordinals.start on; an entry is an address, or a list of them (one per range: dual-stack). For every ordinal
// within the set's replicas the controller pre-binds its addresses: a record bound to the replica's identity, which
// no container holds yet and the replica's first ADD takes over. An address it cannot give (outside the network's
// ranges or its sticky area, excluded, the gateway, held by anything else) is refused with a Warning Event on the
// set; nothing is written for it. Pre-binding goes through the store's writer like any claim (reserved first).
import { checkRequested } from '../../allocator/check-requested.ts';
import type { NetworkConfig } from '../../config/types.ts';
import { messageOf } from '../../errors.ts';
import { contains } from '../../ip/cidr.ts';
import { formatIP, tryParseIP, type IPAddress } from '../../ip/address.ts';
import { statusText, type ApiClient } from '../../kube/api.ts';
import type { Log } from '../../log/json-log.ts';
import { isRecord } from '../../record.ts';
import { PoolWriter, stickyAreaPool } from '../../store/kubernetes/writer.ts';
import { poolRefs } from '../../store/pool-refs.ts';
import { bindingKey, formatBinding, PREBOUND_ID } from '../../store/sticky-binding.ts';
import type { AllocationRecord, Plan, PoolRef } from '../../store/store.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { networkConfigsOf } from '../slices/spec.ts';
import type { StatefulSetView } from './verdict.ts';
import type { PoolView } from '../pools/view.ts';

/** One declared address: the network's NAD, the ordinal, the address. */
export interface Declared {
  readonly nad: { readonly namespace: string; readonly name: string };
  readonly ordinal: number;
  readonly address: IPAddress;
}

/** The annotation read: the declared addresses of the ordinals in range, and what could not be read. */
export function declaredAddresses(
  namespace: string,
  set: StatefulSetView,
  text: string,
): { readonly declared: Declared[]; readonly problems: string[] } {
  const declared: Declared[] = [];
  const problems: string[] = [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { declared, problems: [`the annotation is not JSON: ${messageOf(err)}`] };
  }
  if (!isRecord(doc)) return { declared, problems: ['the annotation is not a JSON object of networks'] };
  for (const [key, value] of Object.entries(doc)) {
    const parts = key.split('/');
    const nad = parts.length === 2 ? { namespace: parts[0] ?? '', name: parts[1] ?? '' } : { namespace, name: key };
    if (parts.length > 2 || nad.name === '' || nad.namespace === '') {
      problems.push(`network ${JSON.stringify(key)} is not "name" or "namespace/name"`);
      continue;
    }
    // A tenant declares addresses on its own networks only: not another namespace's (as a namespaced AddressPool).
    if (nad.namespace !== namespace) {
      problems.push(`network ${key} is not in the StatefulSet's namespace ${namespace}`);
      continue;
    }
    if (!Array.isArray(value)) {
      problems.push(`network ${key}: not a list of addresses per ordinal`);
      continue;
    }
    for (const [index, entry] of value.entries()) {
      const ordinal = set.start + index;
      if (ordinal >= set.start + set.replicas) break; // scaled below: not pre-bound (and released after the grace)
      // One address per family and ordinal: two would both be pre-bound, and the replica would swap between them.
      const families = new Set<number>();
      for (const text of Array.isArray(entry) ? (entry as unknown[]) : [entry]) {
        const address = typeof text === 'string' ? tryParseIP(text) : undefined;
        const where = `network ${key}, ordinal ${ordinal}: ${JSON.stringify(text)}`;
        if (address === undefined) problems.push(`${where} is not an address`);
        else if (families.has(address.family)) problems.push(`${where} is a second IPv${address.family} address`);
        else {
          families.add(address.family);
          declared.push({ nad, ordinal, address });
        }
      }
    }
  }
  return { declared, problems };
}

/** PrebindInput.bound from the pools' cache. */
export function boundIn(pools: Iterable<PoolView>): (address: IPAddress, key: string) => boolean {
  const bound = new Set<string>();
  for (const pool of pools) {
    if (pool.range === undefined) continue;
    for (const [value, record] of pool.allocations) {
      const key = bindingKey(record);
      if (key !== undefined) bound.add(`${formatIP({ family: pool.range.family, value })}|${key}`);
    }
  }
  return (address, key) => bound.has(`${formatIP(address)}|${key}`);
}

export interface PrebindInput {
  readonly statefulSets: ReadonlyMap<string, StatefulSetView>;
  /** The namespaces whose StatefulSets this controller pre-binds for (--sticky). */
  readonly serves: (namespace: string) => boolean;
  /** The pools' cache: an address it shows bound to its binding already is not read again. */
  readonly pools: () => Iterable<PoolView>;
  /** NodeSlicePools by "namespace/name" (the pools' namespace): where a sliced network's sticky area is. */
  readonly nodeSlicePool: (network: string) => Promise<unknown>;
  readonly events: EventRecorder;
  readonly leading: () => boolean;
  readonly log: Log;
}

export interface PrebindResult {
  readonly prebound: number;
  readonly refused: number;
}

/** Pre-binds every set's declared addresses that are not bound yet. */
export async function prebindAddressLists(api: ApiClient, input: PrebindInput): Promise<PrebindResult> {
  let prebound = 0;
  let refused = 0;
  const writer = new PoolWriter(api);
  let bound: ((address: IPAddress, key: string) => boolean) | undefined;
  for (const [key, set] of input.statefulSets) {
    if (set.addresses === undefined || !input.leading()) continue;
    bound ??= boundIn(input.pools());
    const [namespace = '', name = ''] = key.split('/');
    if (!input.serves(namespace)) continue;
    const involved = { apiVersion: 'apps/v1', kind: 'StatefulSet', name, namespace, uid: set.uid };
    const refuse = async (message: string): Promise<void> => {
      refused++;
      await input.events.emit(involved, 'Warning', 'StickyAddressRefused', message);
    };
    const { declared, problems } = declaredAddresses(namespace, set, set.addresses);
    for (const problem of problems) await refuse(`hereabouts.cni.cncf.io/sticky-addresses: ${problem}`);
    const configs = new Map<string, NetworkConfig | string>();
    for (const d of declared) {
      const binding = formatBinding({ kind: 'StatefulSet', name, ordinal: d.ordinal });
      if (bound(d.address, `${namespace} ${binding}`)) continue;
      const nadKey = `${d.nad.namespace}/${d.nad.name}`;
      if (!configs.has(nadKey)) configs.set(nadKey, await networkOf(api, d.nad));
      const config = configs.get(nadKey);
      if (typeof config === 'string' || config === undefined) {
        await refuse(`${formatIP(d.address)} for ordinal ${d.ordinal}: ${config ?? 'no network'}`);
        continue;
      }
      let pool: PoolRef | undefined;
      try {
        pool = await poolFor(config, d.address, input);
      } catch (err) {
        await refuse(`${formatIP(d.address)} for ordinal ${d.ordinal} on ${nadKey}: ${messageOf(err)}`);
        continue;
      }
      if (pool === undefined) {
        await refuse(`${formatIP(d.address)} for ordinal ${d.ordinal} is in no range of ${nadKey}`);
        continue;
      }
      const record: AllocationRecord = {
        containerId: PREBOUND_ID,
        ifname: '',
        podRef: `${namespace}/${name}-${d.ordinal}`,
        createdAt: new Date().toISOString(),
        binding,
      };
      const outcome = await writer
        .claim(pool, planPrebind(pool, d.address.value, record), {
          reservations: config.ipam.enableOverlappingRanges,
          budgetMs: 5_000,
          log: input.log,
          beforeWrite: () => {
            if (!input.leading()) throw new Error('not leading');
          },
        })
        .catch((err: unknown) => ({ kind: 'failed' as const, why: messageOf(err) }));
      if (outcome.kind === 'prebound') {
        prebound++;
        input.log.info(`pre-bound ${formatIP(d.address)} in IPPool ${pool.name} to ${namespace} ${binding}`, {
          pool: pool.name,
          ip: formatIP(d.address),
          binding,
        });
      } else if (outcome.kind === 'refused') {
        await refuse(`${formatIP(d.address)} for ordinal ${d.ordinal} on ${nadKey}: ${outcome.why}`);
      } else if (outcome.kind === 'failed') {
        input.log.warning(`pre-binding ${formatIP(d.address)} to ${namespace} ${binding} failed: ${outcome.why}`);
      }
    }
  }
  return { prebound, refused };
}

type PrebindOutcome =
  { readonly kind: 'prebound' } | { readonly kind: 'bound' } | { readonly kind: 'refused'; readonly why: string };

/** Pure: claim `address` for `record` unless its binding holds it already; refuse whatever else holds or bars it. */
export function planPrebind(pool: PoolRef, address: bigint, record: AllocationRecord): Plan<PrebindOutcome> {
  return (current, refused) => {
    const holder = current.get(address);
    if (holder !== undefined && bindingKey(holder) === bindingKey(record)) {
      return { change: null, value: { kind: 'bound' } };
    }
    const verdict = checkRequested(pool.range, current, refused, address);
    if (!verdict.ok) {
      const why =
        verdict.reason === 'taken'
          ? `held by ${verdict.holder === undefined ? 'another writer (its reservation)' : holderText(verdict.holder)}`
          : verdict.reason === 'outside-range'
            ? `outside the allocatable span of IPPool ${pool.name}`
            : verdict.reason === 'excluded'
              ? 'excluded by the network'
              : "the network's gateway";
      return { change: null, value: { kind: 'refused', why } };
    }
    return { change: { claim: { address, record } }, value: { kind: 'prebound' } };
  };
}

function holderText(record: AllocationRecord): string {
  if (record.binding !== undefined) return `${record.binding} of ${record.podRef.split('/')[0] ?? ''}`;
  return record.podRef === '' ? `container ${record.containerId}` : `pod ${record.podRef}`;
}

/** The network a NAD names, as the plugin parses it; a string says why there is none. */
async function networkOf(
  api: ApiClient,
  nad: { readonly namespace: string; readonly name: string },
): Promise<NetworkConfig | string> {
  const path = `/apis/k8s.cni.cncf.io/v1/namespaces/${encodeURIComponent(nad.namespace)}/network-attachment-definitions/${encodeURIComponent(nad.name)}`;
  const res = await api.send({ method: 'GET', path });
  if (res.status === 404) return `NetworkAttachmentDefinition ${nad.namespace}/${nad.name} does not exist`;
  if (res.status !== 200) return `NetworkAttachmentDefinition ${nad.namespace}/${nad.name}: ${statusText(res)}`;
  try {
    const [config] = networkConfigsOf(res.body);
    if (config === undefined) return `NetworkAttachmentDefinition ${nad.namespace}/${nad.name} has no hereabouts IPAM`;
    if (config.ipam.sticky === undefined) return `network ${nad.namespace}/${nad.name} is not sticky (ipam.sticky)`;
    return config;
  } catch (err) {
    return messageOf(err);
  }
}

/** The pool the address is pre-bound in: its range's, or with node slices the sticky area's. */
async function poolFor(config: NetworkConfig, address: IPAddress, input: PrebindInput): Promise<PoolRef | undefined> {
  if (config.ipam.nodeSliceSize !== undefined) {
    const network = config.ipam.networkName ?? config.name;
    const object = await input.nodeSlicePool(network);
    if (object === undefined) throw new Error(`NodeSlicePool ${network} does not exist yet`);
    const pool = stickyAreaPool(object, config);
    if (!contains(pool.range.cidr, address) || address.value < pool.range.start || address.value > pool.range.end) {
      throw new Error(`outside the network's sticky area (IPPool ${pool.name})`);
    }
    return pool;
  }
  return poolRefs(config).find((pool) => contains(pool.range.cidr, address));
}
