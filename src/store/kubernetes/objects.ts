// Where whereabouts.cni.cncf.io/v1alpha1 objects live and how to read one: what the controller, the operator
// commands and the store share. Writes are not here: they are private to this folder (resources.ts), and reach
// the rest of the code only through the store's write path (writer.ts, commit.ts).
import type { ApiClient } from '../../kube/api.ts';
import { ApiStatusError } from '../../kube/errors.ts';
import { isRecord } from '../../record.ts';

export const GROUP = 'whereabouts.cni.cncf.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export type Plural = 'ippools' | 'overlappingrangeipreservations' | 'nodeslicepools';

/**
 * On an OverlappingRangeIPReservation: when a writer last took it (created it, or adopted it for a retry of its
 * attachment), RFC 3339. The controller's grace runs from the latest of this, the object's creation and its last
 * update (DESIGN §9: in-flight work is visible). An annotation, so that no CRD schema prunes it (Whereabouts' CRD
 * keeps only the spec fields it knows).
 */
export const TAKEN_AT_ANNOTATION = 'hereabouts.cni.cncf.io/taken-at';

/**
 * The Lease on which the controller says whether node agents may use warm sets (DESIGN §11; its annotation says
 * WARM_ALLOWED, or why not): written by the controller, read by the agents (warm/warm-gate.ts).
 */
export const WARM_GATE_LEASE = 'hereabouts-warm-sets';
export const WARM_GATE_ANNOTATION = 'hereabouts.cni.cncf.io/warm-sets';
export const WARM_ALLOWED = 'allowed';

export function objectPath(namespace: string, plural: Plural, name?: string): string {
  const base = `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

export interface GetOptions {
  /**
   * Served from the API server's watch cache, at least as new as this resourceVersion ("0": any version), instead of
   * a quorum read from etcd. Only for reads whose staleness the write path tolerates.
   */
  readonly notOlderThan?: string;
}

/** The object, or undefined when it does not exist. */
export async function getObject(
  api: ApiClient,
  plural: Plural,
  name: string,
  options: GetOptions = {},
): Promise<unknown> {
  const query =
    options.notOlderThan === undefined ? '' : `?resourceVersion=${encodeURIComponent(options.notOlderThan)}`;
  const res = await api.send({ method: 'GET', path: `${objectPath(api.namespace, plural, name)}${query}` });
  if (res.status === 404) return undefined;
  if (res.status < 200 || res.status >= 300) throw new ApiStatusError(`get ${plural}/${name}`, res);
  return res.body;
}

/** metadata.uid and metadata.resourceVersion of an object: what a conditional write or delete is keyed to. */
export interface ObjectVersion {
  readonly uid: string;
  readonly resourceVersion: string;
}

export function versionOf(object: unknown): ObjectVersion | undefined {
  const metadata = isRecord(object) ? object['metadata'] : undefined;
  if (!isRecord(metadata)) return undefined;
  const { uid, resourceVersion } = metadata;
  return typeof uid === 'string' && typeof resourceVersion === 'string' ? { uid, resourceVersion } : undefined;
}
