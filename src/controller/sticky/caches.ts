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
import { statefulSetView, UNREAD_STATEFUL_SET, type StatefulSetView, type StickyWorld } from './verdict.ts';

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

/** The API path of one object of a kind, by its "namespace/name" key. */
type Kind = readonly [prefix: string, plural: string];
const STATEFULSETS: Kind = ['/apis/apps/v1', 'statefulsets'];
const PODS: Kind = ['/api/v1', 'pods'];
const VIRTUAL_MACHINES: Kind = ['/apis/kubevirt.io/v1', 'virtualmachines'];
const VIRTUAL_MACHINE_INSTANCES: Kind = ['/apis/kubevirt.io/v1', 'virtualmachineinstances'];

function pathOf([prefix, plural]: Kind, key: string): string {
  const slash = key.indexOf('/');
  const [namespace, name] = [key.slice(0, slash), key.slice(slash + 1)].map(encodeURIComponent);
  return `${prefix}/namespaces/${namespace ?? ''}/${plural}/${name ?? ''}`;
}

/**
 * What the API server says now of the objects the bindings in `suspects` ("namespace binding") depend on. An object
 * that could not be read counts as present: its binding is kept for the next pass.
 */
export async function readStickyWorld(api: ApiClient, suspects: Iterable<string>, log: Log): Promise<StickyWorld> {
  const paths = new Set<string>();
  for (const key of suspects) {
    const space = key.indexOf(' ');
    const namespace = key.slice(0, space);
    const binding = parseBinding(key.slice(space + 1));
    if (binding === undefined) continue;
    const at = (name: string): string => `${namespace}/${name}`;
    if (binding.kind === 'VirtualMachine') {
      paths.add(pathOf(VIRTUAL_MACHINES, at(binding.name)));
      paths.add(pathOf(VIRTUAL_MACHINE_INSTANCES, at(binding.name)));
    } else {
      paths.add(pathOf(STATEFULSETS, at(binding.name)));
      paths.add(pathOf(PODS, at(replicaName(binding))));
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
  const exists = (kind: Kind, key: string): boolean => read.get(pathOf(kind, key)) !== null;
  return {
    statefulSet: (key) => {
      const object = read.get(pathOf(STATEFULSETS, key));
      if (object === undefined) return UNREAD_STATEFUL_SET;
      return object === null ? undefined : (statefulSetView(object) ?? UNREAD_STATEFUL_SET);
    },
    pod: (key) => exists(PODS, key),
    virtualMachine: (key) => exists(VIRTUAL_MACHINES, key),
    virtualMachineInstance: (key) => exists(VIRTUAL_MACHINE_INSTANCES, key),
  };
}
