// One pool on disk, shaped like an IPPool spec so operators can read it with the same eyes:
//   {"range":"10.0.0.0/24","allocations":{"5":{"id":"<container>","podref":"ns/pod","ifname":"eth0"}}}
// Offsets are decimal strings from the range's network address (bigint: a whole IPv6 /64 fits).
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { formatCidr, lastOf, masked, networkOf, type Cidr } from '../../ip/cidr.ts';
import type { Allocations, AllocationRecord } from '../store.ts';
import { writeFileAtomic } from '../../fs/atomic-write.ts';
import { readBoundedIfPresent } from '../../fs/read-bounded.ts';
import { UnsafeFileError } from '../../fs/unsafe-file.ts';
import { messageOf } from '../../errors.ts';
import { errnoOf } from '../../fs/unsafe-file.ts';
import { isRecord } from '../../record.ts';

export const FILE_MODE = 0o600;
/** A /64 with a million allocations is ~100 MB; anything far beyond is not a pool file. */
export const MAX_POOL_FILE_BYTES = 256 * 1024 * 1024;

/** Reads a pool file; a missing file is an empty pool, an unreadable or corrupt one an error naming the file. */
export function readPoolFile(file: string, range: Cidr): Map<bigint, AllocationRecord> {
  let data: Buffer | undefined;
  try {
    // Bounded, no links, no FIFOs: a planted link or device must not leak or hang (src/fs/read-bounded.ts).
    data = readBoundedIfPresent(file, { maxBytes: MAX_POOL_FILE_BYTES });
  } catch (err) {
    const why = err instanceof UnsafeFileError ? err.reason : `cannot be read (${errnoOf(err) ?? messageOf(err)})`;
    throw new HereaboutsError(ErrorKind.Io, `pool file ${file} ${why}`, { cause: err });
  }
  return data === undefined ? new Map<bigint, AllocationRecord>() : decodePool(data.toString('utf8'), file, range);
}

export function decodePool(text: string, file: string, range: Cidr): Map<bigint, AllocationRecord> {
  const corrupt = (why: string, cause?: unknown): HereaboutsError =>
    new HereaboutsError(ErrorKind.Io, `pool file ${file} is corrupt: ${why}`, {
      details: 'repair or remove the file; its allocations are not known until then',
      ...(cause === undefined ? {} : { cause }),
    });
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw corrupt('not valid JSON', err); // the parser's message would quote the file
  }
  if (!isRecord(doc)) throw corrupt('not a JSON object');
  const expected = rangeText(range);
  if (doc['range'] !== expected) {
    throw corrupt(`range is ${JSON.stringify(doc['range'])}, expected ${JSON.stringify(expected)}`);
  }
  // Missing or null is not "empty": we always write the key, so its absence means the file is not what we wrote.
  const allocations = doc['allocations'];
  if (!isRecord(allocations)) throw corrupt(`"allocations" is not an object (it is ${kindOf(allocations)})`);
  const base = networkOf(range);
  const size = lastOf(range) - base;
  const out = new Map<bigint, AllocationRecord>();
  for (const [key, value] of Object.entries(allocations)) {
    if (!/^(0|[1-9]\d*)$/.test(key) || BigInt(key) > size) {
      throw corrupt(`allocation key ${JSON.stringify(key)} is not an offset inside ${expected}`);
    }
    const record = decodeRecord(value);
    if (record === undefined) throw corrupt(`allocation ${key} is not {id, podref, ifname} strings`);
    out.set(base + BigInt(key), record);
  }
  return out;
}

export function encodePool(range: Cidr, allocations: Allocations): string {
  const base = networkOf(range);
  const entries = [...allocations].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const body: Record<string, Record<string, string>> = {};
  for (const [address, record] of entries) body[String(address - base)] = encodeRecord(record);
  return `${JSON.stringify({ range: rangeText(range), allocations: body })}\n`;
}

/** Crash-safe replace of a pool file (see writeFileAtomic); failures become CNI I/O errors naming the file. */
export function writePoolFile(file: string, tempPrefix: string, text: string, beforeCommit: () => void): void {
  try {
    writeFileAtomic(file, text, { mode: FILE_MODE, tempPrefix, beforeCommit });
  } catch (err) {
    if (err instanceof HereaboutsError) throw err;
    throw new HereaboutsError(ErrorKind.Io, `cannot write pool file ${file}: ${messageOf(err)}`, { cause: err });
  }
}

function rangeText(range: Cidr): string {
  return formatCidr(masked(range));
}

export function decodeRecord(value: unknown): AllocationRecord | undefined {
  if (!isRecord(value)) return undefined;
  const { id, podref, ifname, podUid, node, createdAt, binding } = value;
  // Whereabouts before 0.7 wrote no ifname; podref may be absent for non-Kubernetes runtimes.
  if (typeof id !== 'string') return undefined;
  if (!isOptionalString(podref) || !isOptionalString(ifname)) return undefined;
  if (!isOptionalString(podUid) || !isOptionalString(node) || !isOptionalString(createdAt)) return undefined;
  if (!isOptionalString(binding)) return undefined;
  return {
    containerId: id,
    podRef: podref ?? '',
    ifname: ifname ?? '',
    ...(podUid === undefined ? {} : { podUid }),
    ...(node === undefined ? {} : { node }),
    ...(createdAt === undefined ? {} : { createdAt }),
    ...(binding === undefined ? {} : { binding }),
  };
}

export function encodeRecord(record: AllocationRecord): Record<string, string> {
  const out: Record<string, string> = { id: record.containerId, podref: record.podRef, ifname: record.ifname };
  if (record.podUid !== undefined) out['podUid'] = record.podUid;
  if (record.node !== undefined) out['node'] = record.node;
  if (record.createdAt !== undefined) out['createdAt'] = record.createdAt;
  if (record.binding !== undefined) out['binding'] = record.binding;
  return out;
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  return Array.isArray(value) ? 'a list' : `a ${typeof value}`;
}

function isOptionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === 'string';
}
