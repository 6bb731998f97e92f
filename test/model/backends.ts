// Where a model run's clusters live: an in-memory API server (fast), or a namespace of a real control plane.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../src/kube/api.ts';
import { loadEndpoint } from '../../src/kube/kubeconfig.ts';
import { createNamespace, type ControlPlane } from '../support/control-plane.ts';
import { kubevirtKinds } from '../support/kubevirt.ts';
import { MemoryApiClient, MemoryApiServer } from '../support/memory-apiserver.ts';
import { Cluster } from './cluster.ts';
import { NODES } from './generate.ts';
import type { Backend } from './runner.ts';

function scratch(): string {
  // Cache writes fsync: a tmpfs keeps thousands of steps fast.
  try {
    return mkdtempSync('/dev/shm/hereabouts-model-');
  } catch {
    return mkdtempSync(join(tmpdir(), 'hereabouts-model-'));
  }
}

export function memoryBackend(): Backend {
  return {
    create(counts) {
      const api = new MemoryApiClient(new MemoryApiServer(), { namespace: 'model' });
      const workDir = scratch();
      const cluster = new Cluster({ api, workDir, nodePrefix: '', counts, nodes: NODES });
      const dispose = (): Promise<void> => {
        rmSync(workDir, { recursive: true, force: true });
        return Promise.resolve();
      };
      return Promise.resolve({ cluster, dispose });
    },
  };
}

/** One fresh namespace (and node names prefixed with it) per sequence; everything is deleted afterwards. */
export function controlPlaneBackend(cp: ControlPlane): Backend {
  let kubevirt: Promise<void> | undefined;
  return {
    async create(counts) {
      await (kubevirt ??= kubevirtKinds(cp));
      const ns = await createNamespace(cp, 'model');
      const api = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 20_000 });
      const workDir = scratch();
      const namespaces: string[] = [];
      const makeNamespace = async (name: string): Promise<void> => {
        const body = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
        const res = await api.send({ method: 'POST', path: '/api/v1/namespaces', body });
        if (res.status !== 201 && res.status !== 409)
          throw new Error(`model: create namespace ${name}: HTTP ${res.status}`);
        namespaces.push(name);
      };
      const cluster = new Cluster({
        api,
        workDir,
        nodePrefix: `${ns.name}-`,
        counts,
        nodes: NODES,
        createNamespace: makeNamespace,
      });
      return {
        cluster,
        async dispose() {
          for (const node of cluster.nodes.values())
            await api.send({ method: 'DELETE', path: `/api/v1/nodes/${node.name}` });
          await api.send({ method: 'DELETE', path: `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0` });
          await api.send({ method: 'DELETE', path: `/apis/apps/v1/namespaces/${ns.name}/statefulsets` });
          for (const plural of ['virtualmachines', 'virtualmachineinstances'])
            await api.send({ method: 'DELETE', path: `/apis/kubevirt.io/v1/namespaces/${ns.name}/${plural}` });
          for (const name of [ns.name, ...namespaces])
            await api.send({
              method: 'DELETE',
              path: `/apis/k8s.cni.cncf.io/v1/namespaces/${name}/network-attachment-definitions`,
            });
          await api.send({
            method: 'DELETE',
            path: `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`,
          });
          for (const name of namespaces) await api.send({ method: 'DELETE', path: `/api/v1/namespaces/${name}` });
          await ns.cleanup();
          api.close();
          rmSync(workDir, { recursive: true, force: true });
        },
      };
    },
  };
}
