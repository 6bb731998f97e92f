// The node agent's grouped write on one pool (DESIGN §11), as a plan: pure, so it runs again on every fresh view the
// commit reads. In one IPPool write it renames every warm address handed out since the last write to its pod,
// releases every address a DEL answered from the agent released, returns warm addresses over the target, and claims
// what the set is short of. It only ever rewrites or releases records that name this node's agent or the attachment its own
// journal names, so it cannot take over what another writer holds. It gives back only what the agent took out of its set
// (`withdrawn`) and this node's warm records of other settings (no set of this agent holds them), never a record the
// agent may have handed out since it planned; and a set the agent has to derive anew (`adopt`) is taken by a write, so
// that no older write of the pool (a previous agent's give-back still in flight) can land after it.
import type { RangeConfig } from '../../../config/types.ts';
import type { AllocationRecord, Allocations, Plan, PlanHints, PoolChange } from '../../store.ts';
import { isWarmOf, warmId, warmRecord } from '../../warm-record.ts';

/** What the agent asked of an address and the pool does not show yet (journal.ts). */
export type PendingWrite =
  | { readonly kind: 'name'; readonly record: AllocationRecord }
  | { readonly kind: 'warm'; readonly attachment: AllocationRecord };

/** How the agent picks a free address and counts free ones: the allocator's, passed in from above the store. */
export interface WarmPolicy {
  choose(range: RangeConfig, current: Allocations, refused: ReadonlySet<bigint>, hints: PlanHints): bigint | undefined;
  /** Free addresses of the range (capped: a /64 has more than a Number holds). */
  free(range: RangeConfig, current: Allocations): number;
}

export interface GroupInput {
  readonly node: string;
  /** The pool's name and the settings the agent claims with: in the warm records' id (warm-record.ts). */
  readonly pool: string;
  readonly settings: string;
  readonly range: RangeConfig;
  readonly pending: ReadonlyMap<bigint, PendingWrite>;
  /** Warm addresses the agent took out of its set to give back (it does not hand these out meanwhile). */
  readonly withdrawn: ReadonlySet<bigint>;
  /** The agent derives its set anew from this view: its records are taken again (their time, and a write). */
  readonly adopt: boolean;
  /** Warm addresses to claim (as many as are free, up to this). */
  readonly claim: number;
  readonly policy: WarmPolicy;
  readonly createdAt: string;
}

export interface GroupOutcome {
  /** Pending writes done once this change is written (the lost ones included). */
  readonly settled: readonly bigint[];
  /** Hand-outs whose warm record was gone or someone else's: the pool does not hold them for their pod. */
  readonly lost: ReadonlyArray<{ readonly address: bigint; readonly holder: AllocationRecord | undefined }>;
  readonly released: readonly bigint[];
  readonly claimed: readonly bigint[];
  /**
   * Pending writes the pool held already (an earlier write landed; its agent died before it settled): their
   * reservations may still name what the record named before, and are brought in step (`previous` -> `record`).
   */
  readonly landed: ReadonlyArray<{
    readonly address: bigint;
    readonly record: AllocationRecord;
    readonly previous: AllocationRecord;
  }>;
  /**
   * DELs answered from the set whose record the pool no longer holds for them (an earlier write released it, and its
   * answer was lost or its agent died, or someone else did): the reservation may still name the attachment.
   */
  readonly unreserved: ReadonlyArray<{ readonly address: bigint; readonly attachment: AllocationRecord }>;
  /** The node's warm records once this change is written (pending ones included). */
  readonly warm: ReadonlySet<bigint>;
  /** Free addresses once written, warm ones not counted. */
  readonly free: number;
  /** A Whereabouts plugin writes this pool (PlanHints.highestFirst): no warm set here. */
  readonly mixed: boolean;
}

/** The record of the same CNI attachment (container id and interface). */
const isSameAttachmentRecord = (a: AllocationRecord, b: AllocationRecord): boolean =>
  a.containerId === b.containerId && a.ifname === b.ifname;

/**
 * `now` is what an idempotent re-ADD of `handedOut`'s pod and interface wrote over it: the same pod (a re-created
 * pod of the name takes over its predecessor's record too) and interface, another container.
 */
const isReAddOf = (now: AllocationRecord, handedOut: AllocationRecord): boolean =>
  handedOut.podRef !== '' && now.podRef === handedOut.podRef && now.ifname === handedOut.ifname;

export function groupPlan(input: GroupInput): Plan<GroupOutcome> {
  const { node, pool, range, pending, policy } = input;
  const ownId = warmId(node, pool, input.settings);
  return (current, refused, hints) => {
    const nodeWarm = (record: AllocationRecord | undefined): boolean => isWarmOf(record, node, pool);
    const mine = (record: AllocationRecord | undefined): boolean => nodeWarm(record) && record?.containerId === ownId;
    const warmBack = warmRecord(node, pool, input.settings, input.createdAt);
    const update: Array<{ address: bigint; record: AllocationRecord }> = [];
    const settled: bigint[] = [];
    const lost: Array<{ address: bigint; holder: AllocationRecord | undefined }> = [];
    const landed: Array<{ address: bigint; record: AllocationRecord; previous: AllocationRecord }> = [];
    const releasedByDel: bigint[] = [];
    const unreserved: Array<{ address: bigint; attachment: AllocationRecord }> = [];
    for (const [address, write] of pending) {
      const now = current.get(address);
      if (write.kind === 'name') {
        if (nodeWarm(now)) update.push({ address, record: write.record });
        // Renamed already (an earlier write landed; its agent died, or the write failed, before the reservation
        // followed), and maybe taken over since by a re-ADD of the same pod and interface (a new sandbox, on the
        // synchronous path: its follow finds the reservation naming the warm record, not the record it rewrote).
        // Either way the reservation may still name the warm record: it follows the record the pool holds now.
        else if (now !== undefined && (isSameAttachmentRecord(now, write.record) || isReAddOf(now, write.record)))
          landed.push({ address, record: now, previous: warmBack });
        else lost.push({ address, holder: now });
      } else if (now !== undefined && now.containerId === write.attachment.containerId) {
        // By the sandbox alone: the DEL was answered from the node's last view, and the record at this address may
        // have been rewritten since without an interface (as Whereabouts before 0.7 wrote them); a new sandbox of the
        // pod that took the address over has another container id.
        // Released, not turned back into a warm record: a warm address is only ever one whose reservation the
        // agent's own claim took (a reservation still naming the pod could be adopted by it in an overlapping range).
        releasedByDel.push(address);
      } else unreserved.push({ address, attachment: write.attachment }); // nothing to write; its reservation may stay
      settled.push(address); // once written, or lost: the agent deals with a lost one (warm-sets.ts)
    }
    const mixed = hints?.highestFirst === true;
    const release = [...releasedByDel];
    const adopted: bigint[] = [];
    for (const [address, record] of current) {
      if (pending.has(address) || !nodeWarm(record)) continue;
      if (!mine(record) || input.withdrawn.has(address)) release.push(address);
      else if (input.adopt) adopted.push(address);
    }
    for (const address of adopted) update.push({ address, record: warmBack });
    const claimed: bigint[] = [];
    if (!mixed && input.claim > 0) {
      // Each choice on the pool as the ones before it leave it (the commit's reserved addresses are preferred).
      const taken = new Map(current);
      for (let i = 0; i < input.claim; i++) {
        const address = policy.choose(range, taken, refused, hints ?? { reserved: new Set() });
        if (address === undefined) break;
        claimed.push(address);
        taken.set(address, warmBack);
      }
    }
    const [first, ...more] = claimed.map((address) => ({ address, record: warmBack }));
    const change: PoolChange = {
      ...(update.length === 0 ? {} : { update }),
      ...(release.length === 0 ? {} : { release }),
      ...(first === undefined ? {} : { claim: first }),
      ...(more.length === 0 ? {} : { moreClaims: more }),
    };
    const warm = new Set<bigint>();
    for (const [address, record] of current) if (mine(record)) warm.add(address);
    for (const { address, record } of update) {
      if (record.containerId === ownId) warm.add(address);
      else warm.delete(address); // renamed to its pod
    }
    for (const address of release) warm.delete(address);
    for (const address of claimed) warm.add(address);
    const free = Math.max(0, policy.free(range, current) - claimed.length + release.length);
    const empty = update.length === 0 && release.length === 0 && claimed.length === 0;
    return {
      change: empty ? null : change,
      value: { settled, lost, landed, unreserved, released: release, claimed, warm, free, mixed },
    };
  };
}
