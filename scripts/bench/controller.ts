// `npm run bench:controller`: N pods and N allocations (N/1000 IPPools, a tenth of the allocations orphaned) created
// in a real API server, then the packaged `hereabouts controller`:
//   1. `--once`: list+watch sync, then one full pass that releases the orphans (pass time, RSS, peak RSS);
//   2. running: the periodic full pass over the same caches once nothing is left to clean (steady-state pass time).
// Targets for N = 10 000: full pass <= 2 s, RSS <= 150 MB.
// Usage: node scripts/bench/controller.ts [--count N] [--passes K]
import { spawn, spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { api, controlPlane, createNamespace, stopControlPlane } from '../../test/support/control-plane.ts';
import { requireBinary } from '../../test/support/paths.ts';

const { values } = parseArgs({
  options: { count: { type: 'string', default: '10000' }, passes: { type: 'string', default: '5' } },
});
const count = Number(values.count);
const passes = Number(values.passes);
const POOL_SIZE = 1000; // allocations per IPPool (a /22 each)
const bin = requireBinary();
const MB = 1e6 / 2 ** 20; // MiB per MB

type Line = {
  msg: string;
  seconds?: number;
  rssMiB?: number;
  maxRssMiB?: number;
  released?: number;
  [k: string]: unknown;
};
const lines = (stderr: string): Line[] =>
  stderr
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

const cp = await controlPlane();
const ns = await createNamespace(cp, 'bench');
try {
  const started = Date.now();
  await inParallel([...Array(count).keys()], 16, (i) =>
    api(cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p${i}`, labels: { app: 'bench' } },
      spec: { containers: [{ name: 'c', image: 'registry.example/app:1' }], nodeName: 'node-1' },
    }),
  );
  const pools = Math.ceil(count / POOL_SIZE);
  await inParallel([...Array(pools).keys()], 4, (p) => {
    const allocations: Record<string, object> = {};
    for (let k = 0; k < POOL_SIZE && p * POOL_SIZE + k < count; k++) {
      const i = p * POOL_SIZE + k;
      // Every tenth allocation belongs to a pod that does not exist: the pass has work to do.
      allocations[String(k + 1)] = {
        id: `c${i}`,
        podref: `${ns.name}/${i % 10 === 0 ? 'gone' : 'p'}${i}`,
        ifname: 'net1',
      };
    }
    return ns.create('ippools', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: `10.${100 + p}.0.0-22` },
      spec: { range: `10.${100 + p}.0.0/22`, allocations },
    });
  });
  console.log(
    `created ${count} pods and ${pools} IPPools with ${count} allocations (${count / 10} orphaned) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
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
  ];
  const t0 = Date.now();
  const once = spawnSync(bin, [...flags, '--once'], { encoding: 'utf8', env: {} });
  const wall = (Date.now() - t0) / 1000;
  const synced = lines(once.stderr).find((l) => l.msg === 'caches synced and lease held');
  const first = lines(once.stderr).find((l) => l.msg.startsWith('full pass done'));
  if (once.status !== 0 || synced === undefined || first === undefined)
    throw new Error(`controller --once failed:\n${once.stderr}`);
  console.log(
    `--once: sync ${synced.seconds} s, full pass ${first.seconds} s releasing ${first.released} orphans, RSS ${first.rssMiB} MiB, peak RSS ${first.maxRssMiB} MiB, process ${wall.toFixed(2)} s`,
  );

  const child = spawn(bin, [...flags, '--reconcile-interval', '1s'], { stdio: ['ignore', 'ignore', 'pipe'], env: {} });
  let text = '';
  child.stderr.on('data', (b: Buffer) => (text += b.toString()));
  const steady = await new Promise<Line[]>((resolve, reject) => {
    const timer = setInterval(() => {
      const done = lines(text).filter((l) => l.msg.startsWith('full pass done'));
      if (done.length >= passes) {
        clearInterval(timer);
        resolve(done);
      } else if (child.exitCode !== null) reject(new Error(`controller exited:\n${text}`));
    }, 200);
  });
  child.kill('SIGTERM');
  const times = steady.map((l) => l.seconds ?? NaN).sort((a, b) => a - b);
  const last = steady[steady.length - 1]!;
  console.log(
    `running: ${passes} periodic full passes, median ${times[Math.floor(times.length / 2)]} s, max ${times[times.length - 1]} s; RSS ${last.rssMiB} MiB, peak RSS ${last.maxRssMiB} MiB`,
  );
  const peak = Math.max(first.maxRssMiB ?? 0, last.maxRssMiB ?? 0);
  const passMax = Math.max(first.seconds ?? 0, times[times.length - 1] ?? 0);
  console.log(
    `result for ${count} pods / ${count} allocations: full pass <= ${passMax} s (target <= 2 s), peak RSS ${peak} MiB = ${(peak / MB).toFixed(0)} MB (target <= 150 MB)`,
  );
} finally {
  await api(cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`).catch(() => undefined);
  await ns.cleanup();
  if (cp.owned) stopControlPlane(cp);
}
