// What the controller reads to judge sticky addresses (docs/sticky.md): StatefulSets cluster-wide, and KubeVirt's
// VirtualMachines and VirtualMachineInstances when the API server serves them (an absent kind is empty). Apart from
// the caches every pass waits for: until these are synced (or when the controller may not read them), no bound
// record is judged, and so none is released.
import { statusText, ApiUnreachableError, type ApiClient } from '../../kube/api.ts';
import { Informer, type ChangeKind } from '../../kube/informer.ts';
import type { Log } from '../../log/json-log.ts';
import { messageOf } from '../../errors.ts';
import { parseBinding, replicaName } from '../../store/sticky-binding.ts';
import { eachLimited } from '../runtime/parallel.ts';
import { statefulSetView, type StatefulSetView, type StickyWorld } from './verdict.ts';

const present = (): true => true;

export class StickyCaches {
  readonly statefulSets: Informer<StatefulSetView>;
  readonly virtualMachines: Informer<true>;
  readonly virtualMachineInstances: Informer<true>;

  /** The namespaces whose workloads' sticky addresses this controller judges and pre-binds (--sticky). */
  readonly #scope: 'all' | ReadonlySet<string>;

  constructor(
    api: ApiClient,
    log: Log,
    options: {
      readonly scope: 'all' | readonly string[];
      readonly onStatefulSet?: (kind: ChangeKind, key: string, current: StatefulSetView | undefined) => void;
    },
  ) {
    this.#scope = options.scope === 'all' ? 'all' : new Set(options.scope);
    const onStatefulSet = options.onStatefulSet;
    this.statefulSets = new Informer(api, {
      resource: 'statefulsets',
      path: '/apis/apps/v1/statefulsets',
      view: statefulSetView,
      log,
      ...(onStatefulSet === undefined ? {} : { onChange: (kind, key, current) => onStatefulSet(kind, key, current) }),
    });
    this.virtualMachines = new Informer(api, {
      resource: 'virtualmachines',
      path: '/apis/kubevirt.io/v1/virtualmachines',
      view: present,
      log,
    });
    this.virtualMachineInstances = new Informer(api, {
      resource: 'virtualmachineinstances',
      path: '/apis/kubevirt.io/v1/virtualmachineinstances',
      view: present,
      log,
    });
  }

  /** --sticky none: nothing is watched, and every bound record is kept. */
  get enabled(): boolean {
    return this.#scope === 'all' || this.#scope.size > 0;
  }

  serves(namespace: string): boolean {
    return this.#scope === 'all' || this.#scope.has(namespace);
  }

  get all(): ReadonlyArray<Informer<unknown>> {
    if (!this.enabled) return [];
    return [this.statefulSets, this.virtualMachines, this.virtualMachineInstances] as ReadonlyArray<Informer<unknown>>;
  }

  /** Every cache listed (never, when disabled). */
  get synced(): boolean {
    return this.enabled && this.all.every((i) => i.synced);
  }

  start(): void {
    for (const informer of this.all) informer.start();
  }

  stop(): void {
    for (const informer of this.all) informer.stop();
  }

  /** The cached world (pods from the controller's pod cache). */
  world(pods: ReadonlyMap<string, unknown>): StickyWorld {
    return {
      statefulSet: (key) => this.statefulSets.items.get(key),
      pod: (key) => pods.has(key),
      virtualMachine: (key) => this.virtualMachines.items.has(key),
      virtualMachineInstance: (key) => this.virtualMachineInstances.items.has(key),
    };
  }
}

/**
 * What the API server says now of the objects the bindings in `suspects` ("namespace binding") depend on. An object
 * that could not be read counts as present: its binding is kept for the next pass.
 */
export async function readStickyWorld(api: ApiClient, suspects: Iterable<string>, log: Log): Promise<StickyWorld> {
  const paths = new Set<string>();
  for (const key of suspects) {
    const space = key.indexOf(' ');
    const namespace = encodeURIComponent(key.slice(0, space));
    const binding = parseBinding(key.slice(space + 1));
    if (binding === undefined) continue;
    const name = encodeURIComponent(binding.name);
    if (binding.kind === 'VirtualMachine') {
      paths.add(`/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${name}`);
      paths.add(`/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/${name}`);
    } else {
      paths.add(`/apis/apps/v1/namespaces/${namespace}/statefulsets/${name}`);
      paths.add(`/api/v1/namespaces/${namespace}/pods/${encodeURIComponent(replicaName(binding))}`);
    }
  }
  // path -> the object (null: it does not exist); a path that could not be read is missing: present.
  const read = new Map<string, unknown>();
  await eachLimited([...paths], 8, async (path) => {
    try {
      const res = await api.send({ method: 'GET', path });
      // A kind the server does not serve (KubeVirt not installed) answers 404 too: no such object.
      if (res.status === 404) read.set(path, null);
      else if (res.status === 200) read.set(path, res.body);
      else log.warning(`cannot read ${path}: ${statusText(res)}; its sticky addresses wait for the next pass`);
    } catch (err) {
      if (!(err instanceof ApiUnreachableError)) throw err;
      log.warning(`cannot read ${path}: ${messageOf(err)}; its sticky addresses wait for the next pass`);
    }
  });
  const exists = (path: string): boolean => read.get(path) !== null;
  const split = (key: string): [string, string] => {
    const slash = key.indexOf('/');
    return [encodeURIComponent(key.slice(0, slash)), encodeURIComponent(key.slice(slash + 1))];
  };
  return {
    statefulSet: (key) => {
      const [ns, name] = split(key);
      const path = `/apis/apps/v1/namespaces/${ns}/statefulsets/${name}`;
      if (!read.has(path)) return { uid: '', replicas: Number.MAX_SAFE_INTEGER, start: 0 }; // unread: holds
      const object = read.get(path);
      return object === null
        ? undefined
        : (statefulSetView(object) ?? { uid: '', replicas: Number.MAX_SAFE_INTEGER, start: 0 });
    },
    pod: (key) => {
      const [ns, name] = split(key);
      return exists(`/api/v1/namespaces/${ns}/pods/${name}`);
    },
    virtualMachine: (key) => {
      const [ns, name] = split(key);
      return exists(`/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachines/${name}`);
    },
    virtualMachineInstance: (key) => {
      const [ns, name] = split(key);
      return exists(`/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/${name}`);
    },
  };
}
