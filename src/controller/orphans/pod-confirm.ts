// A removal is never decided on the pod cache alone: the watch may lag behind (a pod created a moment ago, a
// re-list in progress). Every pod a removal depends on is read live first; only what the API server says now
// counts.
import { ApiUnreachableError, statusText, type ApiClient } from '../../kube/api.ts';
import { messageOf } from '../../errors.ts';
import type { Log } from '../../log/json-log.ts';
import { eachLimited } from '../runtime/parallel.ts';
import { podView, type PodView } from './pod-view.ts';

/** podRef -> the live pod, null when it does not exist. A pod that could not be read is absent: decide nothing. */
export type LivePods = ReadonlyMap<string, PodView | null>;

export async function readLivePods(
  api: ApiClient,
  podRefs: Iterable<string>,
  options: { width?: number; log: Log },
): Promise<LivePods> {
  const out = new Map<string, PodView | null>();
  await eachLimited([...new Set(podRefs)], options.width ?? 16, async (podRef) => {
    const [namespace, name] = podRef.split('/', 2) as [string, string | undefined];
    if (name === undefined || name === '' || namespace === '') return;
    try {
      const res = await api.send({
        method: 'GET',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
      });
      if (res.status === 404) out.set(podRef, null);
      else if (res.status === 200) out.set(podRef, podView(res.body) ?? null);
      else options.log.warning(`cannot read pod ${podRef}: ${statusText(res)}; its allocations wait for the next pass`);
    } catch (err) {
      if (!(err instanceof ApiUnreachableError)) throw err;
      options.log.warning(`cannot read pod ${podRef}: ${messageOf(err)}; its allocations wait for the next pass`);
    }
  });
  return out;
}

/**
 * The nodes of `names` the API server says do not exist now (404). A warm record is released only for these: its
 * node's agent may hand the address out at any moment while the node exists (DESIGN §11).
 */
export async function readGoneNodes(
  api: ApiClient,
  names: Iterable<string>,
  options: { log: Log },
): Promise<Set<string>> {
  const gone = new Set<string>();
  await eachLimited([...new Set(names)], 8, async (name) => {
    try {
      const res = await api.send({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(name)}` });
      if (res.status === 404) gone.add(name);
      else if (res.status !== 200)
        options.log.warning(`cannot read node ${name}: ${statusText(res)}; its warm records wait for the next pass`);
    } catch (err) {
      if (!(err instanceof ApiUnreachableError)) throw err;
      options.log.warning(`cannot read node ${name}: ${messageOf(err)}; its warm records wait for the next pass`);
    }
  });
  return gone;
}
