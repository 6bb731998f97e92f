// OverlappingRangeIPReservations: one object per allocated address, named after the address (DESIGN §4), created
// before the pool write so that two overlapping ranges can never both commit the same address.
//
// Ownership (DESIGN §9): a reservation this update created is its to delete if unused; one it found existing for the
// same attachment is adopted, and an adopted reservation is never deleted by the adopter. Every delete is
// conditional on the uid and resourceVersion judged, and only a reservation still naming the released attachment
// goes. Adopting rewrites the reservation (a new resourceVersion), so a release that judged the old version fails
// its precondition instead of deleting what was just adopted.
//
// Creating and adopting stamp the time the reservation was taken (TAKEN_AT_ANNOTATION): the controller's grace runs
// from it, so an adoption in flight is not judged by the age of the object it adopted. A reservation that names no
// interface (Whereabouts before 0.7) cannot tell which interface of its pod it protects: a claim never adopts one;
// only the address's own pool record, naming this attachment, makes it this attachment's (followRecord, release).
// Likewise a reservation without the pod's UID (Whereabouts') is adopted by no claim of a pod whose UID is known.
import type { IPAddress } from '../../ip/address.ts';
import { reservationName } from '../../config/names.ts';
import type { AllocationRecord, PoolRef } from '../store.ts';
import type { ApiClient } from '../../kube/api.ts';

import { retryOnConflict, CONFLICT } from '../../kube/retry.ts';
import { API_VERSION, getObject, TAKEN_AT_ANNOTATION, versionOf, type ObjectVersion } from './objects.ts';
import { createObject, deleteExactly, replaceObject } from './resources.ts';
import { isRecord } from '../../record.ts';

const PLURAL = 'overlappingrangeipreservations';
const ADOPT_ATTEMPTS = 4;

/** A reservation this process wrote: the version a later conditional write or delete is keyed to. */
export interface Held {
  readonly name: string;
  readonly version: ObjectVersion;
  /** The object as the API answered that write: a later write conditional on `version` needs no read first. */
  readonly object?: Readonly<Record<string, unknown>>;
}

/** created: ours now. adopted: already this attachment's (an earlier attempt). taken: another attachment's. */
export type ReserveOutcome =
  | { readonly kind: 'created'; readonly held: Held }
  | { readonly kind: 'adopted'; readonly held: Held }
  | { readonly kind: 'taken' };

export function reservationNameOf(pool: PoolRef, ip: IPAddress): string {
  return reservationName(ip, pool.networkNamed ? pool.network : undefined);
}

function specOf(record: AllocationRecord): Record<string, string> {
  const spec: Record<string, string> = {
    podref: record.podRef,
    ifname: record.ifname,
    containerid: record.containerId,
  };
  if (record.node !== undefined) spec['node'] = record.node;
  if (record.podUid !== undefined) spec['podUid'] = record.podUid;
  return spec;
}

export async function reserve(
  api: ApiClient,
  pool: PoolRef,
  ip: IPAddress,
  record: AllocationRecord,
): Promise<ReserveOutcome> {
  const name = reservationNameOf(pool, ip);
  const outcome = await retryOnConflict<ReserveOutcome>(
    async () => {
      const now = new Date().toISOString();
      const body = {
        apiVersion: API_VERSION,
        kind: 'OverlappingRangeIPReservation',
        metadata: { name, namespace: api.namespace, annotations: { [TAKEN_AT_ANNOTATION]: now } },
        spec: { ...specOf(record), createdAt: now },
      };
      const created = await createObject(api, PLURAL, body);
      if (created.kind === 'created') return heldOutcome('created', name, created.object);
      const existing = await getObject(api, PLURAL, name);
      if (existing === undefined) return CONFLICT; // deleted between our create and get: create again
      if (!isOwnedBy(existing, record)) return { kind: 'taken' };
      const adopted = await replaceObject(api, PLURAL, name, taken(withSpec(existing, record)));
      if (adopted.kind !== 'patched') return CONFLICT;
      return heldOutcome('adopted', name, adopted.object);
    },
    { attempts: ADOPT_ATTEMPTS, baseMs: 5, capMs: 50 },
  );
  // A reservation that keeps changing under us is as good as someone else's.
  return outcome.kind === 'done' ? outcome.value : { kind: 'taken' };
}

function heldOutcome(kind: 'created' | 'adopted', name: string, object: unknown): ReserveOutcome {
  const version = versionOf(object);
  if (version === undefined)
    throw new TypeError(`OverlappingRangeIPReservation ${name}: the API returned no uid or resourceVersion`);
  return { kind, held: { name, version, ...(isRecord(object) ? { object } : {}) } };
}

/** The existing object with its spec naming `record` (keeps fields we do not model, and the original createdAt). */
function withSpec(existing: unknown, record: AllocationRecord): Record<string, unknown> {
  const object = isRecord(existing) ? existing : {};
  const spec = isRecord(object['spec']) ? object['spec'] : {};
  return { ...object, spec: { ...spec, ...specOf(record) } };
}

/**
 * The object stamped as taken now. The stamp also changes an adoption that rewrites nothing else (a retry of the same
 * container), so that a delete judged on the version before it fails its precondition.
 */
function taken(object: Record<string, unknown>): Record<string, unknown> {
  const metadata = isRecord(object['metadata']) ? object['metadata'] : {};
  const annotations = isRecord(metadata['annotations']) ? metadata['annotations'] : {};
  return {
    ...object,
    metadata: { ...metadata, annotations: { ...annotations, [TAKEN_AT_ANNOTATION]: new Date().toISOString() } },
  };
}

interface OwnerOptions {
  /** A re-created pod may take over its predecessor's record: the pod UID is not compared. */
  readonly anyUid?: boolean;
  /**
   * The address's pool record names `record` (or named it, for a release): a reservation that names no interface is
   * then taken as this attachment's. Without that, it could be another interface's of the same pod (all interfaces of
   * a sandbox share its container id), holding the address in an overlapping range.
   */
  readonly heldFor?: boolean;
}

/**
 * Same pod and interface (Whereabouts compares podref only), or same container and interface. A reservation without
 * ifname (older Whereabouts) counts only with `heldFor`. A pod re-created under the same name is another pod: the
 * pod UIDs must match, or a new pod would adopt the address its predecessor still holds in an overlapping range;
 * a reservation without one (Whereabouts writes none) cannot tell which pod of the name it protects, so it counts
 * for a pod whose UID is known only with `heldFor`.
 */
function isOwnedBy(object: unknown, record: AllocationRecord, options: OwnerOptions = {}): boolean {
  const spec = isRecord(object) ? object['spec'] : undefined;
  if (!isRecord(spec)) return false;
  const { podref, ifname, containerid, podUid } = spec;
  const sameIf = typeof ifname === 'string' && ifname !== '' ? ifname === record.ifname : options.heldFor === true;
  if (record.podRef === '') return containerid === record.containerId && sameIf;
  const samePod =
    options.anyUid === true ||
    record.podUid === undefined ||
    (typeof podUid === 'string' && podUid !== '' ? podUid === record.podUid : options.heldFor === true);
  return podref === record.podRef && sameIf && samePod;
}

/** Exactly this attachment: owner and container (a reservation written without a container id counts by owner). */
function namesAttachment(object: unknown, record: AllocationRecord, options: OwnerOptions = {}): boolean {
  if (!isOwnedBy(object, record, options)) return false;
  const spec = isRecord(object) && isRecord(object['spec']) ? object['spec'] : {};
  const containerid = spec['containerid'];
  return containerid === undefined || containerid === '' || containerid === record.containerId;
}

/** Deletes a reservation this update created and did not commit, if it is still the version it created. */
export async function dropCreated(api: ApiClient, held: Held, options: { timeoutMs?: number } = {}): Promise<void> {
  await deleteExactly(api, PLURAL, held.name, held.version, options);
}

/**
 * Hands a reservation this update created to the attachment the pool now holds its address for (another writer,
 * e.g. Whereabouts, committed it first and creates its reservation only after its pool write). Deleting it would
 * leave that committed address unreserved; conditional on the version created, so nothing newer is overwritten.
 */
export async function handOver(api: ApiClient, held: Held, holder: AllocationRecord): Promise<void> {
  const existing = await getObject(api, PLURAL, held.name);
  const version = versionOf(existing);
  if (
    version === undefined ||
    version.uid !== held.version.uid ||
    version.resourceVersion !== held.version.resourceVersion
  )
    return;
  if (namesAttachment(existing, holder, { heldFor: true })) return;
  await replaceObject(api, PLURAL, held.name, withSpec(existing, holder));
}

/**
 * After a pool write released `record`'s address: deletes the reservation if it still names that attachment, on
 * the version read. 'kept' when it names someone else (re-adopted meanwhile, or an overlapping range's holder), or
 * kept changing under three reads.
 */
export async function releaseReservation(
  api: ApiClient,
  pool: PoolRef,
  ip: IPAddress,
  record: AllocationRecord,
): Promise<'deleted' | 'kept' | 'gone'> {
  const name = reservationNameOf(pool, ip);
  // A conflict means it changed since it was read: read again and judge what it names now (a few times at most).
  for (let attempt = 0; ; attempt++) {
    const existing = await getObject(api, PLURAL, name);
    const version = versionOf(existing);
    if (existing === undefined || version === undefined) return 'gone';
    if (!namesAttachment(existing, record, { heldFor: true })) return 'kept';
    const result = await deleteExactly(api, PLURAL, name, version);
    if (result !== 'conflict') return result;
    if (attempt === 2) return 'kept';
  }
}

/**
 * A pool record rewritten (an idempotent re-ADD's new container, a warm record renamed to its pod or back): the
 * reservation follows, if it names the new record's owner or the owner of the record this write replaced.
 */
export async function followRecord(
  api: ApiClient,
  pool: PoolRef,
  ip: IPAddress,
  record: AllocationRecord,
  options: {
    readonly mayCreate?: () => Promise<boolean>;
    readonly previous?: AllocationRecord;
    /**
     * The reservation as this host wrote it for `previous` (a node agent's warm claim): rewritten at that exact
     * version without reading it first; read as usual when it moved on.
     */
    readonly known?: Held;
  } = {},
): Promise<'updated' | 'unchanged' | 'repaired'> {
  const name = reservationNameOf(pool, ip);
  const known = options.known;
  if (known?.object !== undefined && known.name === name && options.previous !== undefined) {
    if (isOwnedBy(known.object, options.previous, { anyUid: true, heldFor: true })) {
      const result = await replaceObject(api, PLURAL, name, withSpec(known.object, record));
      if (result.kind === 'patched') return 'updated';
    }
  }
  // A reservation that changed between its read and the update is read again: a follow given up on a conflict
  // would leave it naming what the pool no longer holds there.
  const outcome = await retryOnConflict<'updated' | 'unchanged' | 'repaired'>(
    async () => {
      const existing = await getObject(api, PLURAL, name);
      if (existing === undefined) {
        // The pool holds the address without its reservation (an earlier crash, or a writer that does not reserve).
        // While Whereabouts writes and the Lease is not ours, the controller repairs it later instead.
        if (options.mayCreate !== undefined && !(await options.mayCreate())) return 'unchanged';
        const repaired = await reserve(api, pool, ip, record);
        return repaired.kind === 'taken' ? 'unchanged' : 'repaired';
      }
      // The pool record of this address is this pod's now (a re-created pod takes over its predecessor's record),
      // or was the attachment's the reservation names until this write.
      const previous = options.previous;
      if (
        !isOwnedBy(existing, record, { anyUid: true, heldFor: true }) &&
        !(previous !== undefined && isOwnedBy(existing, previous, { anyUid: true, heldFor: true }))
      )
        return 'unchanged';
      const spec = isRecord(existing) && isRecord(existing['spec']) ? existing['spec'] : {};
      const want = specOf(record);
      if (Object.entries(want).every(([key, value]) => spec[key] === value)) return 'unchanged';
      const result = await replaceObject(api, PLURAL, name, withSpec(existing, record));
      return result.kind === 'patched' ? 'updated' : CONFLICT;
    },
    { attempts: ADOPT_ATTEMPTS, baseMs: 5, capMs: 50 },
  );
  if (outcome.kind !== 'done')
    throw new Error(`OverlappingRangeIPReservation ${name} kept changing while its record's owner was written to it`);
  return outcome.value;
}

/** How the reservation a committed claim relied on was found after the pool write (confirmReservation). */
export type Confirmed = 'intact' | 'restored' | 'taken';

/**
 * After the pool write that committed `record`'s claim: the reservation this commit created or adopted for it, as it
 * is now (a quorum read). 'intact': the version left, or a later one still naming this attachment. 'restored': it was
 * gone (Whereabouts' DEL deletes reservations by name, unconditionally; a controller judged it): the pool is the
 * truth once committed, so it is created again. 'taken': it names another attachment now, which may hold the
 * address in an overlapping range.
 */
export async function confirmReservation(
  api: ApiClient,
  pool: PoolRef,
  ip: IPAddress,
  held: Held,
  record: AllocationRecord,
): Promise<Confirmed> {
  const existing = await getObject(api, PLURAL, held.name);
  const version = versionOf(existing);
  if (version?.uid === held.version.uid && version.resourceVersion === held.version.resourceVersion) return 'intact';
  if (existing !== undefined) return namesAttachment(existing, record) ? 'intact' : 'taken';
  const again = await reserve(api, pool, ip, record);
  return again.kind === 'taken' ? 'taken' : 'restored';
}
