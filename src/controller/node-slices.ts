// Node slices: for every network whose NetworkAttachmentDefinitions ask for node_slice_size, keep its NodeSlicePool
// (named after the network, in the pools' namespace) giving each live node a slice, and free the slice of a node
// that left once its slice pool holds no allocation. Writes are conditional on resourceVersion; a conflict waits for
// the next pass. NodeSlicePool has no status subresource (Whereabouts writes status with plain updates), so status
// goes with the object.
import { formatCidr, masked, parseCidr } from '../ip/cidr.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { statusText } from '../store/kubernetes/api.ts';
import { listAll } from '../store/kubernetes/list.ts';
import { API_VERSION, objectPath } from '../store/kubernetes/resources.ts';
import { poolName } from '../store/names.ts';
import { assignSlices, type SliceEntry } from './slice-assign.ts';
import { groupByNetwork, sliceSpecOf, type SliceSpec } from './slice-spec.ts';

export interface SliceReport {
  readonly assigned: string[];
  readonly freed: string[];
  readonly starved: string[];
  readonly problems: string[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export async function reconcileSlices(api: ApiClient, options: { leading: () => boolean; log: (msg: string) => void }): Promise<SliceReport> {
  const report: SliceReport = { assigned: [], freed: [], starved: [], problems: [] };
  const specs: SliceSpec[] = [];
  for (const nad of await listAll(api, '/apis/k8s.cni.cncf.io/v1/network-attachment-definitions')) {
    try {
      const spec = sliceSpecOf(nad);
      if (spec !== undefined) specs.push(spec);
    } catch (err) {
      report.problems.push((err as Error).message);
    }
  }
  const { agreed, conflicts } = groupByNetwork(specs);
  report.problems.push(...conflicts);
  if (agreed.size === 0) return finish(report, options.log);
  const nodes = (await listAll(api, '/api/v1/nodes')).map((n) => String(obj(obj(n)['metadata'])['name']));
  const existing = new Map((await listAll(api, objectPath(api.namespace, 'nodeslicepools'))).map((o) => [String(obj(obj(o)['metadata'])['name']), obj(o)]));
  const used = new Map<string, number>();
  for (const pool of await listAll(api, objectPath(api.namespace, 'ippools'))) {
    used.set(String(obj(obj(pool)['metadata'])['name']), Object.keys(obj(obj(obj(pool)['spec'])['allocations'])).length);
  }
  for (const spec of agreed.values()) {
    if (!options.leading()) break;
    const current = existing.get(spec.network);
    const sameSpec = current !== undefined && sameSlicing(current, spec);
    const entries = sameSpec ? entriesOf(current) : []; // a new or re-sliced network starts over
    const decision = assignSlices(spec.range, spec.sliceSize, entries, nodes, (e) => {
      const name = poolName(masked(parseCidr(e.sliceRange)), { ...(spec.networkNamed ? { networkName: spec.network } : {}), node: e.nodeName });
      return (used.get(name) ?? 0) === 0;
    });
    if (sameSpec && decision.assigned.length === 0 && decision.freed.length === 0) {
      report.starved.push(...decision.starved);
      continue;
    }
    const body = {
      apiVersion: API_VERSION,
      kind: 'NodeSlicePool',
      metadata: { name: spec.network, ...(current === undefined ? {} : { resourceVersion: obj(current['metadata'])['resourceVersion'] }) },
      spec: { range: formatCidr(spec.range), sliceSize: `/${spec.sliceSize}` },
      status: { allocations: decision.entries },
    };
    const res = await api.send(current === undefined
      ? { method: 'POST', path: objectPath(api.namespace, 'nodeslicepools'), body }
      : { method: 'PUT', path: objectPath(api.namespace, 'nodeslicepools', spec.network), body });
    if (res.status === 200 || res.status === 201) {
      report.assigned.push(...decision.assigned.map((a) => `${spec.network}: ${a}`));
      report.freed.push(...decision.freed.map((f) => `${spec.network}: ${f}`));
      report.starved.push(...decision.starved);
    } else if (res.status !== 409) {
      report.problems.push(`NodeSlicePool ${spec.network}: ${statusText(res)}`);
    }
  }
  return finish(report, options.log);
}

function sameSlicing(pool: Obj, spec: SliceSpec): boolean {
  const s = obj(pool['spec']);
  try {
    return formatCidr(masked(parseCidr(String(s['range'])))) === formatCidr(spec.range) && String(s['sliceSize']).replace(/^\//, '') === String(spec.sliceSize);
  } catch {
    return false;
  }
}

function entriesOf(pool: Obj): SliceEntry[] {
  const list = obj(pool['status'])['allocations'];
  return (Array.isArray(list) ? list : []).map((e) => ({ nodeName: String(obj(e)['nodeName'] ?? ''), sliceRange: String(obj(e)['sliceRange'] ?? '') }));
}

function finish(report: SliceReport, log: (msg: string) => void): SliceReport {
  for (const a of report.assigned) log(`assigned slice ${a}`);
  for (const f of report.freed) log(`freed slice ${f}`);
  if (report.starved.length > 0) log(`no free slice for node(s) ${report.starved.join(', ')}`);
  for (const p of report.problems) log(`node slices: ${p}`);
  return report;
}
