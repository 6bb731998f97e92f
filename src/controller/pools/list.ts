// Every IPPool of the controller's namespace, listed now (a quorum LIST, page by page): only the views are kept,
// never a whole list of decoded pools at once.
import type { ApiClient } from '../../kube/api.ts';
import { listEach } from '../../kube/list.ts';
import { objectPath } from '../../store/kubernetes/objects.ts';
import { POOL_PAGE, poolView, type PoolView } from './view.ts';

/** The views keyed by `keyOf` (default: the pool's name). */
export async function poolViewsNow(
  api: ApiClient,
  keyOf: (view: PoolView) => string = (view) => view.name,
): Promise<Map<string, PoolView>> {
  const views = new Map<string, PoolView>();
  await listEach(
    api,
    objectPath(api.namespace, 'ippools'),
    (item) => {
      const view = poolView(item);
      if (view !== undefined) views.set(keyOf(view), view);
    },
    { pageSize: POOL_PAGE },
  );
  return views;
}
