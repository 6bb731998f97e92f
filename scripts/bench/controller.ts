// `npm run bench:controller`: one full pass over N allocations and N pods created in a real API server; prints the
// pass time and the controller's RSS (targets: <= 2 s and <= 150 MB for 10 000 of each).
// Usage: node scripts/bench/controller.ts [--count N]
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { api, controlPlane, createNamespace, stopControlPlane } from '../../test/support/control-plane.ts';
import { requireBinary } from '../../test/support/paths.ts';

const { values } = parseArgs({ options: { count: { type: 'string', default: '10000' } } });
const count = Number(values.count);
const POOL_SIZE = 1000; // allocations per IPPool (a /22 each)
const bin = requireBinary();

async function inParallel<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

const cp = await controlPlane();
const ns = await createNamespace(cp, 'bench');
try {
  const started = Date.now();
  await inParallel([...Array(count).keys()], 16, (i) =>
    api(cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${i}` }, spec: { containers: [{ name: 'c', image: 'x' }] } }),
  );
  const pools = Math.ceil(count / POOL_SIZE);
  await inParallel([...Array(pools).keys()], 4, (p) => {
    const allocations: Record<string, object> = {};
    for (let k = 0; k < POOL_SIZE && p * POOL_SIZE + k < count; k++) {
      const i = p * POOL_SIZE + k;
      // Every tenth allocation belongs to a pod that does not exist: the pass has work to do.
      allocations[String(k + 1)] = { id: `c${i}`, podref: `${ns.name}/${i % 10 === 0 ? 'gone' : 'p'}${i}`, ifname: 'net1' };
    }
    return ns.create('ippools', { apiVersion: 'whereabouts.cni.cncf.io/v1alpha1', kind: 'IPPool', metadata: { name: `10.${100 + p}.0.0-22` }, spec: { range: `10.${100 + p}.0.0/22`, allocations } });
  });
  console.log(`created ${count} pods and ${pools} IPPools with ${count} allocations in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const run = spawnSync(bin, ['controller', '--kubeconfig', ns.kubeconfig, '--once', '--metrics-addr', '', '--health-addr', '', '--reservation-grace', '0s'], { encoding: 'utf8', env: {} });
  const line = run.stderr.split('\n').find((l) => l.includes('full pass:'));
  if (run.status !== 0 || line === undefined) throw new Error(`controller failed: ${run.stderr}`);
  const msg = (JSON.parse(line) as { msg: string }).msg;
  console.log(`controller: ${msg}`);
  const seconds = Number(/, ([\d.]+) s,/.exec(msg)?.[1]);
  const rss = Number(/rss (\d+) MiB/.exec(msg)?.[1]);
  console.log(`full pass over ${count} allocations and ${count} pods: ${seconds.toFixed(2)} s (target <= 2 s), RSS ${rss} MiB (target <= 150 MB = 143 MiB)`);
} finally {
  await api(cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`).catch(() => undefined);
  await ns.cleanup();
  if (cp.owned) stopControlPlane(cp);
}
