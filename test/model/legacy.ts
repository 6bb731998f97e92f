// Records and reservations as Whereabouts before 0.7 wrote them: a record {id, podref} and a reservation
// {containerid, podref}, neither naming an interface. A cluster switched over from such a version keeps them for its
// long-lived pods; the 'legacy' step rewrites one pod's current attachments so, as if that version had made them.
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import type { Sandbox } from './attach.ts';
import { NETS } from './steps.ts';

async function put(api: ApiClient, path: string, body: unknown): Promise<boolean> {
  const res = await api.send({ method: 'PUT', path, body });
  if (res.status === 409) return false; // changed since read: left as it is
  if (res.status !== 200) throw new Error(`model: PUT ${path}: HTTP ${res.status}`);
  return true;
}

/** Rewrites the sandbox's records and reservations in the legacy form; says how many of each. */
export async function makeLegacy(api: ApiClient, podRef: string, sandbox: Sandbox): Promise<string> {
  let records = 0;
  let reservations = 0;
  for (const item of await listAll(api, objectPath(api.namespace, 'ippools'))) {
    const pool = item as {
      metadata: { name: string };
      spec: { allocations?: Record<string, Record<string, unknown>> };
    };
    const allocations = { ...pool.spec.allocations };
    let n = 0;
    for (const [offset, e] of Object.entries(allocations)) {
      if (e['podref'] !== podRef || e['id'] !== sandbox.id) continue;
      allocations[offset] = { id: sandbox.id, podref: podRef };
      n++;
    }
    const path = objectPath(api.namespace, 'ippools', pool.metadata.name);
    if (n > 0 && (await put(api, path, { ...pool, spec: { ...pool.spec, allocations } }))) records += n;
  }
  for (const a of sandbox.attachments) {
    a.legacy = true;
    if (!NETS[a.net].overlapping || a.address === undefined) continue;
    const path = objectPath(api.namespace, 'overlappingrangeipreservations', a.address);
    const res = await api.send({ method: 'GET', path });
    const object = res.body as { spec?: Record<string, unknown> };
    if (res.status !== 200 || object.spec?.['podref'] !== podRef) continue;
    if (await put(api, path, { ...object, spec: { containerid: sandbox.id, podref: podRef } })) reservations++;
  }
  return `${records} records, ${reservations} reservations without ifname`;
}
