// deploy/ stays applicable: `kubectl apply -k deploy/ --dry-run=server` against the real API server, and the node
// RBAC really is enough for the plugin, and no more (a token of its ServiceAccount allocates but cannot read pods).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { api, apiRequest, controlPlane, kubeconfigFor, type ControlPlane } from '../../support/control-plane.ts';
import { repoRoot, requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

function kubectlOf(cp: ControlPlane): string {
  const line = readFileSync(join(cp.dir, 'env'), 'utf8').split('\n').find((l) => l.startsWith('export KUBECTL='));
  assert.ok(line !== undefined, 'start.sh records KUBECTL');
  return line.slice('export KUBECTL='.length).replace(/^'|'$/g, '');
}

describe('deploy/ manifests', () => {
  let cp: ControlPlane;
  let kubectl: string;
  let scratch: string;
  before(async () => {
    cp = await controlPlane();
    kubectl = kubectlOf(cp);
    scratch = mkdtempSync(join(tmpdir(), 'hab-deploy-'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  const run = (...args: string[]): string => execFileSync(kubectl, ['--kubeconfig', cp.kubeconfig, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  test('kubectl apply -k deploy/ --dry-run=server accepts every object', () => {
    const out = run('apply', '-k', join(repoRoot, 'deploy'), '--dry-run=server');
    for (const expected of [
      'customresourcedefinition.apiextensions.k8s.io/ippools.whereabouts.cni.cncf.io',
      'serviceaccount/hereabouts-node',
      'role.rbac.authorization.k8s.io/hereabouts-node',
      'clusterrole.rbac.authorization.k8s.io/hereabouts-controller',
      'daemonset.apps/hereabouts-node',
      'deployment.apps/hereabouts-controller',
    ]) {
      assert.ok(out.includes(expected), `${expected} in:\n${out}`);
    }
  });

  test('the node ServiceAccount can allocate through the plugin but cannot list pods', async () => {
    const rbac = join(repoRoot, 'deploy', 'rbac-node.yaml');
    run('apply', '-f', rbac);
    try {
      const token = (await api(cp, 'POST', '/api/v1/namespaces/kube-system/serviceaccounts/hereabouts-node/token', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      })) as { status: { token: string } };
      const kubeconfig = join(scratch, 'node.kubeconfig');
      writeFileSync(kubeconfig, kubeconfigFor(cp, 'kube-system', { token: token.status.token }), { mode: 0o600 });
      const conf = { cniVersion: '1.0.0', name: 'rbac', type: 'macvlan', ipam: { type: 'hereabouts', range: '10.89.0.0/24', network_name: 'rbactest', kubernetes: { kubeconfig }, cache_dir: join(scratch, 'cache') } };
      const call = { containerId: 'rbac-1', netns: '/x', ifname: 'net1', path: '/x', args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=r1' };
      const add = await runCni(bin, { command: 'ADD', ...call }, conf, { extraEnv: { NODENAME: 'rbac-node' } });
      assert.equal(add.code, 0, add.stdout + add.stderr);
      const del = await runCni(bin, { command: 'DEL', ...call }, conf, { extraEnv: { NODENAME: 'rbac-node' } });
      assert.equal(del.code, 0, del.stdout + del.stderr);
      const asNode = { ...cp, token: token.status.token };
      assert.equal((await apiRequest(asNode, 'GET', '/api/v1/pods')).status, 403);
      assert.equal((await apiRequest(asNode, 'GET', '/api/v1/namespaces/kube-system/secrets')).status, 403);
    } finally {
      await apiRequest(cp, 'DELETE', '/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/rbactest-10.89.0.0-24');
      run('delete', '-f', rbac, '--ignore-not-found');
    }
  });
});
