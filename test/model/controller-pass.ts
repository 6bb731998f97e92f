// One controller pass as the leader runs it (controller.ts #pass 'full': orphan cleanup, reservation cleanup, node
// slices), driven directly. The informers are the part simulated here: their caches are built from LISTs, and a
// cache may be left as it was at an earlier pass (a watch that lags); the sticky caches (StatefulSets, VMs, VMIs) too,
// with the world built from them as StickyCaches.world() builds it (sticky.ts). Every write goes through the real code.
// If the controller's seams change, this is the one file of the model test to adapt.
import { cleanupPass, type StickyInput } from '../../src/controller/orphans/cleanup-pass.ts';
import { EventRecorder } from '../../src/controller/runtime/events.ts';
import { parseControllerFlags } from '../../src/cli/controller.ts';
import type { ControllerFlags } from '../../src/controller/runtime/flags.ts';
import { keyOf } from '../../src/kube/informer.ts';
import type { Log } from '../../src/log/json-log.ts';
import { NodeSlices } from '../../src/controller/slices/node-slices.ts';
import { podView } from '../../src/controller/orphans/pod-view.ts';
import { writePoolStatuses } from '../../src/controller/pools/status.ts';
import { poolView } from '../../src/controller/pools/view.ts';
import { nadView, nodeSlicePoolView, nodeView, reservationView } from '../../src/controller/runtime/views.ts';
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { statefulSetView } from '../../src/controller/sticky/verdict.ts';

const silent: Log = { debug: () => undefined, info: () => undefined, warning: () => undefined, error: () => undefined };

/** The controller's defaults (its flag parser's), as a Deployment without arguments runs it. */
export function defaultFlags(): ControllerFlags {
  return parseControllerFlags(['--kubeconfig', '/nonexistent']);
}

type Views = ReturnType<typeof emptyViews>;
function emptyViews() {
  return {
    pods: new Map<string, NonNullable<ReturnType<typeof podView>>>(),
    pools: new Map<string, NonNullable<ReturnType<typeof poolView>>>(),
    reservations: new Map<string, ReturnType<typeof reservationView>>(),
    nodeSlicePools: new Map<string, ReturnType<typeof nodeSlicePoolView>>(),
    nads: new Map<string, NonNullable<ReturnType<typeof nadView>>>(),
    nodes: new Map<string, ReturnType<typeof nodeView>>(),
    // The sticky caches (controller/sticky/caches.ts): StatefulSets, KubeVirt's VMs and VMIs.
    statefulSets: new Map<string, NonNullable<ReturnType<typeof statefulSetView>>>(),
    virtualMachines: new Map<string, true>(),
    virtualMachineInstances: new Map<string, true>(),
  };
}

export type { Views };
export type Resource = keyof Views;
export const RESOURCES: readonly Resource[] = [
  'pods',
  'pools',
  'reservations',
  'nodeSlicePools',
  'nads',
  'nodes',
  'statefulSets',
  'virtualMachines',
  'virtualMachineInstances',
];

/** Keeps what the informers would: which objects count is up to `keep` (a shared control plane has others'). */
export class SimulatedInformers {
  readonly #views: Views = emptyViews();
  readonly #keep: (resource: Resource, key: string) => boolean;

  constructor(keep: (resource: Resource, key: string) => boolean = () => true) {
    this.#keep = keep;
  }

  /** Re-lists every resource but those in `stale` (their caches stay as they were). */
  async refresh(api: ApiClient, stale: ReadonlySet<Resource>): Promise<Views> {
    const ns = api.namespace;
    const paths: Record<Resource, string> = {
      pods: '/api/v1/pods',
      pools: objectPath(ns, 'ippools'),
      reservations: objectPath(ns, 'overlappingrangeipreservations'),
      nodeSlicePools: objectPath(ns, 'nodeslicepools'),
      nads: '/apis/k8s.cni.cncf.io/v1/network-attachment-definitions',
      nodes: '/api/v1/nodes',
      statefulSets: '/apis/apps/v1/statefulsets',
      virtualMachines: '/apis/kubevirt.io/v1/virtualmachines',
      virtualMachineInstances: '/apis/kubevirt.io/v1/virtualmachineinstances',
    };
    const views: Record<Resource, (o: unknown) => unknown> = {
      pods: podView,
      pools: poolView,
      reservations: reservationView,
      nodeSlicePools: nodeSlicePoolView,
      nads: nadView,
      nodes: nodeView,
      statefulSets: statefulSetView,
      virtualMachines: () => true,
      virtualMachineInstances: () => true,
    };
    for (const resource of RESOURCES) {
      if (stale.has(resource)) continue;
      const items = await listAll(api, paths[resource]);
      const map = this.#views[resource] as Map<string, unknown>;
      map.clear();
      for (const item of items) {
        const key = keyOf(item);
        const view = key === undefined ? undefined : views[resource](item);
        if (key !== undefined && view !== undefined && this.#keep(resource, key)) map.set(key, view);
      }
    }
    return this.#views;
  }
}

export interface PassResult {
  readonly released: number;
  readonly reservationsDeleted: number;
  /** Sticky addresses released (statefulset-gone, scaled-down, vm-gone). */
  readonly stickyReleased: number;
}

/** The controller's sticky input (controller.ts): absent while its sticky caches are not synced. */
export type { StickyInput };

/** A full pass on the given caches (cleanup, node slices, pool status), always leading. */
export async function controllerPass(
  api: ApiClient,
  c: Views,
  flags: ControllerFlags,
  slices: NodeSlices,
  firstMissing: Map<string, number>,
  sticky?: StickyInput,
): Promise<PassResult> {
  const leading = (): boolean => true;
  const networkNames = new Set<string>();
  for (const nad of c.nads.values()) for (const n of nad.networkNames) networkNames.add(n);
  const result = await cleanupPass(api, {
    pods: c.pods,
    nodes: c.nodes,
    pools: c.pools,
    reservations: c.reservations,
    networkNames,
    policy: flags.policy,
    reservationGraceMs: flags.reservationGraceMs,
    firstMissing,
    ...(sticky === undefined ? {} : { sticky }),
    leading,
    log: silent,
  });
  const events = new EventRecorder(api, { identity: 'model-controller', log: silent });
  await slices.reconcile({
    nads: c.nads,
    nodes: c.nodes,
    nodeSlicePools: c.nodeSlicePools,
    pools: c.pools,
    leading,
    log: silent,
    events,
  });
  if (flags.poolStatus) await writePoolStatuses(api, c.pools.values(), { leading, log: silent });
  const stickyReasons = new Set(['statefulset-gone', 'scaled-down', 'vm-gone']);
  return {
    released: result.released.length,
    reservationsDeleted: result.reservationsDeleted.length,
    stickyReleased: result.released.filter((r) => stickyReasons.has(r.reason)).length,
  };
}
