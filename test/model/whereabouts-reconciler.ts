// One run of Whereabouts' reconciler (v0.9.4, pkg/reconciler: the ip-control-loop's scheduled run), by its rules:
//   - it lists the pools, then the pods, and counts as live only pods named by some pool record and not marked
//     DisruptionTarget=True by the taint manager;
//   - a record is an orphan unless its pod is live and lists the address in its Multus network-status annotation
//     (a Pending pod is read again up to three times first);
//   - it lists the reservations: one is an orphan unless its podref is live and lists the address its name gives
//     (the name with every '-' read as ':');
//   - it writes each pool without its orphans (a JSON patch testing the version listed: a pool that changed since
//     stops the run before any reservation is touched), then deletes every orphaned reservation by name, with no
//     precondition.
// The model keeps to its own namespace (Whereabouts lists every namespace). Its 250 ms pauses between reads of a
// Pending pod are one turn of the event loop here.
import { formatIP } from '../../src/ip/address.ts';
import { masked, networkOf, parseCidr } from '../../src/ip/cidr.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { entriesOf, updatePool } from './whereabouts.ts';

const POD_REFRESH_RETRIES = 3;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

interface LivePod {
  readonly ips: ReadonlySet<string>;
  readonly phase: string;
}

function wrapPod(pod: Obj): LivePod {
  const ips = new Set<string>();
  const annotation = str(obj(obj(pod['metadata'])['annotations'])['k8s.v1.cni.cncf.io/network-status']);
  try {
    const list: unknown = JSON.parse(annotation === '' ? '[]' : annotation);
    for (const network of Array.isArray(list) ? list : []) {
      if (obj(network)['default'] === true) continue;
      const addresses = obj(network)['ips'];
      for (const ip of Array.isArray(addresses) ? addresses : []) if (typeof ip === 'string') ips.add(ip);
    }
  } catch {
    // An unreadable annotation lists no address, as in wrappedPod.go.
  }
  return { ips, phase: str(obj(pod['status'])['phase']) };
}

function markedForDeletion(pod: Obj): boolean {
  const conditions = obj(pod['status'])['conditions'];
  return (Array.isArray(conditions) ? conditions : []).some((c) => {
    const cond = obj(c);
    return (
      cond['type'] === 'DisruptionTarget' && cond['status'] === 'True' && cond['reason'] === 'DeletionByTaintManager'
    );
  });
}

export async function whereaboutsReconcile(
  api: ApiClient,
  onDeleted: (reservation: string) => void = () => undefined,
): Promise<string> {
  const ns = api.namespace;
  const pools = (await listAll(api, objectPath(ns, 'ippools'))).map(obj);
  const pods = (await listAll(api, `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`)).map(obj);
  const served = new Set<string>();
  for (const pool of pools) for (const e of entriesOf(pool).values()) served.add(e.podref);
  const live = new Map<string, LivePod>();
  for (const pod of pods) {
    const meta = obj(pod['metadata']);
    const ref = `${str(meta['namespace'])}/${str(meta['name'])}`;
    if (served.has(ref) && !markedForDeletion(pod)) live.set(ref, wrapPod(pod));
  }
  const alive = async (podRef: string, ip: string): Promise<boolean> => {
    let pod = live.get(podRef);
    if (pod === undefined) return false;
    if (pod.ips.has(ip) || pod.phase !== 'Pending') return pod.ips.has(ip);
    for (let retry = 0; retry < POD_REFRESH_RETRIES; retry++) {
      const [namespace = '', name = ''] = podRef.split('/');
      const res = await api.send({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods/${name}` });
      if (res.status !== 200) return false;
      pod = wrapPod(obj(res.body));
      if (pod.phase !== 'Pending') break;
      if (pod.ips.has(ip)) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return pod.ips.has(ip);
  };
  const orphanedRecords: Array<{ pool: Obj; offsets: string[] }> = [];
  for (const pool of pools) {
    const cidr = masked(parseCidr(str(obj(pool['spec'])['range'])));
    const offsets: string[] = [];
    for (const [offset, e] of entriesOf(pool)) {
      const ip = formatIP({ family: cidr.family, value: networkOf(cidr) + BigInt(offset) });
      if (e.podref !== '' && !(await alive(e.podref, ip))) offsets.push(offset);
    }
    if (offsets.length > 0) orphanedRecords.push({ pool, offsets });
  }
  const orphanedReservations: string[] = [];
  for (const r of (await listAll(api, objectPath(ns, 'overlappingrangeipreservations'))).map(obj)) {
    const name = str(obj(r['metadata'])['name']);
    if (!(await alive(str(obj(r['spec'])['podref']), name.replaceAll('-', ':')))) orphanedReservations.push(name);
  }
  let released = 0;
  for (const { pool, offsets } of orphanedRecords) {
    const next = entriesOf(pool);
    for (const offset of offsets) next.delete(offset);
    const res = await updatePool(api, pool, next);
    if (res.status !== 200) return `released ${released}, then a pool write failed (HTTP ${res.status}): run stopped`;
    released += offsets.length;
  }
  for (const name of orphanedReservations) {
    await api.send({ method: 'DELETE', path: objectPath(ns, 'overlappingrangeipreservations', name) });
    onDeleted(name);
  }
  return `released ${released}, reservations deleted ${orphanedReservations.length}`;
}
