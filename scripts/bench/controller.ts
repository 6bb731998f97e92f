// `npm run bench:controller`: N pods and N allocations (N/1000 IPPools, a tenth of the allocations orphaned) created
// in a real API server, then the packaged `hereabouts controller`:
//   1. `--once`: list+watch sync, then one full pass that releases the orphans (sync time, pass time, peak RSS, the
//      API requests it made per released address, the API server's own CPU and memory meanwhile);
//   2. running: the periodic full pass over the same caches once nothing is left to clean (steady pass, steady RSS);
//   3. a leader SIGKILLed mid-pass (after a fiftieth of the releases), then a new --once: the pools must end holding
//      every live pod's allocation and no orphan (--no-restart skips it).
// Pods are realistic by default (labels, owner references, 3 containers, a Running status, Multus' network-status
// annotation with two networks, the second listing the pod's allocated address); --minimal makes bare pods.
// The controller's log goes to a file (a release batch writes one line per address), never into this process.
// Usage: node scripts/bench/controller.ts [--count N] [--passes K] [--minimal] [--keep-pods | --pods-namespace NS]
//   --keep-pods leaves the pods (creating 100 000 realistic pods takes minutes) and prints their namespace;
//   --pods-namespace NS uses the N pods such a run left in NS (the IPPools are made afresh in the bench's namespace);
//   --memory-limit MiB runs the controller in a memory cgroup of that size (root; as in a pod with that limit);
//   --keep-logs DIR copies the controller's logs there;
//   --node-flags=F runs the controller from source under this Node with flags F (e.g. --cpu-prof), not dist/.
import { spawn } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, controlPlane, createNamespace, stopControlPlane } from '../../test/support/control-plane.ts';
import { repoRoot, requireBinary } from '../../test/support/paths.ts';
import { processCpuMs } from './proc-cpu.ts';

const { values } = parseArgs({
  allowNegative: true,
  options: {
    count: { type: 'string', default: '10000' },
    passes: { type: 'string', default: '5' },
    minimal: { type: 'boolean', default: false },
    'keep-pods': { type: 'boolean', default: false },
    'pods-namespace': { type: 'string' },
    'node-flags': { type: 'string' },
    'keep-logs': { type: 'string' },
    'memory-limit': { type: 'string' },
    restart: { type: 'boolean', default: true },
  },
});
const count = Number(values.count);
const passes = Number(values.passes);
const POOL_SIZE = 1000; // allocations per IPPool (a /22 each)
const bin = requireBinary();
const memoryCgroup =
  values['memory-limit'] === undefined ? undefined : makeMemoryCgroup(Number(values['memory-limit']));

type Line = {
  msg: string;
  seconds?: number;
  rssMiB?: number;
  maxRssMiB?: number;
  heapUsedMiB?: number;
  heapTotalMiB?: number;
  released?: number;
  readMs?: number;
  releaseMs?: number;
  reservationsMs?: number;
};
const lines = (file: string): Line[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

async function inParallel<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** Pool p, allocation k: the address the allocation holds (offset k+1 in 10.(100+p).0.0/22). */
const addressOf = (i: number): string => {
  const p = Math.floor(i / POOL_SIZE);
  const offset = (i % POOL_SIZE) + 1;
  return `10.${100 + p}.${offset >> 8}.${offset & 255}`;
};

const container = (name: string, image: string, port: number): object => ({
  name,
  image,
  ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
  env: [
    { name: 'LOG_LEVEL', value: 'info' },
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  ],
  resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
  volumeMounts: [{ name: 'config', mountPath: '/etc/app' }],
});

function pod(i: number, minimal: boolean): object {
  if (minimal)
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p${i}`, labels: { app: 'bench' } },
      spec: { containers: [{ name: 'c', image: 'registry.example/app:1' }], nodeName: 'node-1' },
    };
  const rs = `bench-${Math.floor(i / 50)}`;
  const networkStatus = [
    {
      name: 'cbr0',
      interface: 'eth0',
      ips: [`10.244.${(i >> 8) & 255}.${i & 255}`],
      mac: '0a:58:0a:f4:00:01',
      default: true,
      dns: {},
    },
    { name: 'bench/macvlan-conf', interface: 'net1', ips: [addressOf(i)], mac: '6e:3f:1a:0c:22:7b', dns: {} },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `p${i}`,
      labels: {
        app: 'bench',
        'app.kubernetes.io/name': 'bench',
        'app.kubernetes.io/component': 'worker',
        'pod-template-hash': rs.slice(-10),
        team: 'network',
      },
      annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify(networkStatus, null, 2) },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: rs,
          uid: `00000000-0000-4000-8000-${String(Math.floor(i / 50)).padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: `node-${i % 100}`,
      containers: [
        container('app', 'registry.example/app:1.4.2', 8080),
        container('sidecar', 'registry.example/proxy:2.1', 15001),
        container('metrics', 'registry.example/exporter:0.9', 9100),
      ],
      volumes: [{ name: 'config', configMap: { name: 'bench-config' } }],
    },
  };
}

/** A Running status as the kubelet writes it: five conditions, three running containers. */
function status(i: number): object {
  const t = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  const conditions = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
    (type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: t }),
  );
  const containerStatuses = ['app', 'sidecar', 'metrics'].map((name, n) => ({
    name,
    state: { running: { startedAt: t } },
    lastState: {},
    ready: true,
    restartCount: 0,
    image: `registry.example/${name}:1`,
    imageID: `registry.example/${name}@sha256:${'0123456789abcdef'.repeat(4)}`,
    containerID: `containerd://${(i * 3 + n).toString(16).padStart(64, '0')}`,
    started: true,
  }));
  return {
    status: {
      phase: 'Running',
      conditions,
      hostIP: `192.168.${Math.floor((i % 100) / 250)}.${(i % 100) + 1}`,
      podIP: `10.244.${(i >> 8) & 255}.${i & 255}`,
      podIPs: [{ ip: `10.244.${(i >> 8) & 255}.${i & 255}` }],
      startTime: t,
      containerStatuses,
      qosClass: 'Burstable',
    },
  };
}

/** apiserver_request_total summed by verb, from the API server's own /metrics. */
async function requestsByVerb(): Promise<Map<string, number>> {
  const text = String(await api(cp, 'GET', '/metrics'));
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const verb = /verb="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
    out.set(verb, (out.get(verb) ?? 0) + Number(m[2]));
  }
  return out;
}

function apiserverPid(): string | undefined {
  try {
    return /^export APISERVER_PID=(\d+)$/m.exec(readFileSync(join(cp.dir, 'env'), 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}
const rssMiBOf = (pid: string): number =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

/** Runs the controller with its log in `logFile`; resolves with its exit status. */
function run(args: readonly string[], logFile: string): { child: ReturnType<typeof spawn>; exited: Promise<number> } {
  const fd = openSync(logFile, 'w');
  // --node-flags: the controller runs from source under this Node with those flags (--cpu-prof, --heap-prof, ...).
  const flags = values['node-flags'];
  const argv =
    flags === undefined
      ? [bin, ...args]
      : [process.execPath, ...flags.split(' ').filter(Boolean), join(repoRoot, 'src/cli/main.ts'), ...args];
  // --memory-limit: the controller starts inside the memory cgroup, as in a pod with that limit (Node sizes its heap
  // from it, and the kernel kills the process that goes over).
  const cgroup = memoryCgroup;
  const child =
    cgroup === undefined
      ? spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', fd], env: {} })
      : spawn('sh', ['-c', `echo $$ > ${cgroup.procs} && exec "$@"`, 'sh', ...argv], {
          stdio: ['ignore', 'ignore', fd],
          env: {},
        });
  closeSync(fd);
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))),
  );
  return { child, exited };
}

/** A memory cgroup (v1, or v2 with the memory controller) limited to --memory-limit MiB; undefined without the flag. */
function makeMemoryCgroup(mib: number): { dir: string; procs: string; peakMiB(): number; kills(): number } {
  const v1 = '/sys/fs/cgroup/memory';
  const isV1 = existsSync(join(v1, 'memory.limit_in_bytes'));
  const dir = join(isV1 ? v1 : '/sys/fs/cgroup', `hereabouts-bench-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, isV1 ? 'memory.limit_in_bytes' : 'memory.max'), String(mib * 2 ** 20));
  const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
  return {
    dir,
    procs: join(dir, 'cgroup.procs'),
    peakMiB: () => Number(read(isV1 ? 'memory.max_usage_in_bytes' : 'memory.peak')) / 2 ** 20,
    kills: () => Number(/oom_kill (\d+)/.exec(read(isV1 ? 'memory.oom_control' : 'memory.events'))?.[1] ?? 0),
  };
}

/** Pods in `namespace`, or in the whole cluster. */
async function podCount(namespace?: string): Promise<number> {
  const path = namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${namespace}/pods`;
  const list = (await api(cp, 'GET', `${path}?limit=1`)) as {
    items?: unknown[];
    metadata?: { remainingItemCount?: number };
  };
  return (list.items?.length ?? 0) + (list.metadata?.remainingItemCount ?? 0);
}

const cp = await controlPlane();
const ns = await createNamespace(cp, 'bench');
const reused = values['pods-namespace'];
const podsNs = reused ?? ns.name;
try {
  const others = await podCount();
  if (others > 0)
    console.log(`note: ${others} pods of other namespaces are in the cluster (the controller caches them too)`);
  const started = Date.now();
  if (reused !== undefined) {
    const there = await podCount(podsNs);
    if (there !== count) throw new Error(`--pods-namespace ${podsNs} holds ${there} pods, not --count ${count}`);
  } else
    await inParallel([...Array(count).keys()], 16, async (i) => {
      await api(cp, 'POST', `/api/v1/namespaces/${podsNs}/pods`, pod(i, values.minimal));
      if (!values.minimal)
        await api(
          cp,
          'PATCH',
          `/api/v1/namespaces/${podsNs}/pods/p${i}/status`,
          status(i),
          'application/merge-patch+json',
        );
    });
  const pools = Math.ceil(count / POOL_SIZE);
  const poolName = (p: number): string => `10.${100 + p}.0.0-22`;
  const createPools = (): Promise<void> =>
    inParallel([...Array(pools).keys()], 4, (p) => {
      const allocations: Record<string, object> = {};
      for (let k = 0; k < POOL_SIZE && p * POOL_SIZE + k < count; k++) {
        const i = p * POOL_SIZE + k;
        // Every tenth allocation belongs to a pod that does not exist: the pass has work to do.
        allocations[String(k + 1)] = {
          id: `c${i}`,
          podref: `${podsNs}/${i % 10 === 0 ? 'gone' : 'p'}${i}`,
          ifname: 'net1',
        };
      }
      return ns.create('ippools', {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: poolName(p) },
        spec: { range: `10.${100 + p}.0.0/22`, allocations },
      });
    });
  await createPools();
  console.log(
    `${reused === undefined ? 'created' : `reused ${podsNs}'s`} ${count} ${values.minimal ? 'minimal' : 'realistic'} pods and ${pools} IPPools with ${count} allocations (${count / 10} orphaned) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );

  const flags = [
    'controller',
    '--kubeconfig',
    ns.kubeconfig,
    '--metrics-addr',
    '',
    '--health-addr',
    '',
    '--reservation-grace',
    '0s',
    '--claims',
    'none',
  ];
  const pid = apiserverPid();
  const before = await requestsByVerb();
  const cpuBefore = pid === undefined ? NaN : processCpuMs(pid);
  let apiserverPeakMiB = pid === undefined ? NaN : rssMiBOf(pid);
  const apiserverStartMiB = apiserverPeakMiB;
  const sampler = setInterval(() => {
    if (pid !== undefined) apiserverPeakMiB = Math.max(apiserverPeakMiB, rssMiBOf(pid));
  }, 100);
  const onceLog = join(ns.dir, 'controller-once.log');
  const t0 = Date.now();
  const status0 = await run([...flags, '--once'], onceLog).exited;
  const wall = (Date.now() - t0) / 1000;
  clearInterval(sampler);
  const cpuMs = pid === undefined ? NaN : processCpuMs(pid) - cpuBefore;
  const after = await requestsByVerb();
  const onceLines = lines(onceLog);
  const synced = onceLines.find((l) => l.msg === 'caches synced and lease held');
  const first = onceLines.find((l) => l.msg.startsWith('full pass done'));
  if (status0 !== 0 || synced === undefined || first === undefined)
    throw new Error(`controller --once failed (exit ${status0}); its log: ${onceLog}`);
  const released = first.released ?? 0;
  const byVerb = [...after].map(([verb, n]) => [verb, n - (before.get(verb) ?? 0) - (verb === 'GET' ? 1 : 0)] as const);
  const requests = byVerb.reduce((sum, [, n]) => sum + n, 0);
  console.log(`caches synced: ${synced.seconds} s`);
  console.log(
    `first full pass: ${first.seconds} s releasing ${released} orphans; controller RSS ${first.rssMiB} MiB, peak RSS ${first.maxRssMiB} MiB (V8 heap ${first.heapUsedMiB} MiB used of ${first.heapTotalMiB}); process ${wall.toFixed(2)} s`,
  );
  console.log(
    `  of which: pods read live ${first.readMs} ms, releases written ${first.releaseMs} ms, reservations judged ${first.reservationsMs} ms; the rest (pool statuses, slices) ${Math.round((first.seconds ?? 0) * 1000 - (first.readMs ?? 0) - (first.releaseMs ?? 0) - (first.reservationsMs ?? 0))} ms`,
  );
  console.log(
    `API requests of the --once run: ${requests} (${byVerb
      .filter(([, n]) => n > 0)
      .map(([v, n]) => `${v} ${n}`)
      .join(', ')}), ${(requests / Math.max(1, released)).toFixed(2)} per released address (sync lists included)`,
  );
  console.log(
    pid === undefined
      ? 'kube-apiserver: its pid is unknown (control plane not started by scripts/control-plane/start.sh)'
      : `kube-apiserver during the --once run: CPU ${(cpuMs / 1000).toFixed(1)} s (${((cpuMs / 1000 / wall) * 100).toFixed(0)}% of one core), RSS ${apiserverStartMiB.toFixed(0)} -> peak ${apiserverPeakMiB.toFixed(0)} MiB`,
  );

  const runningLog = join(ns.dir, 'controller-running.log');
  const running = run([...flags, '--reconcile-interval', '1s'], runningLog);
  const steady = await new Promise<Line[]>((resolve, reject) => {
    const timer = setInterval(() => {
      const done = lines(runningLog).filter((l) => l.msg.startsWith('full pass done'));
      if (done.length >= passes) {
        clearInterval(timer);
        resolve(done);
      } else if (running.child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`controller exited; its log: ${runningLog}`));
      }
    }, 200);
  });
  // RSS split: the executable's mapped code and data files (RssFile) against what the process allocated (RssAnon).
  const split = readFileSync(`/proc/${running.child.pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(split)?.[1] ?? NaN);
  running.child.kill('SIGTERM');
  await running.exited;
  const times = steady.map((l) => l.seconds ?? NaN).sort((a, b) => a - b);
  const last = steady[steady.length - 1]!;
  console.log(
    `steady full pass (${passes} periodic passes): median ${times[Math.floor(times.length / 2)]} s, max ${times[times.length - 1]} s; steady RSS ${last.rssMiB} MiB, peak RSS ${last.maxRssMiB} MiB (V8 heap ${last.heapUsedMiB} MiB used of ${last.heapTotalMiB}; now ${(kib('RssAnon') / 1024).toFixed(0)} MiB anonymous + ${(kib('RssFile') / 1024).toFixed(0)} MiB file-backed)`,
  );
  const peak = Math.max(first.maxRssMiB ?? 0, last.maxRssMiB ?? 0);
  if (memoryCgroup !== undefined)
    console.log(
      `memory cgroup limited to ${values['memory-limit']} MiB: peak use ${memoryCgroup.peakMiB().toFixed(0)} MiB (page cache included), OOM kills ${memoryCgroup.kills()}`,
    );
  console.log(
    `result for ${count} pods / ${count} allocations / ${pools} pools: sync ${synced.seconds} s, first pass ${first.seconds} s, steady median ${times[Math.floor(times.length / 2)]} s, peak RSS ${peak} MiB, steady RSS ${last.rssMiB} MiB, ${(requests / Math.max(1, released)).toFixed(2)} requests per released address`,
  );
  if (values.restart) {
    // A leader killed mid-pass (an OOM kill, a node lost), then a new one: nothing lost, nothing harmful repeated.
    await api(cp, 'DELETE', ns.path('ippools'));
    await createPools();
    const killedLog = join(ns.dir, 'controller-killed.log');
    const killed = run([...flags, '--once'], killedLog);
    const releasedLines = (file: string): Line[] => lines(file).filter((l) => l.msg.startsWith('released '));
    while (releasedLines(killedLog).length < count / 50 && killed.child.exitCode === null)
      await new Promise((r) => setTimeout(r, 50));
    killed.child.kill('SIGKILL');
    await killed.exited;
    const before = releasedLines(killedLog).length;
    const againLog = join(ns.dir, 'controller-after-kill.log');
    const t = Date.now();
    const again = await run([...flags, '--once'], againLog).exited;
    const after = releasedLines(againLog).length;
    // What the pools hold now: every allocation of an existing pod, and none of a missing one.
    let kept = 0;
    let orphansLeft = 0;
    for (let p = 0; p < pools; p++) {
      const object = (await ns.get('ippools', poolName(p))) as {
        spec?: { allocations?: Record<string, { podref?: string }> };
      };
      for (const a of Object.values(object.spec?.allocations ?? {}))
        if (a.podref?.includes('/gone') === true) orphansLeft++;
        else kept++;
    }
    const expectKept = count - count / 10;
    console.log(
      `leader SIGKILLed mid-pass after logging ${before} releases; the next --once (exit ${again}) released ${after} more in ${((Date.now() - t) / 1000).toFixed(1)} s: pools hold ${kept} of ${expectKept} live pods' allocations and ${orphansLeft} orphans`,
    );
    if (again !== 0 || kept !== expectKept || orphansLeft !== 0)
      throw new Error(`after the restart the pools are wrong; logs: ${killedLog}, ${againLog}`);
  }
} finally {
  if (reused === undefined && values['keep-pods']) {
    // Left for the next run's --pods-namespace: a namespace of the bench's own, so the cleanup below spares it.
    console.log(`pods kept: --pods-namespace ${ns.name}`);
  }
  // Deleting thousands of pods outlasts one request: wait until they are gone, or the next run caches them too.
  for (let i = 0; i < 120 && reused === undefined && !values['keep-pods'] && (await podCount(ns.name)) > 0; i++) {
    await api(cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 5000));
  }
  const keepLogs = values['keep-logs'];
  if (keepLogs !== undefined) cpSync(ns.dir, keepLogs, { recursive: true, filter: (f) => !f.endsWith('kubeconfig') });
  if (reused === undefined && values['keep-pods']) await api(cp, 'DELETE', ns.path('ippools'));
  else await ns.cleanup();
  if (memoryCgroup !== undefined) rmdirSync(memoryCgroup.dir);
  if (cp.owned) stopControlPlane(cp);
}
