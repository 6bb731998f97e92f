// Sticky addresses in the model (docs/sticky.md): network T is sticky (IPAM `sticky: true`, its own range, with
// reservations), and so is network U, sliced per node (node_slice_size: its sticky ADDs allocate in the slice of its
// sticky area, which the controller assigns to the pseudo-node hereabouts-sticky). StatefulSets (created, scaled up
// and down, rolled, deleted with or without --cascade=orphan and created again, adopting their orphans), their
// replica pods (deleted and created again under the same name with a new UID, on any node), pods that take a
// replica's name without being one, KubeVirt VMs (VirtualMachine and VirtualMachineInstance objects) with their
// virt-launcher pods, live migrations (a second virt-launcher pod of the VM ADDs on another node while the first
// runs, then the first ends and its DEL comes), VMs stopped and deleted, network U's NodeSlicePool lost, and
// controller restarts (its memory of bindings seen released is lost; its sticky caches may not be synced for a pass;
// its --sticky-grace may change). No kube-controller-manager runs beside the model: the StatefulSet controller's,
// the garbage collector's and virt-controller's effects are steps (or parts of steps) of their own.
//
// The plugin learns a pod's owner as in production: the model's ADDs run the real cmdAdd with a KubernetesStore,
// whose podFacts() reads the pod (its ownerReferences, pod-index label and sticky annotation) through the process's
// faulty API (no node agent's pod watch: the in-memory API serves no watches). The controller passes get the sticky
// input the controller builds (controller.ts): the world of its sticky caches (simulated informers of StatefulSets,
// VMs and VMIs, which may lag like the others), its --sticky-grace, and its memory of bindings seen released, on a
// monotonic clock that follows the model's virtual wall clock.
//
// Not modelled: the StatefulSet address lists (pre-bound records), the "annotated" mode, ordinals.start, --sticky.
//
// After every step (besides the model's other invariants, which count T's and U's records as any others):
//   one record   at most one record per binding, network and interface (a VM's two virt-launcher pods share one)
//   owner        a bound record is held by an attachment whose pod binds that binding (never a pod that takes a
//                replica's name, another set's replica, or another VM's pod); a live pod that binds nothing was not
//                answered a bound address; a live pod that binds something was answered its binding's address
//   kept         a binding ever given an address keeps a record with that address while it holds (by the rule of
//                controller/sticky/verdict.ts on the model's world: its replica pod exists, or its set exists and
//                covers its ordinal; its VM or VMI exists); once it no longer holds, its record goes only in a
//                controller pass, and only once the controller's caches showed it released for the grace
// and after quiesce: no bound record survives whose binding no longer holds.
import { bindingReleaseReason, type StickyWorld } from '../../src/controller/sticky/verdict.ts';
import { parseIP } from '../../src/ip/address.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { STICKY_ANNOTATION } from '../../src/store/sticky-binding.ts';
import type { Sandbox } from './attach.ts';
import type { Cluster, PodModel } from './cluster.ts';
import type { PassResult, StickyInput, Views } from './controller-pass.ts';
import type { FaultCounts, FaultSpec } from './faults.ts';
import { keepsAddress, type Violation } from './invariants.ts';
import type { Prng } from './prng.ts';
import type { Held } from './state.ts';
import { NETS, type NetId, type Step } from './steps.ts';
import { clockOffsetMs } from './virtual-clock.ts';

/** StatefulSets ("web-1"'s replicas are "web-1-0", ...; "web"'s ordinal 1 is the pod "web-1"). */
export const SETS = ['web', 'db', 'web-1'] as const;
export type SetName = (typeof SETS)[number];
export const VMS = ['vm1', 'vm2'] as const;
export type VmName = (typeof VMS)[number];
/** --sticky-grace values a restarted controller may run with (the first controller: DEFAULT_GRACE_MS). */
export const GRACES = [0, 60_000, 300_000] as const;
export const DEFAULT_GRACE_MS = 60_000;
const MAX_REPLICAS = 3;
const POD_INDEX = 'apps.kubernetes.io/pod-index';
/** Between the controller's monotonic clock and the model's wall clock: rounding only. */
const SLACK_MS = 20;

export type StickyStep =
  /** The StatefulSet object (its pods are steps of their own: replica-create); it adopts its orphans. */
  | {
      readonly op: 'sts-create';
      readonly set: SetName;
      readonly replicas: number;
      readonly nets: readonly NetId[];
      /** Its pod template has hereabouts.cni.cncf.io/sticky: "false". */
      readonly optOut?: boolean;
    }
  | { readonly op: 'sts-scale'; readonly set: SetName; readonly replicas: number }
  /** Deleted; its pods are deleted gracefully by the garbage collector, or orphaned (their owner reference goes). */
  | { readonly op: 'sts-delete'; readonly set: SetName; readonly orphan: boolean }
  /** The StatefulSet controller creates replica "<set>-<ordinal>" (a new UID when the name was used before). */
  | { readonly op: 'replica-create'; readonly set: SetName; readonly ordinal: number; readonly node: string }
  /** A pod no StatefulSet made under a replica's name; `owner`: it names that set as its controller all the same. */
  | {
      readonly op: 'bare-create';
      readonly pod: string;
      readonly node: string;
      readonly nets: readonly NetId[];
      readonly owner?: SetName;
    }
  /** The VirtualMachine and its running VirtualMachineInstance. */
  | { readonly op: 'vm-create'; readonly vm: VmName; readonly nets: readonly NetId[] }
  /** A new VirtualMachineInstance of a stopped VM. */
  | { readonly op: 'vm-start'; readonly vm: VmName }
  /** The VMI is deleted: its virt-launcher pods are deleted gracefully, the VMI goes once they are gone. */
  | { readonly op: 'vm-stop'; readonly vm: VmName }
  /** The VirtualMachine is deleted (and its VMI, as vm-stop). */
  | { readonly op: 'vm-delete'; readonly vm: VmName }
  /** virt-controller creates a virt-launcher pod of the VM's VMI: its start, or a live migration's target. */
  | { readonly op: 'launcher-create'; readonly vm: VmName; readonly pod: string; readonly node: string }
  /** A new controller process: no memory; its sticky caches not synced for `unsynced` passes; --sticky-grace. */
  | { readonly op: 'controller-restart'; readonly graceMs: number; readonly unsynced: boolean };

export const STICKY_OPS: ReadonlySet<string> = new Set([
  'sts-create',
  'sts-scale',
  'sts-delete',
  'replica-create',
  'bare-create',
  'vm-create',
  'vm-start',
  'vm-stop',
  'vm-delete',
  'launcher-create',
  'controller-restart',
]);

/** What a workload's pod is created with (Cluster.createPod). */
export interface PodMeta {
  readonly metadata: Record<string, unknown>;
  readonly workload?: PodModel['workload'];
  readonly binding?: string;
}

interface SetModel {
  uid: string;
  replicas: number;
  exists: boolean;
  nets: readonly NetId[];
  optOut: boolean;
}

interface VmModel {
  vm: boolean;
  /** deleting: deleted, kept by its finalizer until its virt-launcher pods are gone. */
  vmi: 'running' | 'deleting' | 'absent';
  vmiUid: string;
  readonly nets: readonly NetId[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const isSticky = (net: NetId): boolean => NETS[net].sticky === true;
const replicaName = (set: string, ordinal: number): string => `${set}-${ordinal}`;
const setBinding = (set: string, ordinal: number): string => `StatefulSet/${set}/${ordinal}`;
const vmBinding = (vm: string): string => `VirtualMachine/${vm}`;
/** A binding's identity on a network and interface (the namespace is the model's): "binding|net|ifname". */
const keyOf = (binding: string, net: NetId | undefined, ifname: string): string => `${binding}|${net ?? '?'}|${ifname}`;
const bindingOfKey = (key: string): string => key.slice(0, key.indexOf('|'));
const launcherPrefix = (vm: string): string => `virt-launcher-${vm}-`;

export class StickyModel {
  readonly sets = new Map<SetName, SetModel>();
  readonly vms = new Map<VmName, VmModel>();
  /**
   * Steps a generated sticky step planned (a scenario of several steps), taken before anything new is drawn; a
   * function is a step drawn when its turn comes, from the state then (none: the scenario goes on without it).
   */
  readonly planned: Array<Step | (() => Step | undefined)> = [];
  /** A sticky step ran (the sequence's quiesce then lets the controller release what no longer holds). */
  used = false;
  /** The running controller's --sticky-grace. */
  graceMs = DEFAULT_GRACE_MS;
  readonly #cluster: Cluster;
  readonly #counts: FaultCounts;
  /** The controller's memory (cleanup-pass.ts StickyInput.firstReleasable), monotonic. */
  #firstReleasable = new Map<string, number>();
  /** The virtual clock's offset when the controller's memory was last moved with it. */
  #offset = clockOffsetMs();
  /** Passes to come whose sticky caches are not synced (no sticky input: every bound record is kept). */
  #unsynced = 0;
  /** Pods orphaned by a StatefulSet deleted with --cascade=orphan (by UID): its successor adopts them. */
  readonly #orphans = new Map<string, SetName>();
  /** Pods whose template opted out (by UID). */
  readonly #optedOut = new Set<string>();
  /** "container|ifname" of every ADD of an attachment on a sticky network -> the binding its pod had (null: none). */
  readonly #expected = new Map<string, string | null>();
  /** Binding -> the pods ("namespace/name") whose ADD bound to it. */
  readonly #holders = new Map<string, Set<string>>();
  /** "binding|net|ifname" -> the address it was given, and the node of the pod that last got it. */
  readonly #given = new Map<string, { ip: string; node?: string }>();
  /** Binding -> since when (wall clock) the controller's caches show it released, as the model accounts it. */
  readonly #seenReleased = new Map<string, number>();
  /** Bindings some pass since the last check saw released for the grace: the ones that pass could release. */
  readonly #eligible = new Set<string>();
  /** Passes whose cleanup ran since the last check. */
  #passes = 0;

  constructor(cluster: Cluster, counts: FaultCounts) {
    this.#cluster = cluster;
    this.#counts = counts;
  }

  get #api(): ApiClient {
    return this.#cluster.api;
  }

  #path(group: string, plural: string, name?: string): string {
    const ns = encodeURIComponent(this.#cluster.ns);
    const base = group === '' ? `/api/v1/namespaces/${ns}` : `/apis/${group}/namespaces/${ns}`;
    return `${base}/${plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  }

  async #send(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<Obj> {
    const res = await this.#api.send({
      method,
      path,
      ...(body === undefined ? {} : { body }),
      ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}),
    });
    if (res.status >= 300 && res.status !== 404)
      throw new Error(`model sticky: ${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return obj(res.body);
  }

  // ---- the world's steps ----

  async run(step: StickyStep): Promise<string> {
    this.used = true;
    this.#counts.sticky.steps++;
    const outcome = await this.#run(step);
    await this.#finalizeVmis();
    return outcome;
  }

  async #run(step: StickyStep): Promise<string> {
    switch (step.op) {
      case 'sts-create':
        return this.#createSet(step);
      case 'sts-scale': {
        const set = this.sets.get(step.set);
        if (set?.exists !== true || set.replicas === step.replicas) return 'skip';
        await this.#send('PATCH', this.#path('apps/v1', 'statefulsets', step.set), {
          spec: { replicas: step.replicas },
        });
        const from = set.replicas;
        set.replicas = step.replicas;
        return `replicas ${from} -> ${step.replicas}`;
      }
      case 'sts-delete':
        return this.#deleteSet(step.set, step.orphan);
      case 'replica-create': {
        const set = this.sets.get(step.set);
        const name = replicaName(step.set, step.ordinal);
        // The StatefulSet controller makes the ordinals its replicas cover, under a name no pod has.
        if (set?.exists !== true || step.ordinal >= set.replicas || this.#cluster.pods.get(name)?.exists === true)
          return 'skip';
        const binding = set.optOut ? undefined : setBinding(step.set, step.ordinal);
        const outcome = await this.#cluster.createPod(name, step.node, set.nets, {
          metadata: {
            ownerReferences: [this.#setOwner(step.set, set.uid)],
            labels: { app: step.set, [POD_INDEX]: String(step.ordinal) },
            ...(set.optOut ? { annotations: { [STICKY_ANNOTATION]: 'false' } } : {}),
          },
          workload: { kind: 'StatefulSet', name: step.set },
          ...(binding === undefined ? {} : { binding }),
        });
        const pod = this.#cluster.pods.get(name);
        if (set.optOut && pod !== undefined) this.#optedOut.add(pod.uid);
        return outcome;
      }
      case 'bare-create': {
        if (this.#cluster.pods.get(step.pod)?.exists === true) return 'skip';
        const owner = step.owner === undefined ? undefined : this.sets.get(step.owner);
        const refs = owner?.exists === true ? [this.#setOwner(step.owner ?? '', owner.uid)] : undefined;
        return this.#cluster.createPod(step.pod, step.node, step.nets, {
          metadata: refs === undefined ? {} : { ownerReferences: refs },
        });
      }
      case 'vm-create': {
        if (this.vms.get(step.vm)?.vm === true) return 'skip';
        await this.#send('POST', this.#path('kubevirt.io/v1', 'virtualmachines'), {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachine',
          metadata: { name: step.vm },
          spec: { runStrategy: 'Always' },
        });
        const old = this.vms.get(step.vm);
        // A VMI of an earlier VM of the name still deleting: the new VM's starts once it is gone (vm-start).
        const vm: VmModel = { vm: true, vmi: old?.vmi ?? 'absent', vmiUid: old?.vmiUid ?? '', nets: step.nets };
        this.vms.set(step.vm, vm);
        if (vm.vmi === 'absent') await this.#startVmi(step.vm, vm);
        return `created${vm.vmi === 'running' ? ', VMI running' : ''}`;
      }
      case 'vm-start': {
        const vm = this.vms.get(step.vm);
        if (vm?.vm !== true || vm.vmi !== 'absent') return 'skip';
        await this.#startVmi(step.vm, vm);
        return 'VMI running';
      }
      case 'vm-stop':
        return this.#stopVmi(step.vm);
      case 'vm-delete': {
        const vm = this.vms.get(step.vm);
        if (vm?.vm !== true) return 'skip';
        await this.#send('DELETE', this.#path('kubevirt.io/v1', 'virtualmachines', step.vm));
        vm.vm = false;
        return `deleted; ${await this.#stopVmi(step.vm)}`;
      }
      case 'launcher-create': {
        const vm = this.vms.get(step.vm);
        if (vm?.vmi !== 'running' || this.#cluster.pods.has(step.pod)) return 'skip';
        const owner = {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachineInstance',
          name: step.vm,
          uid: vm.vmiUid,
          controller: true,
          blockOwnerDeletion: true,
        };
        return this.#cluster.createPod(step.pod, step.node, vm.nets, {
          metadata: {
            ownerReferences: [owner],
            labels: { 'kubevirt.io': 'virt-launcher', 'vm.kubevirt.io/name': step.vm },
          },
          workload: { kind: 'VirtualMachine', name: step.vm },
          binding: vmBinding(step.vm),
        });
      }
      case 'controller-restart':
        this.#firstReleasable = new Map();
        this.#seenReleased.clear();
        this.#unsynced = step.unsynced ? 1 : 0;
        this.graceMs = step.graceMs;
        this.#counts.sticky.restarts++;
        return `controller restarted (--sticky-grace ${step.graceMs} ms${step.unsynced ? ', caches not synced yet' : ''})`;
    }
  }

  #setOwner(set: string, uid: string): Obj {
    return { apiVersion: 'apps/v1', kind: 'StatefulSet', name: set, uid, controller: true, blockOwnerDeletion: true };
  }

  async #createSet(step: Extract<StickyStep, { op: 'sts-create' }>): Promise<string> {
    if (this.sets.get(step.set)?.exists === true) return 'skip';
    const body = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: step.set },
      spec: {
        replicas: step.replicas,
        serviceName: step.set,
        selector: { matchLabels: { app: step.set } },
        template: {
          metadata: {
            labels: { app: step.set },
            ...(step.optOut === true ? { annotations: { [STICKY_ANNOTATION]: 'false' } } : {}),
          },
          spec: { containers: [{ name: 'c', image: 'busybox' }] },
        },
      },
    };
    const created = await this.#send('POST', this.#path('apps/v1', 'statefulsets'), body);
    const uid = str(obj(created['metadata'])['uid']);
    const set: SetModel = { uid, replicas: step.replicas, exists: true, nets: step.nets, optOut: step.optOut === true };
    this.sets.set(step.set, set);
    // The StatefulSet controller adopts the pods its predecessor orphaned (they match its selector).
    const adopted: string[] = [];
    for (const pod of this.#cluster.pods.values()) {
      if (!pod.exists || this.#orphans.get(pod.uid) !== step.set) continue;
      await this.#send('PATCH', this.#path('', 'pods', pod.name), {
        metadata: { ownerReferences: [this.#setOwner(step.set, uid)] },
      });
      this.#orphans.delete(pod.uid);
      const ordinal = Number(pod.name.slice(step.set.length + 1));
      pod.workload = { kind: 'StatefulSet', name: step.set };
      if (this.#optedOut.has(pod.uid)) delete pod.binding;
      else pod.binding = setBinding(step.set, ordinal);
      adopted.push(pod.name);
    }
    return `created (uid ${uid.slice(0, 8)})${adopted.length === 0 ? '' : `, adopted ${adopted.join(', ')}`}`;
  }

  async #deleteSet(name: SetName, orphan: boolean): Promise<string> {
    const set = this.sets.get(name);
    if (set?.exists !== true) return 'skip';
    const pods = [...this.#cluster.pods.values()].filter(
      (p) => p.exists && p.workload?.kind === 'StatefulSet' && p.workload.name === name,
    );
    if (orphan) {
      // The garbage collector takes the owner reference off the dependents before the owner goes.
      for (const pod of pods) {
        await this.#send('PATCH', this.#path('', 'pods', pod.name), { metadata: { ownerReferences: null } });
        delete pod.workload;
        delete pod.binding;
        this.#orphans.set(pod.uid, name);
      }
    }
    await this.#send('DELETE', this.#path('apps/v1', 'statefulsets', name), {
      propagationPolicy: orphan ? 'Orphan' : 'Background',
    });
    set.exists = false;
    if (orphan) return `deleted, orphaned ${pods.map((p) => p.name).join(', ') || 'no pod'}`;
    // Background propagation: the garbage collector deletes its pods (gracefully).
    for (const pod of pods) await this.#cluster.deletePod(pod.name, true);
    return `deleted, its pods ${pods.map((p) => p.name).join(', ') || '(none)'} terminating`;
  }

  async #startVmi(name: VmName, vm: VmModel): Promise<void> {
    const created = await this.#send('POST', this.#path('kubevirt.io/v1', 'virtualmachineinstances'), {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name },
      spec: {},
    });
    vm.vmi = 'running';
    vm.vmiUid = str(obj(created['metadata'])['uid']);
  }

  /** The VMI is deleted: virt-controller deletes its pods; its finalizer keeps it until they are gone. */
  async #stopVmi(name: VmName): Promise<string> {
    const vm = this.vms.get(name);
    if (vm?.vmi !== 'running') return 'no VMI running';
    vm.vmi = 'deleting';
    const pods = this.launchersOf(name).filter((p) => !p.terminating);
    for (const pod of pods) await this.#cluster.deletePod(pod.name, true);
    return `VMI deleting, its pods ${pods.map((p) => p.name).join(', ') || '(none)'} terminating`;
  }

  /** The virt-launcher pods of the VM that exist. */
  launchersOf(vm: string): PodModel[] {
    return [...this.#cluster.pods.values()].filter(
      (p) => p.exists && p.workload?.kind === 'VirtualMachine' && p.workload.name === vm,
    );
  }

  /** A deleted VMI goes once its virt-launcher pods are gone (its finalizer). After every step. */
  async #finalizeVmis(): Promise<void> {
    for (const [name, vm] of this.vms) {
      if (vm.vmi !== 'deleting' || this.launchersOf(name).length > 0) continue;
      await this.#send('DELETE', this.#path('kubevirt.io/v1', 'virtualmachineinstances', name));
      vm.vmi = 'absent';
      vm.vmiUid = '';
    }
  }

  /** A pod its StatefulSet left behind when it was deleted with --cascade=orphan: its successor adopts it. */
  isOrphanOf(pod: PodModel, set: SetName): boolean {
    return this.#orphans.get(pod.uid) === set;
  }

  /** After every step (pods may have gone in it): VMIs whose finalizer is done go. */
  afterStep(): Promise<void> {
    return this.#finalizeVmis();
  }

  // ---- the plugin's side ----

  /** An ADD of the pod's new sandbox begins: what its attachments on a sticky network must bind to. */
  adding(pod: PodModel, sandbox: Sandbox): void {
    for (const a of sandbox.attachments)
      if (isSticky(a.net)) this.#expected.set(`${sandbox.id}|${a.ifname}`, pod.binding ?? null);
    if (pod.binding === undefined || !sandbox.attachments.some((a) => isSticky(a.net))) return;
    const holders = this.#holders.get(pod.binding) ?? new Set();
    holders.add(this.#cluster.podRef(pod.name));
    this.#holders.set(pod.binding, holders);
  }

  /**
   * The reservation of a bound record names an earlier pod of its binding: a takeover whose pool write's answer was
   * lost (the ADD failed) leaves it so until the binding's next ADD brings it in step. It keeps the address reserved
   * all the same (the controller keeps a reservation whose address is held, whatever its pod).
   */
  earlierHolder(podRef: string, h: Held): boolean {
    return h.binding !== '' && this.#holders.get(h.binding)?.has(podRef) === true;
  }

  /** The ADD succeeded. */
  added(pod: PodModel, sandbox: Sandbox): void {
    if (pod.binding === undefined) return;
    const binding = pod.binding;
    let found = false;
    for (const a of sandbox.attachments) {
      if (!isSticky(a.net) || a.address === undefined) continue;
      const key = keyOf(binding, a.net, a.ifname);
      const given = this.#given.get(key);
      if (given === undefined) {
        this.#give(key, a.address, pod.node);
        continue;
      }
      if (given.ip !== a.address) continue; // the check reports it
      if (given.node !== undefined && given.node !== pod.node) this.#counts.sticky.elsewhere++;
      given.node = pod.node;
      found = true;
    }
    if (found) this.#counts.sticky.found++;
    if (pod.workload?.kind === 'VirtualMachine') {
      const others = this.launchersOf(pod.workload.name).filter((p) => p !== pod && keepsAddress(p));
      if (others.length > 0) this.#counts.sticky.migrations++;
    }
  }

  #give(key: string, ip: string, node?: string): void {
    this.#given.set(key, { ip, ...(node === undefined ? {} : { node }) });
    this.#counts.sticky.bindings++;
  }

  // ---- the controller's side ----

  /** Its sticky caches are synced (quiesce: long enough has passed). */
  synced(): void {
    this.#unsynced = 0;
  }

  /**
   * The sticky input of a pass whose cleanup runs now (undefined while the caches are not synced), as the controller
   * builds it; and the model's account of what the caches show released since when.
   */
  passInput(c: Views): StickyInput | undefined {
    this.#passes++;
    // The controller's monotonic clock moves with the model's wall clock: its memory ages by the clock's jumps.
    const jump = clockOffsetMs() - this.#offset;
    this.#offset = clockOffsetMs();
    if (jump !== 0) for (const [key, since] of this.#firstReleasable) this.#firstReleasable.set(key, since - jump);
    if (this.#unsynced > 0) {
      this.#unsynced--;
      return undefined;
    }
    // As StickyCaches.world() builds it from the caches.
    const world: StickyWorld = {
      statefulSet: (key) => c.statefulSets.get(key),
      pod: (key) => c.pods.has(key),
      virtualMachine: (key) => c.virtualMachines.has(key),
      virtualMachineInstance: (key) => c.virtualMachineInstances.has(key),
    };
    const now = Date.now();
    const bindings = new Set<string>();
    for (const pool of c.pools.values())
      for (const record of pool.allocations.values()) if (record.binding !== undefined) bindings.add(record.binding);
    for (const key of this.#given.keys()) bindings.add(bindingOfKey(key));
    for (const binding of [...this.#seenReleased.keys()])
      if (!bindings.has(binding)) this.#seenReleased.delete(binding);
    for (const binding of bindings) {
      if (bindingReleaseReason(this.#cluster.ns, binding, world) === undefined) {
        this.#seenReleased.delete(binding);
        continue;
      }
      const since = this.#seenReleased.get(binding) ?? now;
      this.#seenReleased.set(binding, since);
      if (now - since >= this.graceMs - SLACK_MS) this.#eligible.add(binding);
    }
    // --sticky all (its default): the controller judges every namespace's bindings.
    return { world, serves: () => true, graceMs: this.graceMs, firstReleasable: this.#firstReleasable };
  }

  passed(result: PassResult): void {
    this.#counts.sticky.released += result.stickyReleased;
  }

  // ---- the invariants ----

  /** The model's world, as the verdict reads it. */
  world(): StickyWorld {
    const name = (key: string): string => key.slice(key.indexOf('/') + 1);
    return {
      statefulSet: (key) => {
        const set = this.sets.get(name(key) as SetName);
        return set?.exists === true ? { uid: set.uid, replicas: set.replicas, start: 0 } : undefined;
      },
      pod: (key) => this.#cluster.pods.get(name(key))?.exists === true,
      virtualMachine: (key) => this.vms.get(name(key) as VmName)?.vm === true,
      virtualMachineInstance: (key) => (this.vms.get(name(key) as VmName)?.vmi ?? 'absent') !== 'absent',
    };
  }

  /** Why the binding holds now, for a message. */
  #holds(binding: string): string {
    const parts = binding.split('/');
    if (parts[0] === 'VirtualMachine') {
      const vm = this.vms.get(parts[1] as VmName);
      return `VM ${parts[1]}${vm?.vm === true ? ' exists' : ''}${(vm?.vmi ?? 'absent') === 'absent' ? '' : `, its VMI ${vm?.vmi}`}`;
    }
    const pod = this.#cluster.pods.get(`${parts[1]}-${parts[2]}`);
    if (pod?.exists === true) return `pod ${pod.name} exists`;
    return `StatefulSet ${parts[1]} has ${this.sets.get(parts[1] as SetName)?.replicas ?? '?'} replicas`;
  }

  /** The node's journal holds a hand-out of `ip` to an attachment of the binding whose rename is not written yet. */
  #pendingHandOut(key: string, ip: string): boolean {
    if (!this.#cluster.agents) return false;
    const binding = bindingOfKey(key);
    const ifname = key.slice(key.lastIndexOf('|') + 1);
    const value = String(parseIP(ip).value);
    return [...this.#cluster.nodes.keys()].some((short) =>
      this.#cluster
        .pendingHandOuts(short)
        .some(
          (e) =>
            e.op === 'handed-out' &&
            e.address === value &&
            e.attachment.binding === binding &&
            e.attachment.ifname === ifname,
        ),
    );
  }

  /** The pod's attachment is answered by its binding's record (a VM's other virt-launcher pod may hold it now). */
  heldForBinding(sandbox: Sandbox, ifname: string, ip: string | undefined, held: readonly Held[]): boolean {
    const expected = this.#expected.get(`${sandbox.id}|${ifname}`);
    if (expected === undefined || expected === null) return false;
    return held.some((h) => h.binding === expected && h.ifname === ifname && h.ip === ip);
  }

  /** The step invariants of sticky addresses (see the head of this file). */
  check(held: readonly Held[]): Violation[] {
    const out: Violation[] = [];
    const passes = this.#passes;
    this.#passes = 0;
    const eligible = new Set(this.#eligible);
    this.#eligible.clear();
    const world = this.world();
    const bound = held.filter((h) => h.binding !== '');
    const byKey = new Map<string, Held[]>();
    for (const h of bound) {
      const key = keyOf(h.binding, h.net, h.ifname);
      byKey.set(key, [...(byKey.get(key) ?? []), h]);
    }
    const where = (h: Held): string => `${h.podRef} ${h.containerId} (${h.ifname || 'no ifname'}) in ${h.pool}`;
    for (const [key, list] of byKey)
      if (list.length > 1)
        out.push({
          invariant: 'sticky',
          message: `binding ${key} is in ${list.length} records: ${list.map((h) => `${h.ip} -> ${where(h)}`).join('; ')}`,
        });
    for (const h of bound) {
      const expected = this.#expected.get(`${h.containerId}|${h.ifname}`);
      if (expected === undefined || expected === h.binding) continue;
      out.push({
        invariant: 'sticky',
        message: `${h.ip} is bound to ${h.binding} but held by ${where(h)}, whose pod ${expected === null ? 'binds nothing' : `binds ${expected}`}`,
      });
    }
    for (const pod of this.#cluster.pods.values()) {
      if (!keepsAddress(pod)) continue;
      const sandbox = pod.sandbox!;
      for (const a of sandbox.attachments) {
        if (!isSticky(a.net) || a.address === undefined) continue;
        const expected = this.#expected.get(`${sandbox.id}|${a.ifname}`) ?? null;
        if (expected === null) {
          const taken = bound.find((h) => h.ip === a.address && h.net === a.net);
          if (taken !== undefined)
            out.push({
              invariant: 'sticky',
              message: `pod ${pod.name} (no binding) was answered ${a.address} for ${sandbox.id} ${a.ifname}, which is bound to ${taken.binding}: ${where(taken)}`,
            });
          continue;
        }
        const key = keyOf(expected, a.net, a.ifname);
        if (!this.#given.has(key)) this.#give(key, a.address, pod.node);
        const record = byKey.get(key)?.[0];
        if (record !== undefined && record.ip !== a.address)
          out.push({
            invariant: 'sticky',
            message: `pod ${pod.name} (${expected}) was answered ${a.address} for ${sandbox.id} ${a.ifname}, but its binding's record holds ${record.ip}: ${where(record)}`,
          });
      }
    }
    for (const h of bound) {
      const key = keyOf(h.binding, h.net, h.ifname);
      if (!this.#given.has(key)) this.#give(key, h.ip);
    }
    for (const [key, given] of [...this.#given]) {
      const binding = bindingOfKey(key);
      const records = byKey.get(key) ?? [];
      if (records.some((h) => h.ip === given.ip)) continue;
      const reason = bindingReleaseReason(this.#cluster.ns, binding, world);
      if (records.length > 0) {
        out.push({
          invariant: 'sticky',
          message: `binding ${key} was given ${given.ip}, but its record now holds ${records[0]!.ip}: ${where(records[0]!)}${reason === undefined ? '' : ` (released: ${reason})`}`,
        });
        given.ip = records[0]!.ip;
        continue;
      }
      if (this.#pendingHandOut(key, given.ip)) continue;
      if (reason === undefined) {
        out.push({
          invariant: 'sticky',
          message: `binding ${key} lost: it holds (${this.#holds(binding)}), but no record of it holds ${given.ip}`,
        });
        continue;
      }
      if (passes === 0)
        out.push({
          invariant: 'sticky',
          message: `binding ${key} (${reason}) lost ${given.ip} without a controller pass`,
        });
      else if (!eligible.has(binding))
        out.push({
          invariant: 'sticky',
          message: `binding ${key} (${reason}) lost ${given.ip} before the controller's caches showed it released for its grace (${this.graceMs} ms)`,
        });
      this.#given.delete(key);
    }
    return out;
  }

  /** After quiesce: no bound record whose binding no longer holds is left. */
  leaks(held: readonly Held[]): Violation[] {
    const world = this.world();
    const out: Violation[] = [];
    for (const h of held) {
      if (h.binding === '') continue;
      const reason = bindingReleaseReason(this.#cluster.ns, h.binding, world);
      if (reason !== undefined)
        out.push({
          invariant: 'leak',
          message: `${h.ip} in ${h.pool}, bound to ${h.binding} (${h.podRef} ${h.containerId}), survived a controller pass although its binding is released (${reason}) for longer than the grace`,
        });
    }
    return out;
  }
}

// ---- generation ----

/** The name of the VM's next virt-launcher pod. */
function nextLauncher(cluster: Cluster, vm: string): string {
  return `${launcherPrefix(vm)}${[...cluster.pods.keys()].filter((k) => k.startsWith(launcherPrefix(vm))).length}`;
}

/** A set's pods' networks (its template): mostly one sticky interface; two; or an ordinary one first. */
const SET_NETS: ReadonlyArray<readonly NetId[]> = [
  ['T'],
  ['T'],
  ['T'],
  ['T'],
  ['T', 'T'],
  ['A', 'T'],
  ['U'],
  ['U'],
  ['T', 'U'],
];
const VM_NETS: ReadonlyArray<readonly NetId[]> = [['T'], ['T'], ['T'], ['T', 'T'], ['U'], ['U']];

export interface StickyGen {
  readonly prng: Prng;
  readonly cluster: Cluster;
  readonly upNodes: readonly string[];
  readonly faults: () => FaultSpec;
}

/**
 * A sticky step, mostly the first of a scenario whose other steps are planned (StickyModel.planned): a StatefulSet
 * created with its replicas, scaled, a replica deleted and created again elsewhere, a rolling update, a VM started or
 * migrated... Undefined when the state allows none of the kind drawn.
 */
export function generateSticky(g: StickyGen): Step | undefined {
  const { prng, cluster, upNodes } = g;
  if (upNodes.length === 0) return undefined;
  const m = cluster.sticky;
  const add = (pod: string): Step => ({ op: 'add', pod, faults: g.faults() });
  const node = (): string => prng.pick(upNodes);
  const elsewhere = (not: string | undefined): string => {
    const others = upNodes.filter((n) => n !== not);
    return prng.pick(others.length > 0 ? others : upNodes);
  };
  const pod = (name: string): PodModel | undefined => {
    const p = cluster.pods.get(name);
    return p?.exists === true ? p : undefined;
  };
  const replicasOf = (set: string): PodModel[] =>
    [...cluster.pods.values()].filter((p) => p.exists && p.workload?.kind === 'StatefulSet' && p.workload.name === set);
  const plan = (first: Step, ...rest: Array<Step | (() => Step | undefined)>): Step => {
    m.planned.unshift(...rest);
    return first;
  };
  /** The pod's deletion as its kubelet finishes it: graceful, then gone. */
  const gone = (name: string, force: boolean): Step[] =>
    force
      ? [{ op: 'pod-delete', pod: name, graceful: false }]
      : [
          { op: 'pod-delete', pod: name, graceful: true },
          { op: 'pod-delete', pod: name, graceful: true },
        ];
  const liveSets = SETS.filter((s) => m.sets.get(s)?.exists === true);
  const r = prng.next();
  if (r < 0.1) {
    const absent = SETS.filter((s) => m.sets.get(s)?.exists !== true);
    if (absent.length === 0) return undefined;
    const set = prng.pick(absent);
    const replicas = 1 + prng.int(MAX_REPLICAS);
    const rest: Step[] = [];
    for (let n = 0; n < replicas; n++) {
      const name = replicaName(set, n);
      if (pod(name) !== undefined) continue; // an orphan to adopt, or a pod under its name
      rest.push({ op: 'replica-create', set, ordinal: n, node: node() }, add(name));
    }
    // Orphans of a predecessor beyond the new replicas: adopted, then scaled away.
    for (const p of cluster.pods.values())
      if (p.exists && m.isOrphanOf(p, set) && Number(p.name.slice(set.length + 1)) >= replicas)
        rest.push(...gone(p.name, false));
    return plan(
      {
        op: 'sts-create',
        set,
        replicas,
        nets: prng.pick(SET_NETS),
        ...(prng.chance(0.1) ? { optOut: true } : {}),
      },
      ...rest,
    );
  }
  if (r < 0.18) {
    if (liveSets.length === 0) return undefined;
    const set = prng.pick(liveSets);
    const from = m.sets.get(set)!.replicas;
    const to = prng.int(MAX_REPLICAS + 1);
    if (to === from) return undefined;
    const rest: Step[] = [];
    if (to < from) {
      for (let n = from - 1; n >= to; n--)
        if (pod(replicaName(set, n)) !== undefined) rest.push(...gone(replicaName(set, n), false));
    } else {
      for (let n = from; n < to; n++)
        if (pod(replicaName(set, n)) === undefined)
          rest.push({ op: 'replica-create', set, ordinal: n, node: node() }, add(replicaName(set, n)));
    }
    return plan({ op: 'sts-scale', set, replicas: to }, ...rest);
  }
  if (r < 0.26) {
    // The StatefulSet controller makes a replica that is missing (deleted, its node gone): on any node.
    const missing: Array<[SetName, number]> = [];
    for (const set of liveSets)
      for (let n = 0; n < m.sets.get(set)!.replicas; n++)
        if (pod(replicaName(set, n)) === undefined) missing.push([set, n]);
    if (missing.length === 0) return undefined;
    const [set, n] = prng.pick(missing);
    const before = cluster.pods.get(replicaName(set, n))?.node;
    return plan({ op: 'replica-create', set, ordinal: n, node: elsewhere(before) }, add(replicaName(set, n)));
  }
  if (r < 0.35) {
    // A replica deleted (by hand, evicted, its node drained) and created again with a new UID, elsewhere.
    const replicas = liveSets.flatMap(replicasOf);
    if (replicas.length === 0) return undefined;
    const p = prng.pick(replicas);
    const set = p.workload!.name as SetName;
    const n = Number(p.name.slice(set.length + 1));
    const [first, ...rest] = gone(p.name, prng.chance(0.4));
    const again: Step[] =
      n < m.sets.get(set)!.replicas
        ? [{ op: 'replica-create', set, ordinal: n, node: elsewhere(p.node) }, add(p.name)]
        : [];
    return plan(first!, ...rest, ...again);
  }
  if (r < 0.39) {
    // A rolling update: each replica in turn, the highest ordinal first, deleted and created again.
    if (liveSets.length === 0) return undefined;
    const set = prng.pick(liveSets);
    const steps: Step[] = [];
    for (let n = m.sets.get(set)!.replicas - 1; n >= 0; n--) {
      const name = replicaName(set, n);
      const p = pod(name);
      if (p === undefined || p.workload?.name !== set) continue;
      steps.push(...gone(name, false), { op: 'replica-create', set, ordinal: n, node: node() }, add(name));
    }
    const [first, ...rest] = steps;
    return first === undefined ? undefined : plan(first, ...rest);
  }
  if (r < 0.43) {
    if (liveSets.length === 0) return undefined;
    const set = prng.pick(liveSets);
    const orphan = prng.chance(0.3);
    // The garbage collector's deletions are graceful: their kubelets finish them.
    const rest = orphan ? [] : replicasOf(set).map((p): Step => ({ op: 'pod-delete', pod: p.name, graceful: true }));
    return plan({ op: 'sts-delete', set, orphan }, ...rest);
  }
  if (r < 0.48) {
    // A pod no StatefulSet made takes a replica's name (sometimes naming a set as its controller all the same).
    const set = prng.pick(SETS);
    const name = replicaName(set, prng.int(MAX_REPLICAS));
    if (cluster.pods.get(name)?.exists === true) return undefined;
    const owner = prng.chance(0.2) ? prng.pick(SETS.filter((s) => s !== set)) : undefined;
    return plan(
      {
        op: 'bare-create',
        pod: name,
        node: node(),
        nets: [prng.chance(0.7) ? 'T' : 'U'],
        ...(owner === undefined ? {} : { owner }),
      },
      add(name),
    );
  }
  /** A live migration: the target pod on another node ADDs while the source runs; then the source ends. */
  const migrate = (vm: VmName): Step | undefined => {
    const sources = m.launchersOf(vm).filter((p) => keepsAddress(p));
    if (m.vms.get(vm)?.vmi !== 'running' || sources.length !== 1) return undefined;
    const source = sources[0]!;
    const name = nextLauncher(cluster, vm);
    // The source's sandbox joins its kubelet's pending DELs when it ends: that one is DELed.
    const pick = cluster.nodes.get(source.node)?.pendingDels.length ?? 0;
    const target = add(name);
    // Sometimes a controller pass right before the target's pool write.
    const targetAdd: Step = prng.chance(0.2)
      ? {
          op: 'interleave',
          main: target,
          at: { on: 'pool-write', nth: 0 },
          other: { op: 'controller', stale: [], faults: g.faults() },
        }
      : target;
    return plan(
      { op: 'launcher-create', vm, pod: name, node: elsewhere(source.node) },
      targetAdd,
      { op: 'pod-terminate', pod: source.name, phase: 'Succeeded', del: true },
      { op: 'del', node: source.node, pick, faults: g.faults() },
      ...gone(source.name, prng.chance(0.5)),
      // And back again, some time.
      () => (prng.chance(0.3) ? migrate(vm) : undefined),
    );
  };
  if (r < 0.6) {
    const vm = prng.pick(VMS);
    const state = m.vms.get(vm);
    const name = nextLauncher(cluster, vm);
    // Once it runs, a live migration may follow (a node drained).
    const start: Step = { op: 'launcher-create', vm, pod: name, node: node() };
    const launch = [start, add(name), () => (prng.chance(0.6) ? migrate(vm) : undefined)];
    if (state?.vm !== true) return plan({ op: 'vm-create', vm, nets: prng.pick(VM_NETS) }, ...launch);
    if (state.vmi === 'absent') return plan({ op: 'vm-start', vm }, ...launch);
    // A running VMI whose virt-launcher pod is gone (its node left): another one.
    if (state.vmi === 'running' && m.launchersOf(vm).length === 0) return plan(start, ...launch.slice(1));
    return migrate(vm);
  }
  if (r < 0.74) return migrate(prng.pick(VMS));
  if (r < 0.78) {
    const candidates = VMS.filter((vm) => m.vms.get(vm)?.vmi === 'running' || m.vms.get(vm)?.vm === true);
    if (candidates.length === 0) return undefined;
    const vm = prng.pick(candidates);
    const rest = m.launchersOf(vm).map((p): Step => ({ op: 'pod-delete', pod: p.name, graceful: true }));
    return plan({ op: prng.chance(0.5) ? 'vm-stop' : 'vm-delete', vm }, ...rest);
  }
  if (r < 0.84) return { op: 'controller-restart', graceMs: prng.pick(GRACES), unsynced: prng.chance(0.3) };
  if (r < 0.87)
    return { op: 'gc', node: node(), net: prng.chance(0.7) ? 'T' : 'U', stale: prng.chance(0.5), faults: g.faults() };
  if (r < 0.89) {
    // Network U's NodeSlicePool deleted by hand, or its NAD deleted (the garbage collector takes the NodeSlicePool)
    // and created again: the controller builds it again around the slices its pools hold, the sticky area's too.
    if (!cluster.networks.nads.has('U')) return { op: 'nad-create', net: 'U' };
    const pass = (): Step => ({ op: 'controller', stale: [], faults: g.faults() });
    return prng.chance(0.5)
      ? plan({ op: 'nsp-delete', net: 'U' }, pass())
      : plan({ op: 'nad-delete', net: 'U' }, pass(), { op: 'nad-create', net: 'U' }, pass());
  }
  // A controller pass inside a sticky pod's ADD (right before its pool write, or one of its first requests).
  const sticky = [...cluster.pods.values()].filter(
    (p) =>
      p.exists &&
      p.binding !== undefined &&
      p.phase !== 'Succeeded' &&
      p.phase !== 'Failed' &&
      upNodes.includes(p.node),
  );
  if (sticky.length === 0) return undefined;
  const at = prng.chance(0.6) ? { on: 'pool-write' as const, nth: 0 } : { on: 'request' as const, nth: prng.int(4) };
  return {
    op: 'interleave',
    main: add(prng.pick(sticky).name),
    at,
    other: { op: 'controller', stale: [], faults: g.faults() },
  };
}
