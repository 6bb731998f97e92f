// A pod's sandbox on a node, attached and detached as Multus does it: one CNI IPAM call per network (net1, net2, ...)
// in order, each a process of its own, by the binary the node runs now (hereabouts' real verbs, or the simulated
// Whereabouts); a failure stops the ADD and the runtime tears the sandbox down (DEL follows for every network).
// DEL calls every network, the last first. GC (CNI 1.1) is hereabouts' only: Whereabouts has none.
import { parseCniArgs, type CniArgs } from '../../src/cni/args.ts';
import { cmdAdd } from '../../src/cni/verbs/add.ts';
import { cmdDel } from '../../src/cni/verbs/del.ts';
import { cmdGc } from '../../src/cni/verbs/gc.ts';
import { parseNetworkConfig } from '../../src/config/parse.ts';
import { formatIP } from '../../src/ip/address.ts';
import { masked, networkOf, parseCidr } from '../../src/ip/cidr.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import type { Logger } from '../../src/log/logger.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import type { FaultSpec } from './faults.ts';
import { errorLine, type Outcome, type Processes } from './processes.ts';
import { NETS, type Binary, type NetId } from './steps.ts';
import { whereaboutsAdd, whereaboutsDel, type WhereaboutsCall, type WhereaboutsProgress } from './whereabouts.ts';

export interface Attachment {
  readonly ifname: string;
  readonly net: NetId;
  /** The network config of its ADD: Multus hands the same to its DEL. */
  readonly request: Record<string, unknown>;
  ok: boolean;
  address?: string;
  /** Its records and reservation were rewritten as Whereabouts before 0.7 wrote them (no ifname). */
  legacy: boolean;
}

export interface Sandbox {
  readonly id: string;
  readonly pod: string;
  readonly uid: string;
  readonly attachments: readonly Attachment[];
  /** Clock epoch of its ADD (a 'time' step starts a new one). */
  epoch: number;
}

export const attached = (s: Sandbox): boolean => s.attachments.every((a) => a.ok);

/** "pool|ip|container|ifname" of a record a Whereabouts ADD left without its reservation. */
export const windowKey = (pool: string, ip: string, containerId: string, ifname: string): string =>
  `${pool}|${ip}|${containerId}|${ifname}`;

export interface AttachContext {
  /** The unfaulted client (the model's own reads). */
  readonly api: ApiClient;
  readonly processes: Processes;
  /** Records a Whereabouts ADD left without its reservation (killed between its writes, or its create failed). */
  readonly whereaboutsWindow: Set<string>;
  /** Containers whose DEL Whereabouts answered (it ignores every error: what it did not find stays). */
  readonly whereaboutsDeleted: Set<string>;
  /**
   * Attachments ("container|ifname") whose hereabouts ADD was killed: a record it left may lack its reservation when
   * another writer deleted the reservation between its create and the pool write (Whereabouts' reconciler or DEL);
   * the dead process cannot repair it, the attachment's next ADD or DEL, or the controller's repair pass, does.
   */
  readonly crashWindow: Set<string>;
  /** Attachments ("container|ifname") a hereabouts DEL answered with success: nothing may hold them any more. */
  readonly deleted: Set<string>;
}

export const crashKey = (containerId: string, ifname: string): string => `${containerId}|${ifname}`;

export interface Caller {
  readonly short: string;
  /** The node's name in the API. */
  readonly node: string;
  readonly binary: Binary;
  readonly podRef: string;
  readonly podUid?: string;
  readonly log?: Logger;
}

function config(request: Record<string, unknown>, verb: string, cniArgs?: CniArgs) {
  // The model's kubeconfig path is a placeholder (the stores get their API client directly): allow its directory.
  return parseNetworkConfig(request, {
    cniVersion: '1.1.0',
    cniArgs,
    readFile: () => undefined,
    verb,
    env: { HEREABOUTS_ALLOWED_DIRS: '/nonexistent' },
  });
}

/** CNI_ARGS as the kubelet passes them. */
export function cniArgs(podRef: string, uid: string): CniArgs {
  const [namespace = '', pod = ''] = podRef.split('/');
  return parseCniArgs(
    `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=x;K8S_POD_UID=${uid}`,
  );
}

function whereaboutsCall(caller: Caller, sandbox: Sandbox, a: Attachment): WhereaboutsCall {
  const def = NETS[a.net];
  const slice = def.slice === undefined ? undefined : { network: def.networkName ?? def.cniName, node: caller.node };
  return {
    podRef: caller.podRef,
    containerId: sandbox.id,
    ifname: a.ifname,
    range: def.range,
    overlapping: def.overlapping,
    ...(slice === undefined ? {} : { slice }),
  };
}

/** The faults of the n-th network's process: the kill hits the first one only (one process dies, not every one). */
function faultsOf(faults: FaultSpec, n: number): FaultSpec {
  if (n === 0) return faults;
  return {
    seed: faults.seed + n,
    rate: faults.rate,
    ...(faults.stallMs === undefined ? {} : { stallMs: faults.stallMs }),
  };
}

/** Attaches every network of the sandbox in order; the address of each, or the first failure. */
export async function addSandbox(
  ctx: AttachContext,
  caller: Caller,
  sandbox: Sandbox,
  faults: FaultSpec,
): Promise<{ ok: true } | { ok: false; outcome: string }> {
  for (const [n, a] of sandbox.attachments.entries()) {
    const outcome = await addOne(ctx, caller, sandbox, a, faultsOf(faults, n));
    if (!outcome.ok)
      return {
        ok: false,
        outcome: `${a.ifname} failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`,
      };
    a.ok = true;
    a.address = outcome.value;
  }
  return { ok: true };
}

async function addOne(
  ctx: AttachContext,
  caller: Caller,
  sandbox: Sandbox,
  a: Attachment,
  faults: FaultSpec,
): Promise<Outcome<string>> {
  if (caller.binary === 'whereabouts') {
    const call = whereaboutsCall(caller, sandbox, a);
    const progress: WhereaboutsProgress = { reserved: false };
    const outcome = await ctx.processes.whereabouts(faults, (api) => whereaboutsAdd(api, call, progress));
    if (progress.written !== undefined && call.overlapping && !progress.reserved)
      ctx.whereaboutsWindow.add(windowKey(progress.written.pool, progress.written.ip, sandbox.id, a.ifname));
    return outcome;
  }
  const cfg = config(a.request, 'ADD', cniArgs(caller.podRef, sandbox.uid));
  const env = {
    verb: 'ADD' as const,
    containerId: sandbox.id,
    ifname: a.ifname,
    netns: '/var/run/netns/model',
    path: [],
    args: cniArgs(caller.podRef, sandbox.uid),
  };
  const where = { short: caller.short, node: caller.node };
  const options = {
    reservations: cfg.ipam.enableOverlappingRanges,
    ...(caller.log === undefined ? {} : { log: caller.log }),
  };
  const outcome = await ctx.processes.hereabouts(where, faults, options, (store) =>
    cmdAdd({ config: cfg, store, logger: options.log ?? quietLogger, version: '1.1.0', env }),
  );
  if (!outcome.ok) {
    if (outcome.killed) ctx.crashWindow.add(crashKey(sandbox.id, a.ifname));
    return outcome;
  }
  const ip = (outcome.value as unknown as { ips?: Array<{ address?: string }> }).ips?.[0]?.address?.split('/')[0];
  if (ip === undefined) throw new Error(`model: ADD returned no address: ${JSON.stringify(outcome.value)}`);
  return { ok: true, value: ip };
}

const quietLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warning: () => undefined,
  error: () => undefined,
};

/** DEL of every network of the sandbox, the last first: done when every call succeeded. */
export async function delSandbox(
  ctx: AttachContext,
  caller: Caller,
  sandbox: Sandbox,
  faults: FaultSpec,
): Promise<{ done: boolean; outcome: string }> {
  const failures: string[] = [];
  const reversed = [...sandbox.attachments].reverse();
  for (const [n, a] of reversed.entries()) {
    let outcome: Outcome<unknown>;
    if (caller.binary === 'whereabouts') {
      const call = whereaboutsCall(caller, sandbox, a);
      outcome = await ctx.processes.whereabouts(faultsOf(faults, n), (api) => whereaboutsDel(api, call));
      if (outcome.ok) ctx.whereaboutsDeleted.add(sandbox.id);
    } else {
      const pod = caller.podUid === undefined ? undefined : cniArgs(caller.podRef, caller.podUid);
      const cfg = config(a.request, 'DEL', pod);
      const env = {
        verb: 'DEL' as const,
        containerId: sandbox.id,
        ifname: a.ifname,
        path: [],
        args: cniArgs(caller.podRef, sandbox.uid),
      };
      outcome = await ctx.processes.hereabouts(
        { short: caller.short, node: caller.node },
        faultsOf(faults, n),
        { reservations: cfg.ipam.enableOverlappingRanges, del: { containerId: sandbox.id, ifname: a.ifname } },
        (store) => cmdDel({ config: cfg, store, logger: quietLogger, version: '1.1.0', env }),
      );
    }
    if (!outcome.ok) failures.push(`${a.ifname}${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`);
    else if (caller.binary === 'hereabouts') ctx.deleted.add(crashKey(sandbox.id, a.ifname));
  }
  if (failures.length > 0) return { done: false, outcome: `DEL ${sandbox.id} failed: ${failures.join('; ')}` };
  return { done: true, outcome: `DEL ${sandbox.id} done` };
}

/** CNI GC of one network with the runtime's valid attachments. */
export async function gcNetwork(
  ctx: AttachContext,
  caller: Pick<Caller, 'short' | 'node'>,
  request: Record<string, unknown>,
  valid: ReadonlyArray<{ containerID: string; ifname: string }>,
  faults: FaultSpec,
): Promise<Outcome<unknown>> {
  const cfg = config({ ...request, 'cni.dev/valid-attachments': valid }, 'GC');
  return ctx.processes.hereabouts(caller, faults, { reservations: cfg.ipam.enableOverlappingRanges }, (store) =>
    cmdGc({ config: cfg, store, logger: quietLogger, version: '1.1.0' }),
  );
}

/**
 * Why `binary` cannot attach the pod, or undefined. Multus finds no NAD; or Whereabouts would break the promise by
 * its own defects, which are not the model's subject: it compares reservations by podref alone (two interfaces of
 * one pod; a pod created again under the name of one whose record or reservation is still there), and it ignores
 * draining and retired node slices.
 */
export async function unattachable(
  api: ApiClient,
  pod: {
    readonly podRef: string;
    readonly nets: readonly NetId[];
    readonly reusedName: boolean;
    readonly sandboxes: ReadonlySet<string>;
  },
  binary: Binary,
  nads: ReadonlyMap<NetId, unknown>,
): Promise<string | undefined> {
  const missing = pod.nets.find((net) => !nads.has(net));
  if (missing !== undefined) return `NAD ${NETS[missing].cniName} not found (Multus fails before any IPAM call)`;
  if (binary === 'hereabouts') return undefined;
  if (pod.nets.length > 1) return 'Whereabouts does not tell two interfaces of one pod apart';
  if (pod.nets.some((net) => NETS[net].slice !== undefined)) return 'Whereabouts ignores draining and retired slices';
  if (pod.nets.some((net) => NETS[net].sticky === true)) return 'Whereabouts knows no sticky addresses';
  if (pod.reusedName && (await predecessorLeftovers(api, pod.podRef, pod.sandboxes)))
    return "Whereabouts would adopt a predecessor's records (same pod name)";
  return undefined;
}

/** Whether records or reservations of an earlier pod of the same name are still there. */
async function predecessorLeftovers(api: ApiClient, podRef: string, mine: ReadonlySet<string>): Promise<boolean> {
  const ours = new Set<string>();
  for (const pool of await listAll(api, objectPath(api.namespace, 'ippools'))) {
    const spec = (pool as { spec?: { range?: string; allocations?: Record<string, { podref?: string; id?: string }> } })
      .spec;
    const cidr = masked(parseCidr(spec?.range ?? '0.0.0.0/32'));
    for (const [offset, e] of Object.entries(spec?.allocations ?? {})) {
      if (e.podref !== podRef) continue;
      if (!mine.has(e.id ?? '')) return true;
      ours.add(formatIP({ family: cidr.family, value: networkOf(cidr) + BigInt(offset) }));
    }
  }
  for (const r of await listAll(api, objectPath(api.namespace, 'overlappingrangeipreservations'))) {
    const { metadata, spec } = r as { metadata?: { name?: string }; spec?: { podref?: string; containerid?: string } };
    if (spec?.podref !== podRef) continue;
    const known = spec.containerid === undefined || spec.containerid === '' ? undefined : spec.containerid;
    if (known === undefined ? !ours.has(metadata?.name ?? '') : !mine.has(known)) return true;
  }
  return false;
}
