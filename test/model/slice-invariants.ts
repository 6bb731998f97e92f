// The invariants of network S's node slices (DESIGN §9: the slice IPPools are the truth about which space is in use):
//   slice    (every step) no slice of the NodeSlicePool is assigned over address space that a non-empty slice pool
//            of another node covers, whichever way the NodeSlicePool came to be (re-created, resliced);
//   slicing  (after quiesce) while a NAD of the network exists, the NodeSlicePool exists, slices by the size one of
//            the network's NADs asks for, and gives a slice to every live node when one is free (no assigned or
//            draining slice, and no non-empty slice pool, covers it).
import { formatCidr, lastOf, masked, networkOf, parseCidr, type Cidr } from '../../src/ip/cidr.ts';
import { slices } from '../../src/ip/slice.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import type { Cluster } from './cluster.ts';
import type { Violation } from './invariants.ts';
import { readState, type Held } from './state.ts';
import { NETS } from './steps.ts';

interface Entry {
  readonly nodeName: string;
  readonly sliceRange: string;
}

const network = NETS.S.networkName ?? NETS.S.cniName;

function cidrOf(text: string): Cidr | undefined {
  try {
    return masked(parseCidr(text));
  } catch {
    return undefined;
  }
}

const overlaps = (a: Cidr, b: Cidr): boolean => networkOf(a) <= lastOf(b) && networkOf(b) <= lastOf(a);

async function readNodeSlicePool(cluster: Cluster) {
  const res = await cluster.api.send({ method: 'GET', path: objectPath(cluster.ns, 'nodeslicepools', network) });
  if (res.status !== 200) return undefined;
  const body = res.body as {
    spec?: { range?: string; sliceSize?: string };
    status?: { allocations?: Entry[]; draining?: Entry[] };
  };
  return {
    range: body.spec?.range ?? '',
    sliceSize: body.spec?.sliceSize ?? '',
    entries: (body.status?.allocations ?? []).filter((e) => e.nodeName !== ''),
    draining: body.status?.draining ?? [],
  };
}

/** The node (API name) whose slice pool this is, when it is one of network S's. */
function ownerOf(cluster: Cluster, pool: string): string | undefined {
  for (const node of cluster.nodes.values()) if (pool.startsWith(`${network}-${node.name}-`)) return node.name;
  return undefined;
}

export async function checkSliceSpace(cluster: Cluster, held: readonly Held[]): Promise<Violation[]> {
  const nsp = await readNodeSlicePool(cluster);
  if (nsp === undefined) return [];
  const used = new Map<string, { node: string; range: Cidr; count: number }>();
  for (const h of held) {
    const node = ownerOf(cluster, h.pool);
    const range = cidrOf(h.range);
    if (node === undefined || range === undefined) continue;
    const seen = used.get(h.pool) ?? { node, range, count: 0 };
    seen.count++;
    used.set(h.pool, seen);
  }
  const out: Violation[] = [];
  for (const e of nsp.entries) {
    const slice = cidrOf(e.sliceRange);
    if (slice === undefined) continue;
    for (const [pool, u] of used) {
      if (u.node === e.nodeName || !overlaps(slice, u.range)) continue;
      out.push({
        invariant: 'slice',
        message: `slice ${e.sliceRange} of NodeSlicePool ${network} is assigned to ${e.nodeName} although IPPool ${pool} of ${u.node} still holds ${u.count} address(es) there`,
      });
    }
  }
  return out;
}

export async function checkSlicing(cluster: Cluster): Promise<Violation[]> {
  if (!cluster.networks.nads.has('S')) return [];
  const asked = [cluster.sliceSize, ...(cluster.networks.tenant === undefined ? [] : [cluster.networks.tenant.size])];
  const nsp = await readNodeSlicePool(cluster);
  const wanted = `NAD ${NETS.S.cniName} asks /${cluster.sliceSize}${cluster.networks.tenant === undefined ? '' : ` (a tenant's NAD /${cluster.networks.tenant.size})`}`;
  if (nsp === undefined)
    return [
      { invariant: 'slicing', message: `NodeSlicePool ${network} does not exist after a controller pass; ${wanted}` },
    ];
  const size = Number(nsp.sliceSize.replace(/^\//, ''));
  const range = cidrOf(nsp.range);
  if (range === undefined || formatCidr(range) !== NETS.S.range || !asked.includes(size))
    return [
      { invariant: 'slicing', message: `NodeSlicePool ${network} slices ${nsp.range} by ${nsp.sliceSize}; ${wanted}` },
    ];
  // Space in use: assigned and draining slices, and whatever a non-empty slice pool of the network covers.
  const { held } = await readState(cluster);
  const pools = held.filter((h) => ownerOf(cluster, h.pool) !== undefined).map((h) => cidrOf(h.range));
  const taken = [...[...nsp.entries, ...nsp.draining].map((e) => cidrOf(e.sliceRange)), ...pools].filter(
    (c) => c !== undefined,
  );
  const free = [...slices(range, size)].find((s) => !taken.some((t) => overlaps(s, t)));
  if (free === undefined) return [];
  const out: Violation[] = [];
  for (const node of cluster.nodes.values()) {
    if (!node.up || nsp.entries.some((e) => e.nodeName === node.name)) continue;
    out.push({
      invariant: 'slicing',
      message: `node ${node.name} has no slice of ${network} after a controller pass although ${formatCidr(free)} is free; ${wanted}`,
    });
  }
  return out;
}
