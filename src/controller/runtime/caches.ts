// The controller's informers, one per resource it reads, each keeping a stripped view: pods, nodes and
// NetworkAttachmentDefinitions cluster-wide; IPPools, OverlappingRangeIPReservations and NodeSlicePools in the
// pools' namespace. Every replica keeps them warm, so that a new leader acts at once.
import type { ApiClient } from '../../kube/api.ts';
import { objectPath } from '../../store/kubernetes/objects.ts';
import { Informer, type ChangeKind } from '../../kube/informer.ts';
import type { Log } from '../../log/json-log.ts';
import { podView, type PodView } from '../orphans/pod-view.ts';
import { podFromProtobuf } from '../orphans/pod-protobuf.ts';
import { POOL_PAGE, poolView, type PoolView } from '../pools/view.ts';
import {
  nadView,
  nodeSlicePoolView,
  nodeView,
  reservationView,
  type NadView,
  type NodeSlicePoolView,
  type NodeView,
  type ReservationView,
} from './views.ts';

type Handler<T> = (kind: ChangeKind, key: string, current: T | undefined, previous: T | undefined) => void;

export interface CacheHandlers {
  readonly pods?: Handler<PodView>;
  readonly pools?: Handler<PoolView>;
  readonly nodeSlicePools?: Handler<NodeSlicePoolView>;
  readonly nads?: Handler<NadView>;
  readonly nodes?: Handler<NodeView>;
}

export class Caches {
  readonly pods: Informer<PodView>;
  readonly pools: Informer<PoolView>;
  readonly reservations: Informer<ReservationView>;
  readonly nodeSlicePools: Informer<NodeSlicePoolView>;
  readonly nads: Informer<NadView>;
  readonly nodes: Informer<NodeView>;

  constructor(api: ApiClient, handlers: CacheHandlers, log: Log) {
    const ns = api.namespace;
    this.pods = new Informer(api, {
      resource: 'pods',
      path: '/api/v1/pods',
      view: podView,
      protobuf: podFromProtobuf,
      log,
      ...on(handlers.pods),
    });
    this.pools = new Informer(api, {
      resource: 'ippools',
      path: objectPath(ns, 'ippools'),
      view: poolView,
      pageSize: POOL_PAGE,
      log,
      ...on(handlers.pools),
    });
    this.reservations = new Informer(api, {
      resource: 'overlappingrangeipreservations',
      path: objectPath(ns, 'overlappingrangeipreservations'),
      view: reservationView,
      log,
    });
    this.nodeSlicePools = new Informer(api, {
      resource: 'nodeslicepools',
      path: objectPath(ns, 'nodeslicepools'),
      view: nodeSlicePoolView,
      log,
      ...on(handlers.nodeSlicePools),
    });
    this.nads = new Informer(api, {
      resource: 'network-attachment-definitions',
      path: '/apis/k8s.cni.cncf.io/v1/network-attachment-definitions',
      view: nadView,
      log,
      ...on(handlers.nads),
    });
    this.nodes = new Informer(api, {
      resource: 'nodes',
      path: '/api/v1/nodes',
      view: nodeView,
      log,
      ...on(handlers.nodes),
    });
  }

  get all(): ReadonlyArray<Informer<unknown>> {
    return [this.pods, this.pools, this.reservations, this.nodeSlicePools, this.nads, this.nodes] as ReadonlyArray<
      Informer<unknown>
    >;
  }

  start(): void {
    for (const informer of this.all) informer.start();
  }

  stop(): void {
    for (const informer of this.all) informer.stop();
  }

  /** The resources whose cache is not (or no longer) synced; empty when all are. */
  unsynced(): string[] {
    return this.all.filter((i) => !i.synced).map((i) => i.resource);
  }

  /** Every network_name the NADs use: reservation names are split with them. */
  networkNames(): Set<string> {
    const names = new Set<string>();
    for (const nad of this.nads.items.values()) for (const n of nad.networkNames) names.add(n);
    return names;
  }
}

function on<T>(handler: Handler<T> | undefined): { onChange?: Handler<T> } {
  return handler === undefined ? {} : { onChange: handler };
}
