// LIST with pagination: 500 items a page keeps memory flat on big clusters. A 404 (CRD not installed) is empty.
import { statusText, type ApiClient } from './api.ts';

export async function listAll(api: ApiClient, path: string, query = ''): Promise<unknown[]> {
  const items: unknown[] = [];
  let token = '';
  do {
    const page = `${path}?limit=500${query === '' ? '' : `&${query}`}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
    const res = await api.send({ method: 'GET', path: page });
    if (res.status === 404) return items;
    if (res.status !== 200) throw new Error(`list ${path}: ${statusText(res)}`);
    const body = res.body as { items?: unknown[]; metadata?: { continue?: string } };
    items.push(...(body.items ?? []));
    token = body.metadata?.continue ?? '';
  } while (token !== '');
  return items;
}
