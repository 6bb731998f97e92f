// `npm run bench:requests`: what one request of each kind the Kubernetes store sends costs kube-apiserver + etcd, on
// a private control plane, one request at a time over one kept-alive connection (the store's own ApiClient). CPU is
// read from /proc/<pid>/stat of both before and after N requests. It backs the per-request figures quoted in
// docs/safety.md and docs/kubernetes-store.md: a read from the watch cache against a quorum read, a stale write
// refused as a JSON patch that tests the resourceVersion first against a stale merge patch, and their successes,
// on pools of a few and of many entries. A benchmark, never part of `npm test`.
// Usage: node scripts/bench/requests.ts [--runs N] [--entries A,B]
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { ApiClient, type ApiRequest } from '../../src/kube/api.ts';
import { loadEndpoint } from '../../src/kube/kubeconfig.ts';
import { objectPath } from '../../src/store/kubernetes/objects.ts';
import { createNamespace, privateControlPlane, stopControlPlane } from '../../test/support/control-plane.ts';
import { controlPlaneCpuMs } from './proc-cpu.ts';

const { values: flags } = parseArgs({
  options: { runs: { type: 'string', default: '100' }, entries: { type: 'string', default: '10,200' } },
});
const runs = Number(flags.runs);
const sizes = flags.entries.split(',').map(Number);
if (!Number.isInteger(runs) || runs < 1 || sizes.some((n) => !Number.isInteger(n) || n < 1))
  throw new RangeError('--runs and --entries take positive integers');

type Obj = Record<string, unknown>;
const GROUP = 'whereabouts.cni.cncf.io/v1alpha1';
const record = (i: number): Obj => ({
  id: `c${i}-${'0123456789abcdef'.repeat(4)}`,
  podref: `default/pod-${i}`,
  ifname: 'eth0',
  node: 'node-001',
  createdAt: new Date().toISOString(),
});
/** What the store sends as metadata.managedFields: the API server drops the object's field tracking. */
const CLEARED = [{}];
const versionOf = (body: unknown): string => String(((body as Obj)['metadata'] as Obj)['resourceVersion']);

const cp = await privateControlPlane();
const rows: Array<[string, number, number, number]> = [];
try {
  const ns = await createNamespace(cp, 'requests');
  const api = new ApiClient(await loadEndpoint(ns.kubeconfig), { timeoutMs: 30_000 });
  const send = async (req: ApiRequest, expect: number): Promise<unknown> => {
    const res = await api.send(req);
    if (res.status !== expect)
      throw new Error(
        `${req.method} ${req.path}: ${res.status}, expected ${expect}: ${JSON.stringify(res.body).slice(0, 300)}`,
      );
    return res.body;
  };
  const measure = async (label: string, one: (i: number) => Promise<unknown>): Promise<void> => {
    await one(-1); // a warm connection and a warm cache, as a node agent has them
    const cpu0 = controlPlaneCpuMs(cp.dir);
    const etcd0 = controlPlaneCpuMs(cp.dir, 'ETCD_PID');
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) await one(i);
    const etcd = (controlPlaneCpuMs(cp.dir, 'ETCD_PID') - etcd0) / runs;
    rows.push([label, (controlPlaneCpuMs(cp.dir) - cpu0) / runs, etcd, (performance.now() - t0) / runs]);
  };
  const path = (plural: 'ippools' | 'overlappingrangeipreservations' | 'nodeslicepools', name?: string) =>
    objectPath(ns.name, plural, name);

  await send(
    {
      method: 'POST',
      path: path('nodeslicepools'),
      body: {
        apiVersion: GROUP,
        kind: 'NodeSlicePool',
        metadata: { name: 'nsp' },
        spec: { range: '10.9.0.0/16', sliceSize: '/24' },
        status: {
          allocations: Array.from({ length: 20 }, (_, i) => ({ nodeName: `node-${i}`, sliceRange: `10.9.${i}.0/24` })),
        },
      },
    },
    201,
  );
  await measure('GET NodeSlicePool (20 slices), quorum read', () =>
    send({ method: 'GET', path: path('nodeslicepools', 'nsp') }, 200),
  );
  await measure('GET NodeSlicePool (20 slices), ?resourceVersion= (watch cache)', () =>
    send({ method: 'GET', path: `${path('nodeslicepools', 'nsp')}?resourceVersion=1` }, 200),
  );
  let reservation = 0;
  await measure('POST OverlappingRangeIPReservation', (i) => {
    const n = reservation++;
    const body = {
      apiVersion: GROUP,
      kind: 'OverlappingRangeIPReservation',
      metadata: { name: `10.8.${Math.floor(n / 250)}.${(n % 250) + 1}` },
      spec: { containerid: `c${i}`, podref: `default/pod-${i}`, ifname: 'eth0' },
    };
    return send({ method: 'POST', path: path('overlappingrangeipreservations'), body }, 201);
  });

  for (const size of sizes) {
    const pool = async (name: string): Promise<string> => {
      const allocations = Object.fromEntries(Array.from({ length: size }, (_, i) => [String(i + 1), record(i)]));
      return versionOf(
        await send(
          {
            method: 'POST',
            path: path('ippools'),
            body: {
              apiVersion: GROUP,
              kind: 'IPPool',
              metadata: { name },
              spec: { range: '10.7.0.0/16', allocations },
            },
          },
          201,
        ),
      );
    };
    const name = `reads-${size}`;
    const stale = await pool(name);
    // The store's first write clears the API server's field tracking, as every one of its writes does.
    await send(
      {
        method: 'PATCH',
        path: path('ippools', name),
        contentType: 'application/merge-patch+json',
        body: { metadata: { managedFields: CLEARED }, spec: { allocations: { '1': record(0) } } },
      },
      200,
    );
    await measure(`GET IPPool (${size} entries), quorum read`, () =>
      send({ method: 'GET', path: path('ippools', name) }, 200),
    );
    await measure(`GET IPPool (${size} entries), ?resourceVersion= (watch cache)`, () =>
      send({ method: 'GET', path: `${path('ippools', name)}?resourceVersion=${stale}` }, 200),
    );
    await measure(`stale claim refused (${size} entries): JSON patch testing the resourceVersion first (422)`, (i) =>
      send(
        {
          method: 'PATCH',
          path: path('ippools', name),
          contentType: 'application/json-patch+json',
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: stale },
            { op: 'add', path: `/spec/allocations/${50_000 + i}`, value: record(i) },
          ],
        },
        422,
      ),
    );
    await measure(`stale claim refused (${size} entries): merge patch with the resourceVersion (409)`, (i) =>
      send(
        {
          method: 'PATCH',
          path: path('ippools', name),
          contentType: 'application/merge-patch+json',
          body: { metadata: { resourceVersion: stale }, spec: { allocations: { [String(50_000 + i)]: record(i) } } },
        },
        409,
      ),
    );
    // Successes on pools of their own, so that all grow alike: as the store writes (clearing the field tracking), and
    // as it wrote before it did (the API server keeping an owner for every field of every entry).
    for (const tracked of [false, true]) {
      let version = await pool(`json-${size}-${tracked}`);
      await measure(
        `claim landed: JSON patch (${size} entries and growing)${tracked ? ', field tracking kept' : ''}`,
        async (i) => {
          const body = await send(
            {
              method: 'PATCH',
              path: path('ippools', `json-${size}-${tracked}`),
              contentType: 'application/json-patch+json',
              body: [
                { op: 'test', path: '/metadata/resourceVersion', value: version },
                { op: 'add', path: `/spec/allocations/${60_000 + i}`, value: record(i) },
                ...(tracked ? [] : [{ op: 'add', path: '/metadata/managedFields', value: CLEARED }]),
              ],
            },
            200,
          );
          version = versionOf(body);
        },
      );
    }
    let version = await pool(`merge-${size}`);
    await measure(`claim landed: merge patch (${size} entries and growing)`, async (i) => {
      const body = await send(
        {
          method: 'PATCH',
          path: path('ippools', `merge-${size}`),
          contentType: 'application/merge-patch+json',
          body: {
            metadata: { resourceVersion: version, managedFields: CLEARED },
            spec: { allocations: { [String(60_000 + i)]: record(i) } },
          },
        },
        200,
      );
      version = versionOf(body);
    });
  }
  api.close();
  await ns.cleanup();
} finally {
  stopControlPlane(cp);
}

console.log(`## bench:requests — ${new Date().toISOString()}\n`);
console.log(
  `${cpus().length} × ${cpus()[0]?.model ?? '?'}; ${runs} requests of each kind, one at a time, one kept-alive connection\n`,
);
console.log('| request | kube-apiserver + etcd CPU per request | of which etcd | wall per request |');
console.log('|---|---|---|---|');
for (const [label, cpu, etcd, wall] of rows)
  console.log(`| ${label} | ${cpu.toFixed(2)} ms | ${etcd.toFixed(2)} ms | ${wall.toFixed(2)} ms |`);
