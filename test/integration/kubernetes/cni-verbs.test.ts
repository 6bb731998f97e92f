// Every CNI verb of the packaged executable on the Kubernetes store, as a runtime calls it: ADD, an idempotent ADD
// from a re-created sandbox, CHECK, DEL, GC and STATUS, with the results read back from the API server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, poolView, reservationNames, type ConfOptions } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'cniverbs');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const NODE = 'worker-1';

function call(command: string, conf: Record<string, unknown>, containerId?: string, pod?: string): Promise<CniOutcome> {
  return runCni(
    requireBinary(),
    {
      command,
      path: '/opt/cni/bin',
      ...(containerId === undefined
        ? {}
        : {
            containerId,
            netns: `/var/run/netns/${containerId}`,
            ifname: 'eth0',
            args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod ?? containerId}`,
          }),
    },
    conf,
    { extraEnv: { NODENAME: NODE } },
  );
}

const conf = (options: ConfOptions) => cniConf(ns, NODE, options);
const addressOf = (outcome: CniOutcome) =>
  (outcome.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;

test('ADD prints the allocated address and records it in the IPPool', async () => {
  const out = await call('ADD', conf({ name: 'v-add', range: '10.90.0.0/24' }), 'c-add', 'pod-add');
  assert.equal(out.code, 0, out.stdout);
  assert.equal(addressOf(out), '10.90.0.1/24');
  const entry = (await poolView(ns, '10.90.0.0-24'))?.allocations.get('10.90.0.1');
  assert.deepEqual([entry?.['id'], entry?.['podref'], entry?.['node']], ['c-add', 'default/pod-add', NODE]);
});

test('ADD from a re-created sandbox of the same pod returns the same address', async () => {
  const c = conf({ name: 'v-again', range: '10.91.0.0/24' });
  const first = await call('ADD', c, 'sandbox-1', 'pod-again');
  const second = await call('ADD', c, 'sandbox-2', 'pod-again');
  assert.deepEqual([first.code, second.code], [0, 0]);
  assert.equal(addressOf(second), addressOf(first));
  assert.equal((await poolView(ns, '10.91.0.0-24'))?.allocations.get('10.91.0.1')?.['id'], 'sandbox-2');
});

test('CHECK passes for the holder and fails with code 102 for another container', async () => {
  const c = conf({ name: 'v-check', range: '10.92.0.0/24' });
  const added = await call('ADD', c, 'c-check');
  const prevResult = added.json;
  assert.equal((await call('CHECK', { ...c, prevResult }, 'c-check')).code, 0);
  const other = await call('CHECK', { ...c, prevResult }, 'c-stranger');
  assert.equal(other.json?.['code'], 102);
});

test('DEL releases the address and its reservation; a second DEL succeeds too', async () => {
  const c = conf({ name: 'v-del', range: '10.93.0.0/24' });
  assert.equal((await call('ADD', c, 'c-del')).code, 0);
  assert.equal((await call('DEL', c, 'c-del')).code, 0);
  assert.equal((await call('DEL', c, 'c-del')).code, 0);
  assert.equal((await poolView(ns, '10.93.0.0-24'))?.allocations.size, 0);
  assert.ok(!(await reservationNames(ns)).includes('10.93.0.1'));
});

test('GC releases the allocations of this node missing from cni.dev/valid-attachments', async () => {
  const base = conf({ name: 'v-gc', range: '10.94.0.0/24' });
  const c = { ...base, ipam: { ...(base['ipam'] as Record<string, unknown>), gc_grace_seconds: 0 } };
  for (const id of ['keep', 'drop']) assert.equal((await call('ADD', c, `c-${id}`)).code, 0);
  const gc = await call('GC', { ...c, 'cni.dev/valid-attachments': [{ containerID: 'c-keep', ifname: 'eth0' }] });
  assert.equal(gc.code, 0, gc.stdout);
  assert.deepEqual(
    [...((await poolView(ns, '10.94.0.0-24'))?.allocations.values() ?? [])].map((e) => e['id']),
    ['c-keep'],
  );
});

test('GC spares an allocation younger than gc_grace_seconds (its createdAt in the IPPool) though it is not in the valid list', async () => {
  const c = conf({ name: 'v-gc-young', range: '10.94.1.0/24' });
  assert.equal((await call('ADD', c, 'c-young')).code, 0);
  const gc = await call('GC', { ...c, 'cni.dev/valid-attachments': [] });
  assert.equal(gc.code, 0, gc.stdout);
  assert.deepEqual(
    [...((await poolView(ns, '10.94.1.0-24'))?.allocations.values() ?? [])].map((e) => e['id']),
    ['c-young'],
  );
});

test('STATUS succeeds while the API serves, also once the range is exhausted (ADD fails with code 100)', async () => {
  const c = conf({ name: 'v-status', range: '10.95.0.0/30' });
  assert.equal((await call('STATUS', c)).code, 0);
  for (const id of ['s1', 's2']) assert.equal((await call('ADD', c, id)).code, 0);
  assert.equal((await call('ADD', c, 's3')).json?.['code'], 100);
  const status = await call('STATUS', c);
  assert.equal(status.code, 0, status.stdout);
});

test('STATUS fails with code 50 and ADD with code 11 when the API server is unreachable', async () => {
  const kubeconfig = join(ns.dir, 'unreachable.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor({ ...ns.cp, url: 'https://127.0.0.1:1' }, ns.name));
  const c = conf({ name: 'v-down', range: '10.96.0.0/24', kubeconfig });
  assert.equal((await call('STATUS', c)).json?.['code'], 50);
  assert.equal((await call('ADD', c, 'c-down')).json?.['code'], 11);
});
