// LIST with pagination: 500 items a page keeps memory flat on big clusters. A 404 (CRD not installed) is empty.
import { statusText, type ApiClient } from './api.ts';

export async function listAll(api: ApiClient, path: string, query = ''): Promise<unknown[]> {
  const items: unknown[] = [];
  await listEach(api, path, (item) => items.push(item), { query });
  return items;
}

/**
 * Every item, handed over page by page: a caller that keeps only a view of each lets a page be collected before the
 * next one is read (an IPPool with a thousand allocations is ~100 KB of JSON, so pools are best read a few at a time).
 */
export async function listEach(
  api: ApiClient,
  path: string,
  onItem: (item: unknown) => void,
  options: { query?: string; pageSize?: number } = {},
): Promise<void> {
  const query = options.query ?? '';
  let token = '';
  do {
    const page = `${path}?limit=${options.pageSize ?? 500}${query === '' ? '' : `&${query}`}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
    const res = await api.send({ method: 'GET', path: page });
    if (res.status === 404) return;
    if (res.status !== 200) throw new Error(`list ${path}: ${statusText(res)}`);
    const body = res.body as { items?: unknown[]; metadata?: { continue?: string } };
    for (const item of body.items ?? []) onItem(item);
    token = body.metadata?.continue ?? '';
  } while (token !== '');
}
