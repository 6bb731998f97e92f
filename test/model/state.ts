// What the API holds now, read straight from it (no cache, no faults): every pool record and every reservation of
// the model's namespace, for the invariants to judge.
import { formatIP } from '../../src/ip/address.ts';
import { masked, networkOf, parseCidr } from '../../src/ip/cidr.ts';
import { listAll } from '../../src/kube/list.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import type { Cluster } from './cluster.ts';
import { NETS, type NetId } from './steps.ts';

export interface Held {
  readonly pool: string;
  readonly range: string;
  readonly net: NetId | undefined;
  readonly ip: string;
  readonly podRef: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly podUid: string;
  /** A sticky address's binding (docs/sticky.md), "" for an ordinary record. */
  readonly binding: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function netOfPool(name: string, range: string): NetId | undefined {
  if (name.startsWith(`${NETS.S.networkName}-`)) return 'S';
  if (name.startsWith(`${NETS.U.networkName}-`)) return 'U';
  for (const net of ['A', 'B', 'C', 'T'] as const)
    if (range === NETS[net].range && name === NETS[net].range.replace('/', '-')) return net;
  return undefined;
}

export async function readState(cluster: Cluster): Promise<{ held: Held[]; reservations: Map<string, string> }> {
  const held: Held[] = [];
  for (const item of await listAll(cluster.api, objectPath(cluster.ns, 'ippools'))) {
    const name = str(obj(obj(item)['metadata'])['name']);
    const spec = obj(obj(item)['spec']);
    const cidr = masked(parseCidr(str(spec['range'])));
    for (const [offset, entry] of Object.entries(obj(spec['allocations']))) {
      const e = obj(entry);
      const ip = formatIP({ family: cidr.family, value: networkOf(cidr) + BigInt(offset) });
      held.push({
        pool: name,
        range: str(spec['range']),
        net: netOfPool(name, str(spec['range'])),
        ip,
        podRef: str(e['podref']),
        containerId: str(e['id']),
        ifname: str(e['ifname']),
        podUid: str(e['podUid']),
        binding: str(e['binding']),
      });
    }
  }
  const reservations = new Map<string, string>();
  for (const item of await listAll(cluster.api, objectPath(cluster.ns, 'overlappingrangeipreservations'))) {
    reservations.set(str(obj(obj(item)['metadata'])['name']), str(obj(obj(item)['spec'])['podref']));
  }
  return { held, reservations };
}
