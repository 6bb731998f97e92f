// A simulated cluster: nodes (each a KubernetesStore per CNI invocation, with its own cache dir and node name,
// running the real verb handlers), a kubelet per node (pending DELs), pods, and the controller, against one API
// (in-memory or a real control plane). Beside it, the reference model: which sandbox of which pod was given which
// address. Steps whose preconditions no longer hold (after shrinking) are skipped.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseCniArgs, type CniArgs } from '../../src/cni/args.ts';
import { cmdAdd } from '../../src/cni/verbs/add.ts';
import { cmdDel } from '../../src/cni/verbs/del.ts';
import { cmdGc } from '../../src/cni/verbs/gc.ts';
import type { Logger } from '../../src/log/logger.ts';
import { parseNetworkConfig } from '../../src/config/parse.ts';
import { NodeSlices } from '../../src/controller/slices/node-slices.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { WriteMemory } from '../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../src/store/kubernetes/kubernetes-store.ts';
import { controllerPass, defaultFlags, SimulatedInformers, type Resource } from './controller-pass.ts';
import { FaultyApi, Killed, NO_FAULTS, type FaultCounts, type FaultSpec } from './faults.ts';
import { NETS, type DisruptionReason, type NetId, type Step } from './steps.ts';
import { advanceClock } from './virtual-clock.ts';

export interface Sandbox {
  readonly id: string;
  readonly pod: string;
  readonly uid: string;
  /** The network config of its ADD: Multus hands the same to its DEL. */
  readonly request: Record<string, unknown>;
  readonly net: NetId;
  ok: boolean;
  address?: string;
  /** Clock epoch of its ADD (a 'time' step starts a new one). */
  epoch: number;
}

export interface PodModel {
  readonly name: string;
  readonly uid: string;
  readonly node: string;
  readonly net: NetId;
  exists: boolean;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  terminating: boolean;
  disruption?: DisruptionReason;
  sandbox?: Sandbox;
}

export interface NodeModel {
  readonly name: string;
  up: boolean;
  readonly pendingDels: Sandbox[];
  lastAdd?: Sandbox;
}

const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warning: () => undefined,
  error: () => undefined,
};

export interface ClusterOptions {
  /** The unfaulted client: the model's own reads and the set-up writes. */
  readonly api: ApiClient;
  readonly workDir: string;
  /** Prefixes node names (a shared control plane has other tests' nodes). */
  readonly nodePrefix: string;
  readonly counts: FaultCounts;
  readonly nodes: readonly string[];
}

export class Cluster {
  readonly api: ApiClient;
  readonly ns: string;
  readonly pods = new Map<string, PodModel>();
  readonly nodes = new Map<string, NodeModel>();
  sliceSize = NETS.S.slice ?? 28;
  epoch = 0;
  readonly #o: ClusterOptions;
  readonly #informers: SimulatedInformers;
  readonly #slices: NodeSlices;
  readonly #flags = defaultFlags();
  #seq = 0;
  /** Outcomes of the steps run, for the failure report. */
  readonly log: string[] = [];

  constructor(options: ClusterOptions) {
    this.#o = options;
    this.api = options.api;
    this.ns = options.api.namespace;
    const ours = (key: string): boolean => key.startsWith(options.nodePrefix);
    this.#informers = new SimulatedInformers((resource, key) => {
      if (resource === 'nodes') return ours(key);
      if (resource === 'nads') return key.startsWith(`${this.ns}/`);
      return true;
    });
    // The drain grace runs on the monotonic clock, which the model's virtual clock does not move: none here.
    this.#slices = new NodeSlices(options.api, { drainGraceMs: 0 });
    for (const name of options.nodes) this.nodes.set(name, { name: this.nodeName(name), up: false, pendingDels: [] });
  }

  nodeName(short: string): string {
    return `${this.#o.nodePrefix}${short}`;
  }

  podRef(pod: string): string {
    return `${this.ns}/${pod}`;
  }

  /** NADs for every network, the first nodes, and a pass that gives them slices. */
  async setup(initialNodes: readonly string[]): Promise<void> {
    for (const net of Object.values(NETS))
      await this.#write(
        'POST',
        '/apis/k8s.cni.cncf.io/v1/namespaces/NS/network-attachment-definitions',
        this.#nad(net.id),
      );
    for (const node of initialNodes) await this.run({ op: 'node-join', node, wipe: true });
    await this.pass(NO_FAULTS, []);
  }

  request(net: NetId): Record<string, unknown> {
    const def = NETS[net];
    const ipam: Record<string, unknown> = {
      type: 'hereabouts',
      range: def.range,
      enable_overlapping_ranges: def.overlapping,
      kubernetes: { kubeconfig: '/nonexistent/kubeconfig' },
      ...(def.networkName === undefined ? {} : { network_name: def.networkName }),
      ...(def.slice === undefined ? {} : { node_slice_size: `/${this.sliceSize}` }),
    };
    return { cniVersion: '1.1.0', name: def.cniName, type: 'macvlan', master: 'eth0', ipam };
  }

  #nad(net: NetId): Record<string, unknown> {
    const config = this.request(net);
    return {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: NETS[net].cniName },
      spec: { config: JSON.stringify(config) },
    };
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
      case 'time':
        advanceClock(step.ms);
        this.epoch++;
        return `clock +${step.ms} ms`;
      case 'node-join': {
        const node = this.nodes.get(step.node);
        if (node === undefined || node.up) return 'skip';
        if (step.wipe) rmSync(this.#cacheDir(step.node), { recursive: true, force: true });
        await this.#write('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node.name } });
        node.up = true;
        return 'joined';
      }
      case 'node-leave': {
        const node = this.nodes.get(step.node);
        if (node === undefined || !node.up) return 'skip';
        node.up = false;
        node.pendingDels.length = 0;
        await this.#write('DELETE', `/api/v1/nodes/${node.name}`);
        for (const pod of this.pods.values()) {
          if (pod.node !== step.node || !pod.exists) continue;
          await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${pod.name}?gracePeriodSeconds=0`);
          pod.exists = false;
          delete pod.sandbox;
        }
        return 'left';
      }
      case 'pod-create': {
        const node = this.nodes.get(step.node);
        const old = this.pods.get(step.pod);
        if (node === undefined || !node.up || old?.exists === true) return 'skip';
        const res = await this.api.send({
          method: 'POST',
          path: `/api/v1/namespaces/${encodeURIComponent(this.ns)}/pods`,
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: step.pod },
            spec: { nodeName: node.name, containers: [{ name: 'c', image: 'busybox' }] },
          },
        });
        if (res.status !== 201) throw new Error(`model: create pod ${step.pod}: HTTP ${res.status}`);
        const uid = (res.body as { metadata: { uid: string } }).metadata.uid;
        this.pods.set(step.pod, {
          name: step.pod,
          uid,
          node: step.node,
          net: step.net,
          exists: true,
          phase: 'Pending',
          terminating: false,
        });
        return `created (uid ${uid.slice(0, 8)})`;
      }
      case 'add':
        return this.#add(step.pod, step.faults);
      case 'stall': {
        const [a, b] = [this.#live(step.holder), this.#live(step.waiter)];
        if (a === undefined || b === undefined || a === b || a.node !== b.node) return 'skip';
        const outcomes = await Promise.all([
          this.#add(a.name, { ...step.faults, stallMs: step.ms }),
          new Promise<string>((resolve) => setTimeout(() => resolve(this.#add(b.name, step.faults)), 5)),
        ]);
        return outcomes.join(' | ');
      }
      case 'del':
        return this.#del(step.node, step.pick, step.faults);
      case 'gc':
        return this.#gc(step.node, step.net, step.stale, step.faults);
      case 'controller':
        return this.pass(step.faults, step.stale);
      case 'pod-delete':
        return this.#deletePod(step.pod, step.graceful);
      case 'pod-evict': {
        const pod = this.#live(step.pod);
        // A pod already being deleted for a disruption keeps that condition: evicting it again changes nothing.
        if (pod === undefined || (pod.terminating && pod.disruption !== undefined)) return 'skip';
        const condition = {
          type: 'DisruptionTarget',
          status: 'True',
          reason: step.reason,
          message: `model: ${step.reason}`,
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        };
        await this.#patchPod(pod.name, { status: { conditions: [condition] } }, true);
        pod.disruption = step.reason;
        // The kubelet's own terminations leave the pod object; the others delete it gracefully.
        if (step.reason !== 'TerminationByKubelet' && !pod.terminating) {
          await this.#write('DELETE', `/api/v1/namespaces/NS/pods/${pod.name}`);
          pod.terminating = true;
        }
        return 'disrupted';
      }
      case 'pod-terminate': {
        const pod = this.#live(step.pod);
        if (pod === undefined) return 'skip';
        await this.#patchPod(pod.name, { status: { phase: step.phase } }, true);
        pod.phase = step.phase;
        this.#teardown(pod, step.del);
        return step.phase;
      }
      case 'slicepool-delete': {
        const name = NETS.S.networkName ?? NETS.S.cniName;
        const status = await this.#write(
          'DELETE',
          `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/NS/nodeslicepools/${name}`,
        );
        return status === 404 ? 'skip' : 'deleted';
      }
      case 'reslice': {
        if (step.size === this.sliceSize) return 'skip';
        this.sliceSize = step.size;
        const path = `/apis/k8s.cni.cncf.io/v1/namespaces/NS/network-attachment-definitions/${NETS.S.cniName}`;
        await this.#write(
          'PATCH',
          path,
          { spec: (this.#nad('S') as { spec: unknown }).spec },
          'application/merge-patch+json',
        );
        return `node_slice_size /${step.size}`;
      }
    }
  }

  #live(name: string): PodModel | undefined {
    const pod = this.pods.get(name);
    if (pod === undefined || !pod.exists || pod.phase === 'Succeeded' || pod.phase === 'Failed') return undefined;
    return this.nodes.get(pod.node)?.up === true ? pod : undefined;
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

  #cacheDir(node: string): string {
    return join(this.#o.workDir, 'nodes', node);
  }

  /** One CNI invocation on `node`: a new process (store, client); a kill restores the cache dir as it was then. */
  async #invoke<T>(
    short: string,
    faults: FaultSpec,
    reservations: boolean,
    fn: (store: KubernetesStore) => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown; killed: boolean }> {
    const node = this.nodes.get(short)!;
    const dir = this.#cacheDir(short);
    mkdirSync(dir, { recursive: true });
    const frozen = join(this.#o.workDir, `frozen-${short}-${this.#seq++}`);
    const api = new FaultyApi(this.#o.api, faults, {
      counts: this.#o.counts,
      onKill: () =>
        cpSync(dir, frozen, {
          recursive: true,
          filter: (src) => !src.endsWith('.lock') && !src.includes('.lock/') && !src.endsWith('.reclaim'),
        }),
    });
    const store = new KubernetesStore({
      api,
      node: node.name,
      cacheDir: dir,
      reservations,
      log: quiet,
      budgetMs: 5_000,
      cleanupTimeoutMs: 2_000,
      memory: new WriteMemory(),
    });
    try {
      return { ok: true, value: await fn(store) };
    } catch (error) {
      return { ok: false, error, killed: api.dead };
    } finally {
      if (api.dead) {
        // The process died at the kill: whatever it did to its files afterwards never happened.
        rmSync(dir, { recursive: true, force: true });
        cpSync(frozen, dir, { recursive: true });
        rmSync(frozen, { recursive: true, force: true });
      }
    }
  }

  #config(request: Record<string, unknown>, verb: string, pod?: PodModel) {
    const cniArgs = pod === undefined ? undefined : this.#args(pod.name, pod.uid);
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
  #args(pod: string, uid: string): CniArgs {
    return parseCniArgs(
      `IgnoreUnknown=1;K8S_POD_NAMESPACE=${this.ns};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=x;K8S_POD_UID=${uid}`,
    );
  }

  async #add(name: string, faults: FaultSpec): Promise<string> {
    const pod = this.#live(name);
    if (pod === undefined) return 'skip';
    const node = this.nodes.get(pod.node)!;
    this.#teardown(pod, true);
    const request = this.request(pod.net);
    const sandbox: Sandbox = {
      id: `c${this.#seq++}-${pod.name}`,
      pod: pod.name,
      uid: pod.uid,
      request,
      net: pod.net,
      ok: false,
      epoch: this.epoch,
    };
    pod.sandbox = sandbox;
    node.lastAdd = sandbox;
    const config = this.#config(request, 'ADD', pod);
    const args = this.#args(pod.name, pod.uid);
    const env = {
      verb: 'ADD' as const,
      containerId: sandbox.id,
      ifname: 'net1',
      netns: '/var/run/netns/model',
      path: [],
      args,
    };
    const outcome = await this.#invoke(pod.node, faults, config.ipam.enableOverlappingRanges, (store) =>
      cmdAdd({ config, store, logger: quiet, version: '1.1.0', env }),
    );
    if (!outcome.ok) {
      // The runtime tears the failed sandbox down: DEL follows.
      this.#teardown(pod, true);
      return `failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`;
    }
    const ip = (outcome.value as unknown as { ips?: Array<{ address?: string }> }).ips?.[0]?.address?.split('/')[0];
    if (ip === undefined)
      throw new Error(`model: ADD of ${name} returned no address: ${JSON.stringify(outcome.value)}`);
    sandbox.ok = true;
    sandbox.address = ip;
    const status = JSON.stringify([{ name: `${this.ns}/${NETS[pod.net].cniName}`, interface: 'net1', ips: [ip] }]);
    await this.#patchPod(pod.name, { metadata: { annotations: { 'k8s.v1.cni.cncf.io/network-status': status } } });
    await this.#patchPod(pod.name, { status: { phase: 'Running' } }, true);
    if (pod.phase === 'Pending') pod.phase = 'Running';
    return `got ${ip} (${sandbox.id})`;
  }

  async #del(short: string, pick: number, faults: FaultSpec): Promise<string> {
    const node = this.nodes.get(short);
    if (node === undefined || !node.up || node.pendingDels.length === 0) return 'skip';
    const index = pick % node.pendingDels.length;
    const sandbox = node.pendingDels[index]!;
    const pod = this.pods.get(sandbox.pod);
    const config = this.#config(sandbox.request, 'DEL', pod?.uid === sandbox.uid ? pod : undefined);
    const args = this.#args(sandbox.pod, sandbox.uid);
    const env = { verb: 'DEL' as const, containerId: sandbox.id, ifname: 'net1', path: [], args };
    const outcome = await this.#invoke(short, faults, config.ipam.enableOverlappingRanges, (store) =>
      cmdDel({ config, store, logger: quiet, version: '1.1.0', env }),
    );
    if (!outcome.ok) return `DEL ${sandbox.id} failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`;
    node.pendingDels.splice(node.pendingDels.indexOf(sandbox), 1);
    return `DEL ${sandbox.id} done`;
  }

  async #gc(short: string, net: NetId, stale: boolean, faults: FaultSpec): Promise<string> {
    const node = this.nodes.get(short);
    if (node === undefined || !node.up) return 'skip';
    const live = [...this.pods.values()]
      .filter((p) => p.exists && p.node === short && p.sandbox !== undefined)
      .map((p) => p.sandbox!);
    // A snapshot taken just before the node's latest ADD (in the same instant of wall-clock time) misses it.
    const missed = stale && node.lastAdd !== undefined && node.lastAdd.epoch === this.epoch ? node.lastAdd : undefined;
    const valid = live.filter((s) => s !== missed).map((s) => ({ containerID: s.id, ifname: 'net1' }));
    const request = { ...this.request(net), 'cni.dev/valid-attachments': valid };
    const config = this.#config(request, 'GC');
    const outcome = await this.#invoke(short, faults, config.ipam.enableOverlappingRanges, (store) =>
      cmdGc({ config, store, logger: quiet, version: '1.1.0' }),
    );
    if (!outcome.ok) return `GC failed${outcome.killed ? ' (killed)' : ''}: ${errorLine(outcome.error)}`;
    return `GC done${missed === undefined ? '' : ` (snapshot without ${missed.id})`}`;
  }

  /** A controller pass (the controller's own process: faults and kills apply to its requests). */
  async pass(faults: FaultSpec, stale: readonly Resource[]): Promise<string> {
    const api = new FaultyApi(this.#o.api, faults, { counts: this.#o.counts });
    try {
      const caches = await this.#informers.refresh(this.#o.api, new Set(stale));
      const result = await controllerPass(api, caches, this.#flags, this.#slices);
      return `released ${result.released}, reservations deleted ${result.reservationsDeleted}`;
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
    advanceClock(2 * 3600_000);
    this.epoch++;
    await this.pass(NO_FAULTS, []);
    return problems;
  }
}

function errorLine(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.split('\n')[0]!.slice(0, 200);
}
