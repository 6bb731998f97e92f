// `hereabouts release <address> --network N`: a manual release through the one write path. The pool write is
// commitPool's (conditional on the version read; on 409 it reads again and plans again), and the plan removes the
// address only while the pool still holds it for the very attachment judged: an address re-allocated meanwhile is
// never removed. The reservation goes afterwards with the exact-precondition delete, and only once no pool of the
// network holds the address. A live pod's address (Running or Pending, its sandbox not torn down) is refused
// unless --force, and so is a claim's (DESIGN §12) while the claim exists: deleting the claim releases it. An
// address inside a PrefixClaim's block is never released alone. A sticky address (docs/sticky.md) is refused unless
// --force while its binding holds (its StatefulSet or VM, read live, still has it: the controller's rule). A warm
// address (a node agent's warm record, DESIGN §11) is refused, --force or not, unless its node is gone (a 404, read
// live: the controller's rule): the agent hands warm addresses to pods from its own state, without reading the pool,
// so one freed while its node exists (or may: the node could not be read) can be given out twice. The same holds for
// a warm reservation no pool holds: the agent reserves before its pool write claims the address.
import { formatIP, type IPAddress } from '../ip/address.ts';
import { releaseRef, sameRecord } from '../controller/orphans/pool-release.ts';
import { PoolWriter, type CommitLog } from '../store/kubernetes/writer.ts';
import type { ApiClient } from '../kube/api.ts';
import { getObject, versionOf } from '../store/kubernetes/objects.ts';
import { reservationName, reservationNetworkFor } from '../config/names.ts';
import type { AllocationRecord, PoolRef } from '../store/store.ts';
import { EXIT, runSubcommand } from './command.ts';
import { COMMON_FLAGS, COMMON_HELP, commonFlagsOf, connect, toJson } from './connect.ts';
import { UsageError } from './flags.ts';
import { readClaims, readInventory, readNode, readPod, readStickyObjects, type NodeState } from './inventory-read.ts';
import { bindingDetail, type BindingDetail } from './bindings.ts';
import { namespaceOfPodRef } from '../store/sticky-binding.ts';
import {
  claimBlock,
  claimState,
  describeClaim,
  holdingRecord,
  poolsContaining,
  type ClaimState,
  type PodInfo,
  type PoolInfo,
} from './inventory.ts';
import { formatCidr } from '../ip/cidr.ts';
import { claimHolder, type ClaimHolder } from '../store/claim-record.ts';
import { addressArgument } from './ip.ts';
import { warmHolder } from '../store/warm-record.ts';

const usage = `Usage: hereabouts release <address> --network NAME [--force] [flags]
  Releases the address from the pools of the network, through the same conditional write the plugin and the
  controller use, then deletes its OverlappingRangeIPReservation (only the version read, only while it still names
  the released attachment, and only once no pool of the network holds the address). Refuses an address whose pod is
  live (Running or Pending, its sandbox not torn down) unless --force, an address a Cluster API IPAddressClaim or
  a PrefixClaim holds while the claim exists (deleting the claim releases it) unless --force, and a sticky address
  while its StatefulSet or VirtualMachine, read live, still holds its binding unless --force; an address inside a
  PrefixClaim's block is never released alone, nor is a node agent's warm address (or its reservation) while its
  node exists or cannot be read: the agent may hand it to a pod at any moment without reading the pool. The agent
  gives its warm addresses back when it stops, and the controller releases them once the node is gone. An address
  that another writer re-allocates between the read and the write is not released. Exit 0 when released, 1 when
  refused or not held.
  --network NAME      the network_name of the pools ("" for pools named without one); required
  --force             release even when the pod is live (its network breaks), or its claim exists (the claim's
                      IPAddress then names a free address until the controller claims it again), or its binding
                      holds (the replica or VM then gets another address at its next ADD); never a warm address
                      of a node that exists
${COMMON_HELP}`;

export interface ReleaseReport {
  readonly address: string;
  readonly network: string;
  readonly released: ReadonlyArray<{
    readonly pool: string;
    readonly podRef: string;
    readonly containerId: string;
    readonly ifname: string;
  }>;
  /** Pools where the address was not released, and why. */
  readonly skipped: ReadonlyArray<{ readonly pool: string; readonly why: string }>;
  readonly reservation: {
    readonly name: string;
    readonly outcome: 'deleted' | 'kept' | 'gone' | 'still-held';
    readonly why?: string;
  };
  /** Set when nothing was done because a live pod, a claim, a binding or a node's agent holds the address. */
  readonly refused?: string;
}

/** A pod whose network is in use: Running or Pending, not torn down by its kubelet, and the pod the record names. */
export function liveReason(record: AllocationRecord, pod: PodInfo | null): string | undefined {
  if (pod === null) return undefined;
  const { view } = pod;
  if (record.podUid !== undefined && record.podUid !== '' && view.uid !== '' && record.podUid !== view.uid)
    return undefined;
  if (view.phase !== 'Running' && view.phase !== 'Pending') return undefined;
  if (view.sandboxGone) return undefined;
  return `pod ${record.podRef} is ${view.phase}${pod.node === undefined ? '' : ` on ${pod.node}`} with its sandbox present`;
}

/** Why a claim's record (DESIGN §12) is not released by hand: its claim holds it (undefined once the claim is gone). */
export function claimReason(holder: ClaimHolder, state: ClaimState): string | undefined {
  const what = describeClaim(holder);
  switch (state) {
    case 'gone':
      return undefined;
    case 'deleting':
      return `${what} holds it and is being deleted: its finalizer releases the address`;
    case 'unknown':
      return `${what} holds it (the claim could not be read): delete the claim to release its address`;
    case 'present':
      return `${what} holds it: delete the claim to release its address`;
  }
}

/** Why a sticky address is not released by hand: its binding holds, or may (undefined once it no longer does). */
export function bindingReason(b: BindingDetail): string | undefined {
  const what = `sticky address bound to ${b.binding} in namespace ${b.namespace}`;
  switch (b.state) {
    case 'released':
      return undefined;
    case 'unknown':
      return `${what}, which may still hold it (${b.seen})`;
    case 'holds':
      return `${what}, which still holds it (${b.seen}): kept until ${b.keptUntil}`;
  }
}

/** What frees a live node's warm addresses, since release does not (the tail of warmReason's refusals). */
const WARM_WAYS =
  "the node's agent gives its warm addresses back itself (beyond its minimum when idle, and all of them when it " +
  "stops on SIGTERM: stop or restart the node's agent to free them), and the controller releases them once the " +
  'node is gone';

function nodeSeen(state: NodeState): string | undefined {
  switch (state.state) {
    case 'gone':
      return undefined;
    case 'present':
      return 'which exists';
    case 'unknown':
      return `which could not be read (${state.why}), so it may exist`;
  }
}

/**
 * Why a warm record (DESIGN §11) is not released by hand, --force or not: while its node exists, the node's agent
 * hands its warm addresses to pods from its own state, without reading the pool, so a freed one can be given out
 * twice. Undefined once the node is gone (a 404): the record is then an orphan, as the controller judges it.
 */
export function warmReason(address: string, pool: string, node: string, state: NodeState): string | undefined {
  const seen = nodeSeen(state);
  if (seen === undefined) return undefined;
  return `${address} in IPPool ${pool} is a warm address of node ${node}, ${seen}: its agent may hand it to a pod at any moment, from its own state and without reading the pool, so releasing it here could give the address out twice; ${WARM_WAYS}`;
}

/**
 * Why a warm reservation that no pool holds is kept while its node exists: the agent reserves an address before its
 * pool write claims it, so it may be a claim in progress. The controller deletes it after its --reservation-grace.
 */
export function warmReservationReason(name: string, node: string, state: NodeState): string | undefined {
  const seen = nodeSeen(state);
  if (seen === undefined) return undefined;
  return `reservation ${name} is a warm reservation of node ${node}, ${seen}: its agent reserves an address before its pool write claims it, so this may be a claim in progress, and deleting it could let an overlapping range give the address out twice; the controller deletes it once no pool has held the address for its --reservation-grace`;
}

export function runRelease(argv: readonly string[]): Promise<number> {
  const command = {
    name: 'release',
    usage,
    flags: { ...COMMON_FLAGS, network: { type: 'string' }, force: { type: 'boolean' } },
    positionals: ['<address>'],
  } as const;
  return runSubcommand(command, argv, async ({ values, positionals }) => {
    const flags = commonFlagsOf(values);
    const ip = addressArgument(positionals[0] ?? '');
    const network = values.network;
    if (network === undefined)
      throw new UsageError(
        '--network is required: the network_name of the pools (--network "" for pools named without one)',
      );
    const api = await connect(flags);
    try {
      const report = await release(api, ip, network, values.force);
      process.stdout.write(flags.output === 'json' ? toJson(report) : formatRelease(report));
      return report.released.length > 0 || report.reservation.outcome === 'deleted' ? EXIT.ok : EXIT.problem;
    } finally {
      api.close();
    }
  });
}

const stderrLog: CommitLog = {
  debug: () => {},
  info: (msg) => process.stderr.write(`hereabouts release: ${msg}\n`),
  warning: (msg) => process.stderr.write(`hereabouts release: warning: ${msg}\n`),
};

/** The address lies inside a PrefixClaim's block (not at its record): why it is not released alone. */
function blockRefusal(pools: readonly PoolInfo[], ip: IPAddress): string | undefined {
  for (const pool of pools) {
    const held = holdingRecord(pool, ip);
    const holder = held === undefined ? undefined : claimHolder(held.record);
    if (held === undefined || holder === undefined || pool.view.range === undefined) continue;
    const block = claimBlock(holder, pool.view.range.family, held.at);
    const first = formatIP({ family: ip.family, value: held.at });
    return `${formatIP(ip)} lies in the block ${block === undefined ? '?' : formatCidr(block)} of ${describeClaim(holder)} in IPPool ${pool.view.name} (recorded at ${first}): a block is released whole, when its claim is deleted`;
  }
  return undefined;
}

function poolRefOf(pool: PoolInfo, network: string): PoolRef {
  const range = pool.view.range;
  if (range === undefined) throw new TypeError(`IPPool ${pool.view.name} has no valid spec.range`); // poolsContaining() keeps none such
  return releaseRef(pool.view.name, range, network);
}

export async function release(api: ApiClient, ip: IPAddress, network: string, force: boolean): Promise<ReleaseReport> {
  const address = formatIP(ip);
  const inv = await readInventory(api, { pods: false });
  const pools = poolsContaining(inv, ip, network);
  const judged = pools.flatMap((pool) => {
    const record = pool.view.allocations.get(ip.value);
    return record === undefined ? [] : [{ pool, record }];
  });
  // The reservations of a claims pool's addresses carry hereabouts-claims, whatever the pool (DESIGN §12).
  const reserved = reservationNetworkFor(network);
  const name = reservationName(ip, reserved === '' ? undefined : reserved);
  const base = { address, network };
  // Liveness first, for every holder: nothing is written when any of them is refused.
  // A warm record's node, read live: only a 404 frees it (the controller's rule), --force or not.
  const nodes = new Map<string, NodeState>();
  const warm: string[] = [];
  for (const { pool, record } of judged) {
    const node = warmHolder(record);
    if (node === undefined) continue;
    let state = nodes.get(node);
    if (state === undefined) nodes.set(node, (state = await readNode(api, node)));
    const why = warmReason(address, pool.view.name, node, state);
    if (why !== undefined) warm.push(why);
  }
  const pods = new Map<string, PodInfo | null>();
  const holders = judged.map((j) => claimHolder(j.record));
  for (const [i, j] of judged.entries())
    if (holders[i] === undefined && warmHolder(j.record) === undefined && !pods.has(j.record.podRef))
      pods.set(j.record.podRef, await readPod(api, j.record.podRef));
  const claimed = holders.filter((h) => h !== undefined);
  const claims = claimed.length === 0 ? {} : await readClaims(api, claimed);
  const bound = judged.flatMap(({ record }) =>
    record.binding === undefined ? [] : [{ namespace: namespaceOfPodRef(record.podRef), binding: record.binding }],
  );
  const sticky = bound.length === 0 ? undefined : await readStickyObjects(api, bound);
  const live = judged
    .flatMap((j, i) => {
      const holder = holders[i];
      if (holder !== undefined) return [claimReason(holder, claimState({ ...inv, claims }, holder))];
      const pod = pods.get(j.record.podRef) ?? null;
      const binding = bindingDetail(j.record, pod === null ? 'gone' : pod.view.phase, sticky);
      return [liveReason(j.record, pod), binding === undefined ? undefined : bindingReason(binding)];
    })
    .filter((r) => r !== undefined);
  const [firstJudged] = judged;
  if (firstJudged === undefined) {
    const inBlock = blockRefusal(pools, ip);
    if (inBlock !== undefined)
      return { ...base, released: [], skipped: [], reservation: { name, outcome: 'kept' }, refused: inBlock };
    return releaseStray(api, base, name, force);
  }
  if (warm.length > 0)
    return {
      ...base,
      released: [],
      skipped: [],
      reservation: { name, outcome: 'kept' },
      refused: `${warm.join('; ')}: --force does not release it`,
    };
  if (live.length > 0 && !force) {
    return {
      ...base,
      released: [],
      skipped: [],
      reservation: { name, outcome: 'kept' },
      refused: `${live.join('; ')}: --force releases it anyway`,
    };
  }
  const released: Array<ReleaseReport['released'][number]> = [];
  const skipped: Array<ReleaseReport['skipped'][number]> = [];
  // Reservations are settled below, once every pool is written (the writer's commit leaves them alone).
  const writer = new PoolWriter(api);
  for (const { pool, record } of judged) {
    const outcome = await writer.commit(
      poolRefOf(pool, reserved),
      (current) => {
        const now = current.get(ip.value);
        if (now === undefined) return { change: null, value: 'already free' };
        if (!sameRecord(now, record))
          return {
            change: null,
            value: `re-allocated meanwhile to ${now.podRef || 'a container'} (container ${now.containerId}): not released`,
          };
        return { change: { release: [ip.value] }, value: 'released' };
      },
      { budgetMs: 10_000, log: stderrLog },
    );
    if (outcome === 'released')
      released.push({
        pool: pool.view.name,
        podRef: record.podRef,
        containerId: record.containerId,
        ifname: record.ifname,
      });
    else skipped.push({ pool: pool.view.name, why: outcome });
  }
  // The reservation stays while any pool of the network still holds the address (read now, not from the listing).
  for (const pool of pools) {
    const state = await writer.read(poolRefOf(pool, reserved), stderrLog);
    const holder = state.allocations.get(ip.value);
    if (holder !== undefined)
      return {
        ...base,
        released,
        skipped,
        reservation: {
          name,
          outcome: 'still-held',
          why: `IPPool ${pool.view.name} holds ${address} for ${holder.podRef || 'a container'}`,
        },
      };
  }
  // The attachment whose reservation may go: the one released (or the one judged, when another writer freed it first).
  const owner = judged.find((j) => j.pool.view.name === released[0]?.pool) ?? firstJudged;
  const outcome = await writer.releaseReservation(poolRefOf(owner.pool, reserved), ip, owner.record);
  return {
    ...base,
    released,
    skipped,
    reservation: { name, outcome, ...(outcome === 'kept' ? { why: 'it names another attachment' } : {}) },
  };
}

/** No pool of the network holds the address: its reservation alone (if any) goes, unless a live pod still holds it. */
async function releaseStray(
  api: ApiClient,
  base: { address: string; network: string },
  name: string,
  force: boolean,
): Promise<ReleaseReport> {
  const object = await getObject(api, 'overlappingrangeipreservations', name);
  const version = versionOf(object);
  if (object === undefined || version === undefined)
    return {
      ...base,
      released: [],
      skipped: [],
      reservation: { name, outcome: 'gone', why: 'no pool of the network holds the address and it has no reservation' },
    };
  const spec =
    (object as { spec?: { podref?: unknown; podUid?: unknown; containerid?: unknown; ifname?: unknown } }).spec ?? {};
  const podRef = typeof spec.podref === 'string' ? spec.podref : '';
  const record: AllocationRecord = {
    podRef,
    containerId: typeof spec.containerid === 'string' ? spec.containerid : '',
    ifname: typeof spec.ifname === 'string' ? spec.ifname : '',
    ...(typeof spec.podUid === 'string' ? { podUid: spec.podUid } : {}),
  };
  const node = warmHolder(record);
  const warm = node === undefined ? undefined : warmReservationReason(name, node, await readNode(api, node));
  if (warm !== undefined)
    return {
      ...base,
      released: [],
      skipped: [],
      reservation: { name, outcome: 'kept' },
      refused: `${warm}: --force does not delete it`,
    };
  const live = node === undefined ? liveReason(record, await readPod(api, podRef)) : undefined;
  if (live !== undefined && !force)
    return {
      ...base,
      released: [],
      skipped: [],
      reservation: { name, outcome: 'kept' },
      refused: `${live}: --force deletes its reservation anyway`,
    };
  const result = await new PoolWriter(api).deleteReservation({ name, ...version });
  return {
    ...base,
    released: [],
    skipped: [],
    reservation: {
      name,
      outcome: result === 'deleted' ? 'deleted' : result === 'gone' ? 'gone' : 'kept',
      ...(result === 'conflict' ? { why: 'it changed since it was read' } : {}),
    },
  };
}

export function formatRelease(r: ReleaseReport): string {
  const network = r.network === '' ? '(unnamed)' : r.network;
  if (r.refused !== undefined) return `refused to release ${r.address} of network ${network}: ${r.refused}\n`;
  let out = '';
  for (const x of r.released)
    out += `released ${r.address} from IPPool ${x.pool} (was ${x.podRef || 'no pod'}, container ${x.containerId}, interface ${x.ifname})\n`;
  for (const x of r.skipped) out += `IPPool ${x.pool}: ${r.address} ${x.why}\n`;
  if (r.released.length === 0 && r.skipped.length === 0 && r.reservation.outcome !== 'deleted')
    out += `${r.address} is not allocated in any IPPool of network ${network}\n`;
  const what: Record<ReleaseReport['reservation']['outcome'], string> = {
    deleted: 'deleted',
    kept: 'kept',
    gone: 'not found',
    'still-held': 'kept',
  };
  out += `reservation ${r.reservation.name}: ${what[r.reservation.outcome]}${r.reservation.why === undefined ? '' : ` (${r.reservation.why})`}\n`;
  return out;
}
