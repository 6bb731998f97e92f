// GC (CNI 1.1): release every allocation whose attachment is not in the runtime's valid list. A malformed entry
// does not stop the collection: entries that still name a container keep all of that container's allocations
// (we cannot tell which interface was meant), and every bad entry is reported once the work is done.
import { configError } from '../../errors.ts';
import { describeValue } from '../../log/quote.ts';
import { collectGarbage } from '../../ipam/gc.ts';
import { combineErrors } from '../../ipam/errors.ts';
import type { AttachmentId } from '../../ipam/attachment.ts';
import { formatIP } from '../../ip/address.ts';
import { poolsOf, type VerbContext } from './context.ts';

export interface ValidAttachments {
  readonly valid: AttachmentId[];
  /** Containers named by entries without a usable ifname: none of their allocations are released. */
  readonly keepContainers: Set<string>;
  readonly problems: string[];
}

export function readValidAttachments(raw: Readonly<Record<string, unknown>>): ValidAttachments {
  const key = 'cni.dev/valid-attachments' in raw ? 'cni.dev/valid-attachments' : 'cni.dev/attachments';
  const list = raw[key];
  const out: ValidAttachments = { valid: [], keepContainers: new Set(), problems: [] };
  if (list === undefined) throw configError('GC needs cni.dev/valid-attachments (the attachments to keep)');
  if (!Array.isArray(list)) throw configError(`${key} must be a list, got ${describeValue(list)}`);
  list.forEach((entry: unknown, i) => {
    const e = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
    const containerId = e['containerID'];
    const ifname = e['ifname'];
    if (typeof containerId === 'string' && containerId !== '' && typeof ifname === 'string' && ifname !== '') {
      out.valid.push({ containerId, ifname });
      return;
    }
    if (typeof containerId === 'string' && containerId !== '') out.keepContainers.add(containerId);
    // describeValue, not JSON.stringify: an entry nested 20 000 deep would overflow the stack.
    out.problems.push(`${key}[${i}] (${describeEntry(e, entry)}) needs containerID and ifname strings`);
  });
  return out;
}

function describeEntry(fields: Record<string, unknown>, entry: unknown): string {
  const id = fields['containerID'];
  return typeof id === 'string' ? `containerID ${describeValue(id)}` : describeValue(entry);
}

export async function cmdGc(ctx: VerbContext): Promise<void> {
  const { valid, keepContainers, problems } = readValidAttachments(ctx.config.raw);
  const report = await collectGarbage(ctx.store, ctx.config, valid, {
    keepContainers,
    ...(await poolsOf(ctx, 'release')),
  });
  for (const r of report.released) {
    ctx.logger.info(
      `gc released ${formatIP(r.address)} of ${r.record.podRef || 'container'} ${r.record.containerId} (${r.record.ifname})`,
    );
  }
  const errors = [...report.errors, ...problems.map((p) => configError(p))];
  if (errors.length > 0) throw combineErrors('GC finished with errors', errors);
}
