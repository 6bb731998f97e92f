// `npm run bench:contention`: W writers claiming offsets of one shared IPPool at once, on a private control plane,
// without the plugin around them, to see what the API server does under the contention a burst on a shared pool
// makes:
//   rv     what the store does: read the pool, JSON patch `test /metadata/resourceVersion` + `add` (+ clearing the
//          field tracking), and after a 422 the store's own backoff (retry.ts, as commit.ts sets it up) and a new
//          read (from the watch cache when it holds a newer version than the one refused, else a quorum read);
//   lease  the same, with each claim serialised by an advisory coordination.k8s.io Lease per pool (get; create, or
//          update when free or expired; poll every 20-60 ms while held; release by clearing the holder): a design
//          the store does not have (docs/benchmarks.md), measured here before it is built.
// Prints claims/s, kube-apiserver + etcd CPU per claim (/proc), refused pool writes and requests per claim.
// A benchmark, never part of `npm test`.
// Usage: node scripts/bench/contention.ts [--writers W] [--claims N] [--entries E] [--rounds R]
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { sleep } from '../../src/clock.ts';
import { ApiClient, type ApiRequest, type ApiResponse } from '../../src/kube/api.ts';
import { loadEndpoint } from '../../src/kube/kubeconfig.ts';
import { COMMIT_RETRY } from '../../src/store/kubernetes/commit.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { CONFLICT, retryOnConflict } from '../../src/kube/retry.ts';
import {
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type Namespace,
} from '../../test/support/control-plane.ts';
import { controlPlaneCpuMs } from './proc-cpu.ts';

const { values: flags } = parseArgs({
  options: {
    writers: { type: 'string', default: '20' },
    claims: { type: 'string', default: '10' },
    entries: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '2' },
  },
});
const [writers, claims, entries, rounds] = [flags.writers, flags.claims, flags.entries, flags.rounds].map(Number) as [
  number,
  number,
  number,
  number,
];
if (![writers, claims, entries, rounds].every((n) => Number.isInteger(n) && n > 0))
  throw new RangeError('--writers, --claims, --entries and --rounds take positive integers');

type Obj = Record<string, unknown>;
type Mode = 'rv' | 'lease';
const record = (i: number): Obj => ({
  id: `c${i}-${'0123456789abcdef'.repeat(4)}`,
  podref: `default/pod-${i}`,
  ifname: 'eth0',
  node: 'node-001',
  createdAt: new Date().toISOString(),
});
const versionOf = (res: ApiResponse): string | undefined =>
  ((res.body as Obj)['metadata'] as Obj)['resourceVersion'] as string | undefined;
const micro = (): string => new Date().toISOString().replace(/Z$/, '000Z'); // a Lease's MicroTime

interface Counts {
  poolRequests: number;
  refused: number;
  leaseRequests: number;
}

async function run(ns: Namespace, mode: Mode, round: number): Promise<string> {
  const pool = `${mode}-${round}`;
  const poolPath = objectPath(ns.name, 'ippools', pool);
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases`;
  const clients = await Promise.all(
    Array.from(
      { length: writers },
      async () => new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 120_000 }),
    ),
  );
  const counts: Counts = { poolRequests: 0, refused: 0, leaseRequests: 0 };
  const send = async (api: ApiClient, req: ApiRequest, count: keyof Counts): Promise<ApiResponse> => {
    counts[count]++;
    return api.send(req);
  };
  const allocations = Object.fromEntries(Array.from({ length: entries }, (_, i) => [String(i + 1), record(i)]));
  await send(
    clients[0]!,
    {
      method: 'POST',
      path: objectPath(ns.name, 'ippools'),
      body: {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: pool },
        spec: { range: '10.7.0.0/16', allocations },
      },
    },
    'poolRequests',
  );

  const acquire = async (api: ApiClient, holder: string): Promise<Obj> => {
    for (;;) {
      const current = await send(api, { method: 'GET', path: `${leasePath}/${pool}` }, 'leaseRequests');
      const spec = ((current.body as Obj | undefined)?.['spec'] ?? {}) as Obj;
      const taken = { holderIdentity: holder, leaseDurationSeconds: 5, acquireTime: micro(), renewTime: micro() };
      if (current.status === 404) {
        const created = await send(
          api,
          {
            method: 'POST',
            path: leasePath,
            body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: pool }, spec: taken },
          },
          'leaseRequests',
        );
        if (created.status === 201) return created.body as Obj;
        continue;
      }
      const renewed = typeof spec['renewTime'] === 'string' ? Date.parse(spec['renewTime']) : 0;
      const expired = renewed + Number(spec['leaseDurationSeconds'] ?? 5) * 1000 < Date.now();
      if (spec['holderIdentity'] === undefined || spec['holderIdentity'] === '' || expired) {
        const updated = await send(
          api,
          {
            method: 'PUT',
            path: `${leasePath}/${pool}`,
            body: { ...(current.body as Obj), spec: { ...spec, ...taken } },
          },
          'leaseRequests',
        );
        if (updated.status === 200) return updated.body as Obj;
        continue;
      }
      await sleep(20 + Math.random() * 40);
    }
  };

  const cpu0 = controlPlaneCpuMs(ns.cp.dir);
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (api, w) => {
      for (let k = 0; k < claims; k++) {
        const offset = 10_000 + w * 1_000 + k;
        const lease = mode === 'lease' ? await acquire(api, `writer-${w}`) : undefined;
        let refused: string | undefined;
        // The store's own retry loop and backoff (retry.ts), with the options its commits use.
        const outcome = await retryOnConflict(
          async () => {
            // As the store reads: after a refusal from the watch cache if it holds a newer version, else a quorum read.
            let read =
              refused === undefined
                ? undefined
                : await send(api, { method: 'GET', path: `${poolPath}?resourceVersion=${refused}` }, 'poolRequests');
            if (read === undefined || versionOf(read) === refused)
              read = await send(api, { method: 'GET', path: poolPath }, 'poolRequests');
            const version = versionOf(read);
            const patch = [
              { op: 'test', path: '/metadata/resourceVersion', value: version },
              { op: 'add', path: `/spec/allocations/${offset}`, value: record(offset) },
              { op: 'add', path: '/metadata/managedFields', value: [{}] },
            ];
            const written = await send(
              api,
              { method: 'PATCH', path: poolPath, body: patch, contentType: 'application/json-patch+json' },
              'poolRequests',
            );
            if (written.status === 200) return true;
            if (written.status !== 422)
              throw new Error(`PATCH ${poolPath}: ${written.status} ${JSON.stringify(written.body).slice(0, 300)}`);
            counts.refused++;
            refused = version;
            return CONFLICT;
          },
          { ...COMMIT_RETRY, budgetMs: 600_000 },
        );
        if (outcome.kind !== 'done')
          throw new Error(`writer ${w}: claim ${k} still refused after ${outcome.conflicts} attempts`);
        if (lease !== undefined) {
          await send(
            api,
            {
              method: 'PUT',
              path: `${leasePath}/${pool}`,
              body: { ...lease, spec: { ...(lease['spec'] as Obj), holderIdentity: '' } },
            },
            'leaseRequests',
          );
        }
      }
    }),
  );
  const n = writers * claims;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = (controlPlaneCpuMs(ns.cp.dir) - cpu0) / n;
  for (const api of clients) api.close();
  const f = (x: number, d = 1): string => x.toFixed(d);
  return `| ${mode} | ${f(n / seconds)} | ${f(cpu)} ms | ${f(counts.refused / n, 2)} | ${f(counts.poolRequests / n)} | ${f(counts.leaseRequests / n)} |`;
}

const cp = await privateControlPlane();
const rows: string[] = [];
try {
  const ns = await createNamespace(cp, 'contention');
  for (let round = 0; round < rounds; round++)
    for (const mode of ['rv', 'lease'] as const) rows.push(await run(ns, mode, round));
  await ns.cleanup();
} finally {
  stopControlPlane(cp);
}
console.log(`## bench:contention — ${new Date().toISOString()}\n`);
console.log(
  `${cpus().length} × ${cpus()[0]?.model ?? '?'}; ${writers} writers x ${claims} claims on one IPPool of ${entries} entries (growing), interleaved rounds\n`,
);
console.log(
  '| writes | claims/s | kube-apiserver + etcd CPU per claim | refused pool writes per claim | pool requests per claim | lease requests per claim |',
);
console.log('|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
