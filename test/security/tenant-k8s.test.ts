// The tenant against the kubernetes datastore and a real kube-apiserver: hostile names and ranges that reach the API
// (in-process through runPlugin, ADD then DEL), and a kubeconfig user without RBAC (a 403) through the executable.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runPlugin } from '../../src/cni/plugin.ts';
import { runCni } from '../support/cni.ts';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../support/control-plane.ts';
import { requireBinary } from '../support/paths.ts';
import { CONTROL, NAMES, RANGES } from './corpus.ts';
import { judge } from './judge.ts';

let ns: Namespace;
before(async () => {
  ns = await createNamespace(await controlPlane(), 'tenant');
});
after(async () => {
  await ns.cleanup();
});

test(
  'hostile names and ranges on the kubernetes datastore: CNI answers only, never an internal error',
  { timeout: 120_000 },
  async (t) => {
    const variants: Array<Record<string, unknown>> = [];
    for (const name of NAMES) variants.push({ network_name: name });
    for (const range of RANGES)
      variants.push({ range }, { range, network_name: 'tn' }, { range, enable_overlapping_ranges: false });
    for (const ch of CONTROL) variants.push({ network_name: `tn${ch}` }, { range: `10.66.0.0/24${ch}` });
    const failures: string[] = [];
    const codes = new Map<number, number>();
    let id = 0;
    for (const variant of variants) {
      for (const verb of ['ADD', 'DEL'] as const) {
        id++;
        const ipam = {
          type: 'hereabouts',
          kubernetes: { kubeconfig: ns.kubeconfig },
          cache_dir: join(ns.dir, 'cache'),
          range: '10.66.0.0/24',
          ...variant,
        };
        let stdout = '';
        const exit = await runPlugin({
          env: {
            CNI_COMMAND: verb,
            CNI_CONTAINERID: `k${id}`,
            CNI_NETNS: '/x',
            CNI_IFNAME: 'eth0',
            CNI_PATH: '/x',
            HEREABOUTS_ALLOWED_DIRS: ns.dir,
            NODENAME: 'tenant-node',
            CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p${id}`,
          },
          stdin: Buffer.from(JSON.stringify({ cniVersion: '1.0.0', name: 'tenant-k8s', type: 'bridge', ipam })),
          stdout: (text) => void (stdout += text),
          stderr: () => undefined,
        });
        const verdict = judge(verb, exit, stdout);
        codes.set(verdict.code, (codes.get(verdict.code) ?? 0) + 1);
        if (!verdict.ok) failures.push(`${verb} ${JSON.stringify(variant)}: ${verdict.why}`);
      }
    }
    t.diagnostic(
      `kubernetes corpus: ${id} requests against the API server; answers by code: ${[...codes].map(([c, n]) => `${c}:${n}`).join(' ')}`,
    );
    assert.deepEqual(failures, []);
  },
);

test('a 403 from the API server (a user without RBAC) is code 11, with details naming both possible causes', async () => {
  await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'norbac' },
  });
  const request = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/serviceaccounts/norbac/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 600 },
  })) as { status: { token: string } };
  const kubeconfig = join(ns.dir, 'norbac.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { token: request.status.token }), { mode: 0o600 });
  const conf = {
    cniVersion: '1.0.0',
    name: 'norbac',
    type: 'bridge',
    ipam: {
      type: 'hereabouts',
      kubernetes: { kubeconfig },
      cache_dir: join(ns.dir, 'cache403'),
      range: '10.67.0.0/24',
    },
  };
  const out = await runCni(
    requireBinary(),
    {
      command: 'ADD',
      containerId: 'norbac1',
      netns: '/x',
      ifname: 'eth0',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p`,
      path: '/x',
    },
    conf,
    {
      extraEnv: { NODENAME: 'tenant-node', HEREABOUTS_ALLOWED_DIRS: ns.dir },
    },
  );
  assert.equal(out.json?.['code'], 11, out.stdout);
  assert.match(String(out.json['msg']), /403/);
  assert.match(String(out.json['details']), /starting/);
  assert.match(String(out.json['details']), /RBAC/);
});

test('after the switch, a Whereabouts NAD with "log_file": "/tmp/whereabouts.log" allocates on the kubernetes datastore and nothing is created there', async () => {
  const nadPath = '/tmp/whereabouts.log';
  const there = existsSync(nadPath) ? statSync(nadPath) : undefined;
  // Whereabouts' example NAD; its kubeconfig is the installer's (here the namespace's, in the allowed dir).
  const conf = {
    cniVersion: '0.3.1',
    name: 'whereabouts-conf',
    type: 'macvlan',
    master: 'eth0',
    mode: 'bridge',
    ipam: {
      type: 'whereabouts',
      range: '192.168.2.225/28',
      log_file: nadPath,
      log_level: 'debug',
      kubernetes: { kubeconfig: ns.kubeconfig },
      cache_dir: join(ns.dir, 'cache-whereabouts'),
    },
  };
  const out = await runCni(
    requireBinary(),
    {
      command: 'ADD',
      containerId: 'wb-log-file',
      netns: '/x',
      ifname: 'net1',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=wb`,
      path: '/x',
    },
    conf,
    // The test's own dir is allowed (its kubeconfig and cache live there); /tmp is not, as on a node.
    { extraEnv: { NODENAME: 'tenant-node', HEREABOUTS_ALLOWED_DIRS: ns.dir } },
  );
  assert.equal(out.code, 0, out.stdout + out.stderr);
  const address = (out.json?.['ips'] as Array<{ address: string }>)[0]!.address;
  assert.equal(address, '192.168.2.225/28');
  const pool = await ns.get('ippools', '192.168.2.224-28');
  const allocations = (pool?.['spec'] as { allocations: Record<string, { id: string; podref: string }> }).allocations;
  assert.deepEqual(
    Object.values(allocations).map((a) => [a.id, a.podref]),
    [['wb-log-file', `${ns.name}/wb`]],
  );
  const said = out.stderr.split('\n').filter((l) => l.includes("ignoring the network configuration's log_file"));
  assert.equal(said.length, 1, out.stderr);
  const line = JSON.parse(said[0]!) as { level: string; msg: string };
  assert.equal(line.level, 'warning');
  assert.match(line.msg, /ipam\.log_file "\/tmp\/whereabouts\.log" is outside the directories/);
  if (there === undefined) assert.equal(existsSync(nadPath), false, `${nadPath} was created`);
  else assert.equal(statSync(nadPath).mtimeMs, there.mtimeMs, `${nadPath} was written`);
});
