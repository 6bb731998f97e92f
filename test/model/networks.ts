// The network objects around the pools, as operators, GitOps and tenants change them: the networks'
// NetworkAttachmentDefinitions (deleted and created again), the garbage collector's effect on the NodeSlicePool of
// network S (owned by the NADs of its namespace: it goes when its last owner went), a NodeSlicePool deleted by hand,
// and a tenant's NAD in its own namespace naming network S's network_name with another node_slice_size.
// kube-controller-manager does not run beside the model's API server: the collector's effect is applied here, at
// once, after each NAD deletion.
import type { ApiClient } from '../../src/kube/api.ts';
import { listAll } from '../../src/kube/list.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { NETS, type NetId } from './steps.ts';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

const nadPath = (namespace: string, name?: string): string =>
  `/apis/k8s.cni.cncf.io/v1/namespaces/${encodeURIComponent(namespace)}/network-attachment-definitions${name === undefined ? '' : `/${name}`}`;

export const TENANT_NAD = 'tenant-sl';

export interface NetworksOptions {
  readonly api: ApiClient;
  /** The tenant's namespace (created on first use). */
  readonly tenantNamespace: string;
  readonly createNamespace: (name: string) => Promise<void>;
  /** The CNI network config of a network's NAD as it is now (node_slice_size of S follows reslices). */
  readonly config: (net: NetId) => Record<string, unknown>;
}

export class Networks {
  /** Which NADs exist, and in which order they were created (the oldest first). */
  readonly nads = new Map<NetId, number>();
  /** The tenant NAD's node_slice_size, and when it was created; undefined while there is none. */
  tenant: { size: number; order: number } | undefined;
  #order = 0;
  #tenantNamespaceMade = false;
  readonly #o: NetworksOptions;

  constructor(options: NetworksOptions) {
    this.#o = options;
  }

  get tenantNamespace(): string {
    return this.#o.tenantNamespace;
  }

  nadBody(net: NetId): Obj {
    return {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: NETS[net].cniName },
      spec: { config: JSON.stringify(this.#o.config(net)) },
    };
  }

  async create(net: NetId): Promise<string> {
    if (this.nads.has(net)) return 'skip';
    const res = await this.#o.api.send({
      method: 'POST',
      path: nadPath(this.#o.api.namespace),
      body: this.nadBody(net),
    });
    if (res.status !== 201) throw new Error(`model: create NAD ${NETS[net].cniName}: HTTP ${res.status}`);
    this.nads.set(net, this.#order++);
    return 'created';
  }

  async delete(net: NetId): Promise<string> {
    if (!this.nads.has(net)) return 'skip';
    await this.#o.api.send({ method: 'DELETE', path: nadPath(this.#o.api.namespace, NETS[net].cniName) });
    this.nads.delete(net);
    const collected = await this.collectGarbage();
    return collected.length === 0
      ? 'deleted'
      : `deleted; garbage collector deleted NodeSlicePool ${collected.join(', ')}`;
  }

  /** What the garbage collector does: a NodeSlicePool whose NAD owners are all gone is deleted (background). */
  async collectGarbage(): Promise<string[]> {
    const api = this.#o.api;
    const uids = new Set(
      (await listAll(api, nadPath(api.namespace))).map((nad) => String(obj(obj(nad)['metadata'])['uid'])),
    );
    const collected: string[] = [];
    for (const item of await listAll(api, objectPath(api.namespace, 'nodeslicepools'))) {
      const meta = obj(obj(item)['metadata']);
      const refs = Array.isArray(meta['ownerReferences']) ? (meta['ownerReferences'] as unknown[]).map(obj) : [];
      const owners = refs.filter((r) => r['kind'] === 'NetworkAttachmentDefinition');
      if (owners.length === 0 || refs.some((r) => uids.has(String(r['uid'])))) continue;
      const name = String(meta['name']);
      const res = await api.send({
        method: 'DELETE',
        path: objectPath(api.namespace, 'nodeslicepools', name),
        body: { preconditions: { uid: meta['uid'] } },
      });
      if (res.status === 200) collected.push(name);
    }
    return collected;
  }

  /** The NodeSlicePool of network S (or another sliced one), deleted by hand. */
  async deleteNodeSlicePool(net: NetId = 'S'): Promise<string> {
    const api = this.#o.api;
    const res = await api.send({
      method: 'DELETE',
      path: objectPath(api.namespace, 'nodeslicepools', NETS[net].networkName ?? ''),
    });
    return res.status === 200 ? 'deleted' : 'skip';
  }

  /** The tenant's NAD: created with (or changed to) `size`, or deleted (null). */
  async setTenant(size: number | null): Promise<string> {
    const api = this.#o.api;
    const ns = this.#o.tenantNamespace;
    if (size === null) {
      if (this.tenant === undefined) return 'skip';
      await api.send({ method: 'DELETE', path: nadPath(ns, TENANT_NAD) });
      this.tenant = undefined;
      return 'tenant NAD deleted';
    }
    if (this.tenant?.size === size) return 'skip';
    if (!this.#tenantNamespaceMade) {
      await this.#o.createNamespace(ns);
      this.#tenantNamespaceMade = true;
    }
    const config = { ...this.#o.config('S') };
    config['ipam'] = { ...obj(config['ipam']), node_slice_size: `/${size}` };
    config['name'] = 'tenant-net';
    const body = {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: TENANT_NAD },
      spec: { config: JSON.stringify(config) },
    };
    if (this.tenant === undefined) {
      const res = await api.send({ method: 'POST', path: nadPath(ns), body });
      if (res.status !== 201) throw new Error(`model: create tenant NAD: HTTP ${res.status}`);
      this.tenant = { size, order: this.#order++ };
      return `tenant NAD asks /${size}`;
    }
    const res = await api.send({
      method: 'PATCH',
      path: nadPath(ns, TENANT_NAD),
      body: { spec: body.spec },
      contentType: 'application/merge-patch+json',
    });
    if (res.status !== 200) throw new Error(`model: change tenant NAD: HTTP ${res.status}`);
    this.tenant = { ...this.tenant, size };
    return `tenant NAD asks /${size}`;
  }

  /** All NADs of the model's cluster, for the simulated informers (and the clean-up of a real control plane). */
  nadNamespaces(): string[] {
    return [this.#o.api.namespace, this.#o.tenantNamespace];
  }
}
