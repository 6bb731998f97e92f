// Status conditions in the Kubernetes convention ({type, status, reason, message, lastTransitionTime}); the time
// moves only when the status does, so a condition rewritten with the same status keeps its age.
import { recordOf } from '../../record.ts';
export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime?: string;
  readonly observedGeneration?: number;
}

export type StampedCondition = Condition & { readonly lastTransitionTime: string };

/** `current` (a status.conditions value) with `wanted` set; other types are kept as they are. */
export function withConditions(current: unknown, wanted: readonly Condition[], now: Date): StampedCondition[] {
  const list = (Array.isArray(current) ? current : []).map(recordOf);
  const out: StampedCondition[] = [];
  for (const c of list) {
    if (wanted.some((w) => w.type === c['type'])) continue;
    if (typeof c['type'] === 'string') out.push(c as unknown as StampedCondition);
  }
  for (const w of wanted) {
    const before = list.find((c) => c['type'] === w.type);
    const since =
      before !== undefined && before['status'] === w.status && typeof before['lastTransitionTime'] === 'string'
        ? before['lastTransitionTime']
        : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    out.push({ ...w, lastTransitionTime: since });
  }
  return out.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

/** Whether `current` already says what `wanted` says (type, status, reason, message). */
export function conditionsMatch(current: unknown, wanted: readonly Condition[]): boolean {
  const list = (Array.isArray(current) ? current : []).map(recordOf);
  return wanted.every((w) =>
    list.some(
      (c) => c['type'] === w.type && c['status'] === w.status && c['reason'] === w.reason && c['message'] === w.message,
    ),
  );
}
