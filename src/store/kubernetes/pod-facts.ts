// What a sticky network asks of the pod an ADD is for (store.ts PodFacts; docs/sticky.md): the node agent's watch
// keeps these facts of its node's pods (node-pods.ts), a plugin process without an agent reads the one pod.
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { statusText, type ApiClient } from '../../kube/api.ts';
import { isRecord, recordOf } from '../../record.ts';
import { STICKY_ANNOTATION } from '../sticky-binding.ts';
import type { PodFacts } from '../store.ts';

const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

/** The facts of a pod object (undefined: not a pod with a uid). */
export function podFactsOf(object: unknown): PodFacts | undefined {
  const metadata = recordOf(recordOf(object)['metadata']);
  const uid = metadata['uid'];
  if (typeof uid !== 'string' || uid === '') return undefined;
  const refs = Array.isArray(metadata['ownerReferences']) ? metadata['ownerReferences'] : [];
  const controller = refs.map(recordOf).find((ref) => ref['controller'] === true);
  const { apiVersion, kind, name } = controller ?? {};
  const owner =
    typeof apiVersion === 'string' && typeof kind === 'string' && typeof name === 'string'
      ? { apiVersion, kind, name }
      : undefined;
  const podIndex = recordOf(metadata['labels'])[POD_INDEX_LABEL];
  const sticky = recordOf(metadata['annotations'])[STICKY_ANNOTATION];
  return {
    uid,
    ...(owner === undefined ? {} : { owner }),
    ...(typeof podIndex === 'string' ? { podIndex } : {}),
    ...(typeof sticky === 'string' ? { sticky } : {}),
  };
}

/** One read of the pod; undefined when it does not exist or has another UID. */
export async function readPodFacts(
  api: ApiClient,
  namespace: string,
  name: string,
  uid: string | undefined,
): Promise<PodFacts | undefined> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  const res = await api.send({ method: 'GET', path });
  if (res.status === 404) return undefined;
  if (res.status === 401 || res.status === 403) {
    throw new HereaboutsError(ErrorKind.Forbidden, `reading pod ${namespace}/${name}: ${statusText(res)}`, {
      details: "a sticky network reads the pod's owner: the node's credentials need get/list/watch on pods",
    });
  }
  if (res.status !== 200 || !isRecord(res.body)) {
    throw new HereaboutsError(ErrorKind.Unavailable, `reading pod ${namespace}/${name}: ${statusText(res)}`);
  }
  const facts = podFactsOf(res.body);
  return facts === undefined || (uid !== undefined && facts.uid !== uid) ? undefined : facts;
}
