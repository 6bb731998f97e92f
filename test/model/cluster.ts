// A simulated cluster: nodes (each running hereabouts, or the real Whereabouts as whereabouts.ts simulates it, per
// CNI call: attach.ts), a kubelet per node (pending DELs), pods with one or more Multus attachments, the networks'
// NADs (networks.ts), hereabouts' controller and Whereabouts' reconciler, against one API (in-memory or a real
// control plane). Beside it, the reference model: which sandbox of which pod was given which address on which
// interface. Steps whose preconditions no longer hold (after shrinking) are skipped.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { WarmGatePublisher } from '../../src/controller/runtime/warm-gate.ts';
import { jsonLog } from '../../src/log/json-log.ts';
import { WARM_ALLOWED } from '../../src/store/kubernetes/objects.ts';
import { Journal, JOURNAL_FILE, type HandOut } from '../../src/store/kubernetes/warm/journal.ts';
import { NodeSlices } from '../../src/controller/slices/node-slices.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import {
  addSandbox,
  attached,
  delSandbox,
  gcNetwork,
  unattachable,
  type AttachContext,
  type Caller,
  type Sandbox,
} from './attach.ts';
import { controllerPass, defaultFlags, SimulatedInformers, type Resource } from './controller-pass.ts';
import { Killed, NO_FAULTS, type FaultCounts, type FaultSpec } from './faults.ts';
import type { Violation } from './invariants.ts';
import { Interleaving } from './interleave.ts';
import { makeLegacy } from './legacy.ts';
import { stallHoldingLock } from './lock-view.ts';
import { Networks } from './networks.ts';
import { errorLine, Processes } from './processes.ts';
import { ClaimsModel } from './claims.ts';
import { StickyModel, type PodMeta } from './sticky.ts';
import { NETS, type Binary, type DisruptionReason, type NetId, type Step } from './steps.ts';
import { advanceClock } from './virtual-clock.ts';
import { whereaboutsReconcile } from './whereabouts-reconciler.ts';

export type { Attachment, Sandbox } from './attach.ts';

const silentLog = jsonLog({ level: 'error', write: () => undefined });

export interface PodModel {
  readonly name: string;
  readonly uid: string;
  readonly node: string;
  /** One attachment per network, net1 first. */
  readonly nets: readonly NetId[];
  exists: boolean;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  terminating: boolean;
  disruption?: DisruptionReason;
  sandbox?: Sandbox;
  /** Container ids of this pod's sandboxes (not its predecessors' of the same name). */
  readonly sandboxes: Set<string>;
  /** An earlier pod had this name. */
  readonly reusedName: boolean;
  /**
   * Sticky addresses (sticky.ts): the workload whose pod this is (a StatefulSet's replica, a VM's virt-launcher pod),
   * and the binding the model expects its attachments on a sticky network to get now (none: an ordinary pod). Both
   * change when a StatefulSet deleted with --cascade=orphan lets its pods go, or a new one adopts them.
   */
  workload?: { readonly kind: 'StatefulSet' | 'VirtualMachine'; readonly name: string };
  binding?: string;
}

export interface NodeModel {
  readonly name: string;
  up: boolean;
  readonly pendingDels: Sandbox[];
  lastAdd?: Sandbox;
  /** The CNI IPAM binary the node runs now. */
  binary: Binary;
}

export interface ClusterOptions {
  /** The unfaulted client: the model's own reads and the set-up writes. */
  readonly api: ApiClient;
  readonly workDir: string;
  /** Prefixes node names (a shared control plane has other tests' nodes). */
  readonly nodePrefix: string;
  readonly counts: FaultCounts;
  readonly nodes: readonly string[];
  /** Makes a namespace exist (the tenant's); the in-memory API server needs none. */
  readonly createNamespace?: (name: string) => Promise<void>;
}

export class Cluster {
  readonly api: ApiClient;
  readonly ns: string;
  readonly pods = new Map<string, PodModel>();
  readonly nodes = new Map<string, NodeModel>();
  readonly networks: Networks;
  /** Records a Whereabouts ADD left without its reservation ("pool|ip|container|ifname"): its in-flight window. */
  readonly whereaboutsWindow = new Set<string>();
  /** Containers whose DEL Whereabouts answered, done or not (it ignores errors): their records may stay. */
  readonly whereaboutsDeleted = new Set<string>();
  /**
   * Reservations Whereabouts' reconciler deleted (by name): it judges a live pod's fresh reservation by a snapshot
   * taken before that pod's ADD. Not covered (docs/safety.md: remove the reconciler before a switch); the record is
   * exempt from the reservation check until the reservation exists again (the controller's repair), and from the
   * duplicate check only against a record of an overlapping pool (an ADD there found the address unreserved).
   */
  readonly reconcilerDeleted = new Set<string>();
  /** Addresses two overlapping pools came to hold after the reconciler deleted the reservation (see above). */
  readonly reconcilerShared = new Set<string>();
  /** Attachments whose hereabouts ADD was killed ("container|ifname"): see AttachContext.crashWindow. */
  readonly crashWindow = new Set<string>();
  /** Attachments a hereabouts DEL answered with success ("container|ifname"): see AttachContext.deleted. */
  readonly deleted = new Set<string>();
  /** What the model saw happen that the API cannot show (a lock taken from a live holder): for the next check. */
  readonly observed: Violation[] = [];
  sliceSize = NETS.S.slice ?? 28;
  epoch = 0;
  readonly #o: ClusterOptions;
  readonly #informers: SimulatedInformers;
  readonly #slices: NodeSlices;
  readonly #flags = defaultFlags();
  /** The controller's memory of records seen missing their reservation, kept across passes as it keeps it. */
  readonly #firstMissing = new Map<string, number>();
  readonly #interleaving = new Interleaving();
  readonly #processes: Processes;
  readonly #attach: AttachContext;
  /** IPAddressClaims and PrefixClaims (claims.ts). */
  readonly claims: ClaimsModel;
  /** StatefulSets, VMs and the sticky addresses bound to them (sticky.ts). */
  readonly sticky: StickyModel;
  #seq = 0;

  constructor(options: ClusterOptions) {
    this.#o = options;
    this.api = options.api;
    this.ns = options.api.namespace;
    this.networks = new Networks({
      api: options.api,
      tenantNamespace: `${this.ns}-tenant`,
      createNamespace: options.createNamespace ?? (() => Promise.resolve()),
      config: (net) => this.request(net),
    });
    const ours = (key: string): boolean => key.startsWith(options.nodePrefix);
    const nadNamespaces = this.networks.nadNamespaces();
    this.#informers = new SimulatedInformers((resource, key) => {
      if (resource === 'nodes') return ours(key);
      if (resource === 'nads') return nadNamespaces.some((ns) => key.startsWith(`${ns}/`));
      return true;
    });
    // The drain grace runs on the monotonic clock, which the model's virtual clock does not move: none here.
    this.#slices = new NodeSlices(options.api, { drainGraceMs: 0 });
    this.#processes = new Processes({
      api: options.api,
      workDir: options.workDir,
      counts: options.counts,
      hooks: () => this.#interleaving.hooks(),
    });
    this.claims = new ClaimsModel(options.api, this.#processes, options.counts);
    this.sticky = new StickyModel(this, options.counts);
    this.#attach = {
      api: options.api,
      processes: this.#processes,
      whereaboutsWindow: this.whereaboutsWindow,
      whereaboutsDeleted: this.whereaboutsDeleted,
      crashWindow: this.crashWindow,
      deleted: this.deleted,
    };
    for (const name of options.nodes)
      this.nodes.set(name, { name: this.nodeName(name), up: false, pendingDels: [], binary: 'hereabouts' });
  }

  nodeName(short: string): string {
    return `${this.#o.nodePrefix}${short}`;
  }

  podRef(pod: string): string {
    return `${this.ns}/${pod}`;
  }

  /** Node agents with warm sets serve the nodes' hereabouts calls (set before setup(); no Whereabouts runs then). */
  useAgents(backgroundFaultRate: number): void {
    this.#processes.useAgents(backgroundFaultRate);
  }

  get agents(): boolean {
    return this.#processes.agents;
  }

  /** The sequence is over: the agents stop. */
  closeAgents(): Promise<void> {
    return this.#processes.closeAgents();
  }

  /** Until the agents' grouped writes are done (what keeps failing stays pending, in their journals). */
  settleAgents(): Promise<void> {
    return this.#processes.settleAgents();
  }

  /** The hand-outs the node's journal holds as pending (read from its file, as a new agent would replay it). */
  pendingHandOuts(short: string): HandOut[] {
    const dir = this.#processes.journalDir(short);
    if (!existsSync(join(dir, JOURNAL_FILE))) return [];
    const journal = Journal.open(dir);
    try {
      return journal.pending();
    } finally {
      journal.close();
    }
  }

  /** The controller's word on warm sets, renewed as the controller does on every pass. */
  async #renewWarmGate(api: ApiClient): Promise<void> {
    if (!this.#processes.agents) return;
    await new WarmGatePublisher(api, 'model-controller', silentLog).publish(WARM_ALLOWED);
  }

  /** NADs for every network, the first nodes, and a pass that gives them slices. */
  async setup(initialNodes: readonly string[]): Promise<void> {
    await this.#renewWarmGate(this.api);
    for (const net of Object.values(NETS)) await this.networks.create(net.id);
    await this.claims.setup();
    for (const node of initialNodes) await this.run({ op: 'node-join', node, wipe: true });
    await this.pass(NO_FAULTS, []);
  }

  /** The network config Multus hands the IPAM binary (the NADs say "whereabouts": the name both binaries go by). */
  request(net: NetId): Record<string, unknown> {
    const def = NETS[net];
    const ipam: Record<string, unknown> = {
      type: 'whereabouts',
      range: def.range,
      enable_overlapping_ranges: def.overlapping,
      kubernetes: { kubeconfig: '/nonexistent/kubeconfig' },
      ...(def.networkName === undefined ? {} : { network_name: def.networkName }),
      ...(def.slice === undefined ? {} : { node_slice_size: `/${net === 'S' ? this.sliceSize : def.slice}` }),
      ...(def.sticky === true ? { sticky: true } : {}),
    };
    return { cniVersion: '1.1.0', name: def.cniName, type: 'macvlan', master: 'eth0', ipam };
  }

  async #write(
    method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<number> {
    const res = await this.api.send({
      method,
      path: path.replace('/NS/', `/${encodeURIComponent(this.ns)}/`),
      ...(body === undefined ? {} : { body }),
      ...(contentType === undefined ? {} : { contentType }),
    });
    if (res.status >= 300 && res.status !== 404 && res.status !== 409)
      throw new Error(`model set-up: ${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.status;
  }

  #patchPod(pod: string, body: unknown, status = false): Promise<number> {
    return this.#write(
      'PATCH',
      `/api/v1/namespaces/NS/pods/${pod}${status ? '/status' : ''}`,
      body,
      'application/merge-patch+json',
    );
  }

  /** Runs one step; resolves to what happened (for the report). Never throws for a product failure. */
  async run(step: Step): Promise<string> {
    switch (step.op) {
      case 'parallel': {
        const outcomes = await Promise.all(step.steps.map((s) => this.run(s)));
        return outcomes.join(' | ');
      }
      case 'interleave':
        return this.#interleaving.run(
          () => this.run(step.main),
          step.at,
          () => this.run(step.other),
        );
      case 'time':
        advanceClock(step.ms);
        this.epoch++;
        return `clock +${step.ms} ms`;
      case 'node-join': {
        const node = this.nodes.get(step.node);
        if (node === undefined || node.up) return 'skip';
        if (step.wipe) {
          // A new machine: no cache, no journal.
          this.#processes.killAgent(step.node);
          rmSync(this.#processes.cacheDir(step.node), { recursive: true, force: true });
          rmSync(this.#processes.journalDir(step.node), { recursive: true, force: true });
        }
        await this.#write('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node.name } });
        node.up = true;
        return 'joined';
      }
      case 'node-leave': {
        const node = this.nodes.get(step.node);
        if (node === undefined || !node.up) return 'skip';
        node.up = false;
        node.pendingDels.length = 0;
        this.#processes.killAgent(step.node); // its machine is gone; its disk may come back (node-join)
        await this.#write('DELETE', `/api/v1/nodes/${node.name}`);
        for (const pod of this.pods.values()) {
          if (pod.node !== step.node || !pod.exists) continue;
          await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${pod.name}?gracePeriodSeconds=0`);
          pod.exists = false;
          delete pod.sandbox;
        }
        return 'left';
      }
      case 'pod-create':
        return this.#createPod(step.pod, step.node, step.nets ?? (step.net === undefined ? ['A'] : [step.net]));
      case 'add':
        return this.#add(step.pod, step.faults);
      case 'stall':
        return this.#stall(step);
      case 'del':
        return this.#del(step.node, step.pick, step.faults);
      case 'gc':
        return this.#gc(step.node, step.net, step.stale, step.faults);
      case 'controller':
        return this.pass(step.faults, step.stale);
      case 'pod-delete':
        return this.#deletePod(step.pod, step.graceful);
      case 'pod-evict':
        return this.#evict(step.pod, step.reason);
      case 'pod-terminate': {
        const pod = this.#live(step.pod);
        if (pod === undefined) return 'skip';
        await this.#patchPod(pod.name, { status: { phase: step.phase } }, true);
        pod.phase = step.phase;
        this.#teardown(pod, step.del);
        return step.phase;
      }
      case 'reslice': {
        if (step.size === this.sliceSize || !this.networks.nads.has('S')) return 'skip';
        this.sliceSize = step.size;
        const path = `/apis/k8s.cni.cncf.io/v1/namespaces/NS/network-attachment-definitions/${NETS.S.cniName}`;
        const spec = this.networks.nadBody('S')['spec'];
        await this.#write('PATCH', path, { spec }, 'application/merge-patch+json');
        return `node_slice_size /${step.size}`;
      }
      case 'claim-create':
      case 'claim-reconcile':
      case 'claim-delete':
      case 'claim-unfinalize':
        return this.claims.run(step);
      case 'controller-restart':
        // A new controller process: nothing it remembered (records seen without their reservation, bindings seen
        // released) survives.
        this.#firstMissing.clear();
        return this.sticky.run(step);
      case 'sts-create':
      case 'sts-scale':
      case 'sts-delete':
      case 'replica-create':
      case 'bare-create':
      case 'vm-create':
      case 'vm-start':
      case 'vm-stop':
      case 'vm-delete':
      case 'launcher-create':
        return this.sticky.run(step);
      case 'nad-delete':
        return this.networks.delete(step.net);
      case 'nad-create':
        return this.networks.create(step.net);
      case 'nsp-delete':
        return this.networks.deleteNodeSlicePool(step.net);
      case 'tenant-nad':
        return this.networks.setTenant(step.size);
      case 'switch': {
        const node = this.nodes.get(step.node);
        if (node === undefined || node.binary === step.binary) return 'skip';
        node.binary = step.binary;
        return `runs ${step.binary}`;
      }
      case 'wb-reconcile': {
        const outcome = await this.#processes.whereabouts(step.faults, (api) =>
          whereaboutsReconcile(api, (name) => this.reconcilerDeleted.add(name)),
        );
        return outcome.ok ? outcome.value : `failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`;
      }
      case 'legacy': {
        const pod = this.#live(step.pod);
        const sandbox = pod?.sandbox;
        if (pod === undefined || sandbox === undefined || !attached(sandbox)) return 'skip';
        return makeLegacy(this.api, this.podRef(pod.name), sandbox);
      }
    }
  }

  #live(name: string): PodModel | undefined {
    const pod = this.pods.get(name);
    if (pod === undefined || !pod.exists || pod.phase === 'Succeeded' || pod.phase === 'Failed') return undefined;
    return this.nodes.get(pod.node)?.up === true ? pod : undefined;
  }

  /** A pod made by a workload (sticky.ts): its owner reference, labels and annotations. */
  createPod(name: string, short: string, nets: readonly NetId[], meta: PodMeta): Promise<string> {
    return this.#createPod(name, short, nets, meta);
  }

  /** The pod's deletion, as a pod-delete step does it. */
  deletePod(name: string, graceful: boolean): Promise<string> {
    return this.#deletePod(name, graceful);
  }

  async #createPod(name: string, short: string, nets: readonly NetId[], meta?: PodMeta): Promise<string> {
    const node = this.nodes.get(short);
    const old = this.pods.get(name);
    if (node === undefined || !node.up || old?.exists === true) return 'skip';
    // A pod that takes the name of a deleted one is created by its controller seconds after the old one went at the
    // earliest (the controller sees the deletion, the pod GC runs every 20 s): the API's whole-second timestamps then
    // tell the two apart, which the controller's rule for uid-less records relies on (orphans.ts, CLOCK_SLACK_MS).
    if (old !== undefined) advanceClock(5_000);
    const res = await this.api.send({
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(this.ns)}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, ...(meta?.metadata ?? {}) },
        spec: { nodeName: node.name, containers: [{ name: 'c', image: 'busybox' }] },
      },
    });
    if (res.status !== 201) throw new Error(`model: create pod ${name}: HTTP ${res.status}`);
    const uid = (res.body as { metadata: { uid: string } }).metadata.uid;
    this.pods.set(name, {
      name,
      uid,
      node: short,
      nets,
      exists: true,
      phase: 'Pending',
      terminating: false,
      sandboxes: new Set(),
      reusedName: old !== undefined,
      ...(meta?.workload === undefined ? {} : { workload: meta.workload }),
      ...(meta?.binding === undefined ? {} : { binding: meta.binding }),
    });
    return `created (uid ${uid.slice(0, 8)})`;
  }

  async #evict(name: string, reason: DisruptionReason): Promise<string> {
    const pod = this.#live(name);
    // A pod already being deleted for a disruption keeps that condition: evicting it again changes nothing.
    if (pod === undefined || (pod.terminating && pod.disruption !== undefined)) return 'skip';
    const condition = {
      type: 'DisruptionTarget',
      status: 'True',
      reason,
      message: `model: ${reason}`,
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    await this.#patchPod(pod.name, { status: { conditions: [condition] } }, true);
    pod.disruption = reason;
    // The kubelet's own terminations leave the pod object; the others delete it gracefully.
    if (reason !== 'TerminationByKubelet' && !pod.terminating) {
      await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${pod.name}`);
      pod.terminating = true;
    }
    return 'disrupted';
  }

  /** The pod's sandbox goes; its kubelet will send DEL for it (unless the runtime lost it). */
  #teardown(pod: PodModel, del: boolean): void {
    const sandbox = pod.sandbox;
    delete pod.sandbox;
    const node = this.nodes.get(pod.node);
    if (sandbox !== undefined && del && node?.up === true) node.pendingDels.push(sandbox);
  }

  async #deletePod(name: string, graceful: boolean): Promise<string> {
    const pod = this.pods.get(name);
    if (pod === undefined || !pod.exists) return 'skip';
    if (graceful && !pod.terminating) {
      await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${name}`);
      pod.terminating = true;
      return 'terminating';
    }
    this.#teardown(pod, true);
    await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${name}?gracePeriodSeconds=0`);
    pod.exists = false;
    return 'deleted';
  }

  async #add(name: string, faults: FaultSpec, log?: Caller['log']): Promise<string> {
    const pod = this.#live(name);
    if (pod === undefined) return 'skip';
    const node = this.nodes.get(pod.node)!;
    const binary = node.binary;
    const why = await unattachable(this.api, { ...pod, podRef: this.podRef(pod.name) }, binary, this.networks.nads);
    if (why !== undefined) return `skip: ${why}`;
    this.#teardown(pod, true);
    const id = `c${this.#seq++}-${pod.name}`;
    const sandbox: Sandbox = {
      id,
      pod: pod.name,
      uid: pod.uid,
      attachments: pod.nets.map((net, i) => ({
        ifname: `net${i + 1}`,
        net,
        request: this.request(net),
        ok: false,
        legacy: false,
      })),
      epoch: this.epoch,
    };
    pod.sandbox = sandbox;
    pod.sandboxes.add(id);
    node.lastAdd = sandbox;
    this.sticky.adding(pod, sandbox);
    const caller: Caller = {
      short: pod.node,
      node: node.name,
      binary,
      podRef: this.podRef(pod.name),
      podUid: pod.uid,
      ...(log === undefined ? {} : { log }),
    };
    const result = await addSandbox(this.#attach, caller, sandbox, faults);
    if (!result.ok) {
      // The runtime tears the failed sandbox down: DEL follows.
      if (pod.sandbox === sandbox) this.#teardown(pod, true);
      return `${binary}: ${result.outcome}`;
    }
    const status = sandbox.attachments.map((a) => ({
      name: `${this.ns}/${NETS[a.net].cniName}`,
      interface: a.ifname,
      ips: [a.address],
    }));
    await this.#patchPod(pod.name, {
      metadata: { annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify(status) } },
    });
    await this.#patchPod(pod.name, { status: { phase: 'Running' } }, true);
    if (pod.phase === 'Pending') pod.phase = 'Running';
    this.sticky.added(pod, sandbox);
    return `${binary}: got ${sandbox.attachments.map((a) => a.address).join(', ')} (${id})`;
  }

  /** Two ADDs of one node's pool at once, the first stalled holding the lock (lock-view.ts). */
  async #stall(step: Extract<Step, { op: 'stall' }>): Promise<string> {
    const [a, b] = [this.#live(step.holder), this.#live(step.waiter)];
    if (a === undefined || b === undefined || a === b || a.node !== b.node) return 'skip';
    if (this.nodes.get(a.node)?.binary !== 'hereabouts') return 'skip';
    const { outcome, violation } = await stallHoldingLock({
      where: a.node,
      holder: a.name,
      waiter: b.name,
      cacheDir: this.#processes.cacheDir(a.node),
      split: step.split === true,
      hold: () => this.#add(a.name, { ...step.faults, stallMs: step.ms }),
      wait: (log) => this.#add(b.name, step.faults, log),
      age: () => {
        if (step.agedMs === undefined) return;
        advanceClock(step.agedMs);
        this.epoch++;
      },
    });
    if (violation !== undefined) this.observed.push(violation);
    return outcome;
  }

  async #del(short: string, pick: number, faults: FaultSpec): Promise<string> {
    const node = this.nodes.get(short);
    if (node === undefined || !node.up || node.pendingDels.length === 0) return 'skip';
    const sandbox = node.pendingDels[pick % node.pendingDels.length]!;
    const pod = this.pods.get(sandbox.pod);
    const caller: Caller = {
      short,
      node: node.name,
      binary: node.binary,
      podRef: this.podRef(sandbox.pod),
      ...(pod?.uid === sandbox.uid ? { podUid: pod.uid } : {}),
    };
    const { done, outcome } = await delSandbox(this.#attach, caller, sandbox, faults);
    if (done) node.pendingDels.splice(node.pendingDels.indexOf(sandbox), 1);
    return `${node.binary}: ${outcome}`;
  }

  async #gc(short: string, net: NetId, stale: boolean, faults: FaultSpec): Promise<string> {
    const node = this.nodes.get(short);
    if (node === undefined || !node.up || node.binary !== 'hereabouts') return 'skip';
    const live = [...this.pods.values()]
      .filter((p) => p.exists && p.node === short && p.sandbox !== undefined)
      .map((p) => p.sandbox!);
    // A snapshot taken just before the node's latest ADD (in the same instant of wall-clock time) misses it.
    const missed = stale && node.lastAdd !== undefined && node.lastAdd.epoch === this.epoch ? node.lastAdd : undefined;
    const valid = live
      .filter((s) => s !== missed)
      .flatMap((s) => s.attachments.map((a) => ({ containerID: s.id, ifname: a.ifname })));
    const outcome = await gcNetwork(this.#attach, { short, node: node.name }, this.request(net), valid, faults);
    if (!outcome.ok) return `GC failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`;
    return `GC done${missed === undefined ? '' : ` (snapshot without ${missed.id})`}`;
  }

  /** A controller pass (the controller's own process: faults and kills apply to its requests). */
  async pass(faults: FaultSpec, stale: readonly Resource[]): Promise<string> {
    const api = this.#processes.faulty(faults);
    try {
      await this.#renewWarmGate(this.#o.api);
      // The claims' record pass first (it runs on its own queue in the controller), on the pools listed now: the
      // reservations of what it releases are then judged by this pass's cleanup.
      await this.claims.recordPass(api, this.#o.api);
      const caches = await this.#informers.refresh(this.#o.api, new Set(stale));
      const sticky = this.sticky.passInput(caches);
      const result = await controllerPass(api, caches, this.#flags, this.#slices, this.#firstMissing, sticky);
      this.sticky.passed(result);
      const bound = result.stickyReleased > 0 ? ` (${result.stickyReleased} sticky)` : '';
      return `released ${result.released}${bound}, reservations deleted ${result.reservationsDeleted}`;
    } catch (err) {
      if (!(err instanceof Killed) && faults.rate === 0 && faults.kill === undefined) throw err;
      return `pass failed${api.dead ? ' (killed)' : ''}: ${errorLine(err)}`;
    }
  }

  /** Faults have stopped: every kubelet retries its DELs, time passes beyond every grace period, one pass runs. */
  async quiesce(): Promise<string[]> {
    const problems: string[] = [];
    for (const [short, node] of this.nodes) {
      while (node.up && node.pendingDels.length > 0) {
        const before = node.pendingDels.length;
        const outcome = await this.#del(short, 0, NO_FAULTS);
        if (node.pendingDels.length === before) {
          problems.push(`kubelet DEL without faults failed on ${short}: ${outcome}`);
          node.pendingDels.shift();
        }
      }
    }
    // The agents' grouped writes land once the API answers again.
    await this.#processes.settleAgents(0);
    advanceClock(2 * 3600_000);
    this.epoch++;
    await this.claims.quiesce();
    // A binding released by now is seen so by one pass, and released by the next once its grace is over.
    if (this.sticky.used) {
      this.sticky.synced();
      await this.pass(NO_FAULTS, []);
      advanceClock(this.sticky.graceMs + 1_000);
      this.epoch++;
    }
    await this.pass(NO_FAULTS, []);
    return problems;
  }
}
