// The controller's cache memory per object, without an API server: N realistic pod objects (labels, owner
// references, 3 running containers, a network-status annotation with two networks) parsed page by page as the
// informer does and kept as its views and keys, then N allocations in IPPools of 1 000; V8 heap after a full GC.
// Usage: node scripts/bench/controller-heap.ts [--count N]
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { podView } from '../../src/controller/orphans/pod-view.ts';
import { poolView } from '../../src/controller/pools/view.ts';
import { keyOf } from '../../src/kube/informer.ts';

const { values } = parseArgs({ options: { count: { type: 'string', default: '100000' } } });
const count = Number(values.count);
// A full GC on demand: the flag exposes gc() to contexts created from now on.
setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;
const at = '2026-11-26T19:00:00Z';

function podText(i: number): string {
  const networks = [
    { name: 'cbr0', interface: 'eth0', ips: [`10.244.${(i >> 8) & 255}.${i & 255}`], default: true, dns: {} },
    { name: 'bench/macvlan-conf', interface: 'net1', ips: [`10.100.${(i >> 8) & 3}.${i & 255}`], dns: {} },
  ];
  return JSON.stringify({
    metadata: {
      name: `p${i}`,
      namespace: 'bench-1007-2s0gyg',
      uid: `6f0c2a3e-${String(i).padStart(4, '0').slice(-4)}-4bbb-8ccc-${String(i).padStart(12, '0')}`,
      resourceVersion: String(1000 + i),
      creationTimestamp: at,
      labels: { app: 'bench', 'app.kubernetes.io/component': 'worker', team: 'network' },
      annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify(networks, null, 2) },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'bench-1', uid: 'u', controller: true }],
    },
    spec: { nodeName: `node-${i % 100}`, containers: ['app', 'sidecar', 'metrics'].map((name) => ({ name })) },
    status: {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
        (type) => ({ type, status: 'True', lastTransitionTime: at }),
      ),
      containerStatuses: ['app', 'sidecar', 'metrics'].map((name, n) => ({
        name,
        state: { running: { startedAt: at } },
        ready: true,
        containerID: `containerd://${(i * 3 + n).toString(16).padStart(64, '0')}`,
      })),
    },
  });
}

const heap = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};
const h0 = heap();
const pods = new Map<string, unknown>();
for (let page = 0; page < count; page += 250) {
  const texts = Array.from({ length: Math.min(250, count - page) }, (_, k) => podText(page + k));
  for (const item of (JSON.parse(`{"items":[${texts.join(',')}]}`) as { items: unknown[] }).items) {
    const key = keyOf(item);
    if (key !== undefined) pods.set(key, podView(item));
  }
}
const h1 = heap();
const pools = new Map<string, unknown>();
for (let p = 0; p < Math.ceil(count / 1000); p++) {
  const allocations: Record<string, object> = {};
  for (let k = 0; k < 1000; k++)
    allocations[String(k + 1)] = {
      id: `c${p * 1000 + k}`,
      podref: `bench-1007-2s0gyg/p${p * 1000 + k}`,
      ifname: 'net1',
    };
  const text = JSON.stringify({
    metadata: { name: `10.${p}.0.0-22`, uid: 'u', resourceVersion: '1' },
    spec: { range: `10.${100 + (p % 100)}.0.0/22`, allocations },
  });
  pools.set(String(p), poolView(JSON.parse(text)));
}
const h2 = heap();
const allocations = pools.size * 1000;
const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);
console.log(`${pods.size} pods: ${mib(h1 - h0)} MiB of heap, ${((h1 - h0) / pods.size).toFixed(0)} B per pod`);
console.log(
  `${allocations} allocations: ${mib(h2 - h1)} MiB, ${((h2 - h1) / allocations).toFixed(0)} B per allocation`,
);
