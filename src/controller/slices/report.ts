// What a slice pass tells the operator: the objects its events are about, and the logs, events and report entries
// of what a written NodeSlicePool changed.
import { formatCidr } from '../../ip/cidr.ts';
import type { Log } from '../../log/json-log.ts';
import { API_VERSION } from '../../store/kubernetes/objects.ts';
import type { EventRecorder, InvolvedObject } from '../runtime/events.ts';
import type { NadView } from '../runtime/views.ts';
import { NAD_API_VERSION, noFreeSliceMessage, type SliceChoice } from './decide.ts';
import type { SliceSpec } from './spec.ts';

export interface SliceReport {
  readonly assigned: string[];
  readonly freed: string[];
  /** network -> nodes without a slice. */
  readonly starved: Map<string, string[]>;
  readonly conflicts: string[];
}

export function nadRef(source: string, nads: ReadonlyMap<string, NadView>): InvolvedObject {
  const [namespace = '', name = ''] = source.split('/', 2);
  return {
    apiVersion: NAD_API_VERSION,
    kind: 'NetworkAttachmentDefinition',
    namespace,
    name,
    uid: nads.get(source)?.uid ?? '',
  };
}

export function poolRef(view: { name: string; namespace: string; uid: string }): InvolvedObject {
  return { apiVersion: API_VERSION, kind: 'NodeSlicePool', name: view.name, namespace: view.namespace, uid: view.uid };
}

/** Logs, events and the report of what a written NodeSlicePool changed. */
export async function reportChanges(
  spec: SliceSpec,
  choice: SliceChoice,
  out: { ref: InvolvedObject; log: Log; events: EventRecorder; report: SliceReport },
): Promise<void> {
  const { ref, log, events, report } = out;
  const network = { network: spec.network };
  const lifecycle = choice.lifecycle;
  if (choice.resliced) {
    const draining = lifecycle?.draining.length ?? 0;
    await events.emit(
      ref,
      'Warning',
      'Resliced',
      `range or slice size changed: /${spec.sliceSize} slices of ${formatCidr(spec.range)} assigned anew; ${draining} old slice(s) drain until their pools are empty`,
    );
  }
  for (const r of choice.rebuilt?.rebuilt ?? []) {
    log.info(`node ${r.nodeName} keeps slice ${r.sliceRange} of ${spec.network}: its pool is there`, network);
    await events.emit(ref, 'Normal', 'SliceRebuilt', `${r.nodeName} ${r.sliceRange}: given back from its IPPool`);
  }
  for (const d of [...(choice.rebuilt?.found ?? []), ...(lifecycle?.drained ?? [])]) {
    log.info(
      `slice ${d.sliceRange} of node ${d.nodeName} in ${spec.network} drains (${d.reason}): nothing more is allocated from it`,
      network,
    );
    await events.emit(
      ref,
      'Normal',
      'SliceDraining',
      `${d.nodeName} ${d.sliceRange} drains (${d.reason}): released once its pool is empty`,
    );
  }
  for (const d of lifecycle?.restored ?? []) {
    log.info(`node ${d.nodeName} is back: it keeps slice ${d.sliceRange} of ${spec.network}`, network);
    await events.emit(ref, 'Normal', 'SliceRestored', `${d.nodeName} ${d.sliceRange}: the node is back`);
  }
  const decision = choice.decision;
  for (const a of decision?.assigned ?? []) {
    report.assigned.push(`${spec.network}: ${a}`);
    log.info(`assigned slice ${a} of ${spec.network}`, network);
    await events.emit(ref, 'Normal', 'SliceAssigned', `assigned ${a}`);
  }
  for (const d of lifecycle?.released ?? []) {
    const slice = `${d.nodeName} ${d.sliceRange}`;
    report.freed.push(`${spec.network}: ${slice}`);
    const left = d.reason === 'NodeLeft';
    const why = left ? 'the node left' : d.reason === 'Resliced' ? 'the network was resliced' : `it was ${d.reason}`;
    log.info(`${left ? 'freed' : 'released'} slice ${slice} of ${spec.network}: ${why} and its pool is empty`, network);
    await events.emit(
      ref,
      'Normal',
      left ? 'SliceFreed' : 'SliceReleased',
      `${left ? 'freed' : 'released'} ${slice}: ${why} and its pool is empty`,
    );
  }
  const starved = decision?.starved ?? [];
  if (starved.length > 0) {
    report.starved.set(spec.network, starved);
    const message = noFreeSliceMessage(starved, spec);
    log.warning(`NodeSlicePool ${spec.network}: ${message}`, network);
    await events.emit(ref, 'Warning', 'NoFreeSlice', message);
  }
}
