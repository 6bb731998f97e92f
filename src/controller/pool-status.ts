// IPPool status (capacity, used, free, an Exhausted condition), written through the status subresource only when
// it changed, so a quiet cluster costs no writes.
import { blockSize } from '../ip/block.ts';
import type { Cidr } from '../ip/cidr.ts';
import { usableSpan } from '../ip/range.ts';
import type { ApiClient } from '../store/kubernetes/api.ts';
import { statusText } from '../store/kubernetes/api.ts';
import { objectPath } from '../store/kubernetes/resources.ts';

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

/** The status the pool should show, or undefined when `current` already shows it. */
export function desiredStatus(range: Cidr, used: number, current: unknown, now: Date): Obj | undefined {
  const capacity = blockSize(usableSpan(range));
  const free = capacity > BigInt(used) ? capacity - BigInt(used) : 0n;
  const exhausted = free === 0n;
  const old = obj(current);
  const oldCondition = (Array.isArray(old['conditions']) ? (old['conditions'] as unknown[]) : []).map(obj).find((c) => c['type'] === 'Exhausted');
  const status = exhausted ? 'True' : 'False';
  const condition: Condition = {
    type: 'Exhausted',
    status,
    reason: exhausted ? 'NoFreeAddress' : 'FreeAddresses',
    message: exhausted ? 'every address of the range is allocated' : `${free} of ${capacity} addresses free`,
    lastTransitionTime: oldCondition?.['status'] === status && typeof oldCondition['lastTransitionTime'] === 'string' ? oldCondition['lastTransitionTime'] : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  const next = { capacity: String(capacity), used, free: String(free), conditions: [condition] };
  const same = old['capacity'] === next.capacity && old['used'] === used && old['free'] === next.free && oldCondition?.['message'] === condition.message && oldCondition?.['status'] === status;
  return same ? undefined : next;
}

export async function writeStatus(api: ApiClient, name: string, status: Obj): Promise<string | undefined> {
  const res = await api.send({
    method: 'PATCH',
    path: `${objectPath(api.namespace, 'ippools', name)}/status`,
    body: { status },
    contentType: 'application/merge-patch+json',
  });
  return res.status === 200 || res.status === 404 ? undefined : `IPPool ${name} status: ${statusText(res)}`;
}
