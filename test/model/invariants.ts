// What must hold after every step, read straight from the API (no cache, no faults), against the reference model:
//   duplicate       no address in two allocation records (all pools of the namespace: A/B overlap, slices may); but
//                   in two overlapping pools once Whereabouts' reconciler deleted the address's live reservation
//   reservation     every record of an overlapping-ranges pool has its reservation, naming the same pod; except a
//                   record a Whereabouts ADD left between its two writes (it writes the pool first, then creates the
//                   reservation): when its process died there, or its create failed, until the record goes; a
//                   bound record's may name an earlier pod of its binding (sticky.ts earlierHolder)
//   deleted         no record names an attachment a hereabouts DEL answered with success (but a write still
//                   pending in its node's journal, which the node's agent, or its next one, makes)
//   lost-address    a live, non-terminal pod keeps the address each attachment of its current sandbox was given, in
//                   its container's and interface's name
//   slice           no node slice is assigned over address space a non-empty slice pool of another node covers
//   lock            a pool lock is never taken from a holder that still runs (seen by the model during a stall)
//   sticky          sticky addresses keep to their bindings (sticky.ts); a VM's virt-launcher pod whose record a
//                   migration's other pod took over keeps its address through it (lost-address)
// and, once faults stop and every grace period has passed, after one controller pass:
//   leak            no record without a live sandbox behind it (but what a Whereabouts DEL left of a pod that
//                   still exists, and a bound record whose binding holds), no reservation without its record
//   slicing         the sliced network follows one of its NADs, and a live node without a slice has none free
import { parseIP } from '../../src/ip/address.ts';
import type { HandOut } from '../../src/store/kubernetes/warm/journal.ts';
import type { AllocationRecord } from '../../src/store/store.ts';
import { warmHolder } from '../../src/store/warm-record.ts';
import { claimHolder } from '../../src/store/claim-record.ts';
import { CLAIMS_NETWORK } from '../../src/config/names.ts';
import { crashKey, attached, windowKey, type Attachment } from './attach.ts';
import type { Cluster, PodModel } from './cluster.ts';
import { checkSliceSpace } from './slice-invariants.ts';
import { readState, type Held } from './state.ts';
import { NETS } from './steps.ts';

export interface Violation {
  readonly invariant:
    | 'duplicate'
    | 'reservation'
    | 'lost-address'
    | 'leak'
    | 'deleted'
    | 'kubelet'
    | 'slice'
    | 'lock'
    | 'slicing'
    | 'claim'
    | 'sticky';
  readonly message: string;
}

/** Pods whose address must not go: they exist, run (even while terminating or disrupted), and their ADD succeeded. */
export function keepsAddress(pod: PodModel): boolean {
  if (!pod.exists || pod.phase === 'Succeeded' || pod.phase === 'Failed') return false;
  // The taint manager deletes pods of an unreachable node: Whereabouts' (and our) one disruption that releases.
  if (pod.disruption === 'DeletionByTaintManager') return false;
  return pod.sandbox !== undefined && attached(pod.sandbox);
}

/** A held record as the store reads it. */
const recordOfHeld = (h: Held): AllocationRecord => ({
  containerId: h.containerId,
  ifname: h.ifname,
  podRef: h.podRef,
});

/** The record of this attachment (a legacy one, as Whereabouts before 0.7 wrote it, has no ifname). */
function isRecordOf(h: Held, podRef: string, containerId: string, a: Attachment): boolean {
  return (
    h.ip === a.address &&
    h.net === a.net &&
    h.podRef === podRef &&
    h.containerId === containerId &&
    (h.ifname === a.ifname || (a.legacy && h.ifname === ''))
  );
}

export async function checkStep(cluster: Cluster): Promise<Violation[]> {
  const { held, reservations } = await readState(cluster);
  const out: Violation[] = cluster.observed.splice(0);
  const byIp = new Map<string, Held[]>();
  for (const h of held) byIp.set(h.ip, [...(byIp.get(h.ip) ?? []), h]);
  for (const [ip, list] of byIp) {
    // Whereabouts' reconciler deleted the reservation of a live record (by a snapshot older than its ADD): an ADD in
    // an overlapping range then finds the address unreserved, as a Whereabouts ADD would. Not covered
    // (docs/safety.md): the reconciler goes before a switch.
    if (list.length > 1 && new Set(list.map((h) => h.pool)).size === list.length && cluster.reconcilerDeleted.has(ip))
      cluster.reconcilerShared.add(ip);
    if (cluster.reconcilerShared.has(ip)) continue;
    if (list.length > 1)
      out.push({
        invariant: 'duplicate',
        message: `${ip} is in ${list.length} records: ${list.map((h) => `${h.pool} -> ${h.podRef} ${h.containerId}`).join('; ')}`,
      });
  }
  const journals = new Map<string, HandOut[]>();
  const pendingOf = (short: string): HandOut[] => {
    let list = journals.get(short);
    if (list === undefined) journals.set(short, (list = cluster.agents ? cluster.pendingHandOuts(short) : []));
    return list;
  };
  /** The node's journal holds a hand-out of `ip` in `pool` to this attachment that its pool does not show settled. */
  const journalHandsOut = (short: string, pool: string, ip: string, containerId: string, ifname: string): boolean =>
    pendingOf(short).some(
      (e) =>
        e.op === 'handed-out' &&
        e.pool === `${cluster.ns}/${pool}` &&
        e.address === String(parseIP(ip).value) &&
        e.attachment.containerId === containerId &&
        e.attachment.ifname === ifname,
    );
  // A hand-out its node's journal still holds (its rename landed, its agent died before the reservation followed),
  // the record maybe taken over since by a re-ADD of the same pod and interface (another container): the next agent
  // of the node brings the reservation in step before anything else on that pool (group-plan.ts, landed).
  const pendingHandOut = (h: Held): boolean => {
    const pod = [...cluster.pods.values()].find((p) => cluster.podRef(p.name) === h.podRef);
    return (
      pod !== undefined &&
      pendingOf(pod.node).some(
        (e) =>
          e.op === 'handed-out' &&
          e.pool === `${cluster.ns}/${h.pool}` &&
          e.address === String(parseIP(h.ip).value) &&
          e.attachment.podRef === h.podRef &&
          e.attachment.ifname === h.ifname,
      )
    );
  };
  for (const h of held) {
    if (h.net === undefined || !NETS[h.net].overlapping || cluster.reconcilerShared.has(h.ip)) continue;
    if (cluster.whereaboutsWindow.has(windowKey(h.pool, h.ip, h.containerId, h.ifname))) continue;
    const owner = reservations.get(h.ip);
    if (owner === undefined && cluster.crashWindow.has(crashKey(h.containerId, h.ifname))) continue;
    if (owner !== undefined) cluster.reconcilerDeleted.delete(h.ip);
    else if (cluster.reconcilerDeleted.has(h.ip)) continue;
    if (owner === undefined)
      out.push({
        invariant: 'reservation',
        message: `${h.ip} is held in ${h.pool} by ${h.podRef} (${h.containerId}) but has no OverlappingRangeIPReservation`,
      });
    else if (owner !== h.podRef && !(owner === '' && pendingHandOut(h)) && !cluster.sticky.earlierHolder(owner, h))
      out.push({
        invariant: 'reservation',
        message: `${h.ip} is held in ${h.pool} by ${h.podRef} but its reservation names ${owner}`,
      });
  }
  // A DEL that succeeded leaves nothing of its attachment, once its node's writes are done (issue 42).
  const pendingAt = (ip: string): boolean =>
    [...cluster.nodes.keys()].some((short) => pendingOf(short).some((e) => e.address === String(parseIP(ip).value)));
  // (A bound record stays through its pod's DEL: sticky.ts judges it.) A reservation a DEL could not delete (its
  // process killed after the pool write, a failed ADD's create that landed unanswered) goes with the controller's
  // reservation pass, which checkLeaks proves runs.
  for (const h of held)
    if (h.binding === '' && cluster.deleted.has(crashKey(h.containerId, h.ifname)) && !pendingAt(h.ip))
      out.push({
        invariant: 'deleted',
        message: `${h.ip} is held in ${h.pool} by ${h.podRef} (${h.containerId} ${h.ifname}), whose DEL succeeded`,
      });
  for (const pod of cluster.pods.values()) {
    if (!keepsAddress(pod)) continue;
    const sandbox = pod.sandbox!;
    const ref = cluster.podRef(pod.name);
    for (const a of sandbox.attachments) {
      if (held.some((h) => isRecordOf(h, ref, sandbox.id, a))) continue;
      // A sticky address: its binding's record, whichever of its pods holds it now (a migration's other pod).
      if (cluster.sticky.heldForBinding(sandbox, a.ifname, a.address, held)) continue;
      // Handed out from its node's warm set, its rename not written yet: the pool holds the node's warm record and
      // the node's journal names this attachment for it (what the node's next agent writes first).
      const node = cluster.nodes.get(pod.node)?.name;
      const warmHeld = held.find((h) => h.ip === a.address && h.net === a.net && warmHolder(recordOfHeld(h)) === node);
      if (warmHeld !== undefined && journalHandsOut(pod.node, warmHeld.pool, warmHeld.ip, sandbox.id, a.ifname))
        continue;
      const records = held.filter((h) => h.ip === a.address && h.net === a.net);
      const what =
        records.length === 0
          ? 'no record holds it'
          : `it is held by ${records.map((h) => `${h.podRef} ${h.containerId} (${h.ifname || 'no ifname'}) in ${h.pool}`).join('; ')}`;
      const state = `${pod.phase}${pod.terminating ? ', terminating' : ''}${pod.disruption === undefined ? '' : `, DisruptionTarget ${pod.disruption}`}`;
      out.push({
        invariant: 'lost-address',
        message: `pod ${pod.name} (${state}, node ${pod.node}, ${a.ifname} on net ${a.net}) was given ${a.address} for ${sandbox.id}, but ${what}`,
      });
    }
  }
  out.push(...(await checkSliceSpace(cluster, held)));
  out.push(...(await cluster.claims.check('step')));
  out.push(...cluster.sticky.check(held));
  return out;
}

/** After quiesce(): nothing is held that no live sandbox explains, and no reservation outlives its record. */
export async function checkLeaks(cluster: Cluster): Promise<Violation[]> {
  const { held, reservations } = await readState(cluster);
  const out: Violation[] = [];
  for (const h of held) {
    // A claim's record is the claims model's to judge (claims.ts), a bound one the sticky model's (sticky.ts).
    if (claimHolder(recordOfHeld(h)) !== undefined || h.binding !== '') continue;
    // A warm record is its node's while the node exists (the controller releases the others: node-gone).
    const holder = warmHolder(recordOfHeld(h));
    if (holder !== undefined) {
      if ([...cluster.nodes.values()].some((n) => n.up && n.name === holder)) continue;
      out.push({
        invariant: 'leak',
        message: `${h.ip} in ${h.pool}, a warm record of ${holder}, survived a controller pass although its node is gone`,
      });
      continue;
    }
    const pod = [...cluster.pods.values()].find((p) => cluster.podRef(p.name) === h.podRef);
    if (pod?.exists === true && pod.disruption === 'DeletionByTaintManager') continue; // either outcome is allowed
    // Whereabouts' DEL answers success whatever it found (in node-slice mode it looks only in the node's current
    // slice): its leftovers stay while their pod lives, and go once it is gone.
    if (pod?.exists === true && cluster.whereaboutsDeleted.has(h.containerId)) continue;
    // A record without a pod UID, of a name whose pod now is another one, still Pending: with no reservation to date
    // it, the controller cannot tell it from the new pod's until that pod runs or goes (docs/safety.md).
    if (pod?.exists === true && pod.phase === 'Pending' && h.podUid === '' && reservations.get(h.ip) !== h.podRef)
      continue;
    const explained =
      pod !== undefined &&
      keepsAddress(pod) &&
      pod.sandbox!.attachments.some((a) => isRecordOf(h, h.podRef, pod.sandbox!.id, a));
    if (explained) continue;
    const why =
      pod === undefined || !pod.exists
        ? 'its pod is gone'
        : pod.phase === 'Succeeded' || pod.phase === 'Failed'
          ? `its pod is ${pod.phase}`
          : `its pod's sandbox is ${pod.sandbox?.id ?? 'gone'}`;
    out.push({
      invariant: 'leak',
      message: `${h.ip} in ${h.pool} (${h.podRef} ${h.containerId}) survived a controller pass although ${why}`,
    });
  }
  for (const [name, podRef] of reservations) {
    // An AddressPool's own reservations: released with their records (claims.ts judges what the records hold).
    if (name.startsWith(`${CLAIMS_NETWORK}-`)) continue;
    const record = held.find(
      (h) =>
        h.ip === name &&
        h.net !== undefined &&
        NETS[h.net].overlapping &&
        (h.podRef === podRef || cluster.sticky.earlierHolder(podRef, h)),
    );
    if (record === undefined)
      out.push({
        invariant: 'leak',
        message: `reservation ${name} of ${podRef} survived a controller pass without its allocation`,
      });
  }
  out.push(...(await cluster.claims.check('quiesce')));
  out.push(...cluster.sticky.leaks(held));
  return out;
}
