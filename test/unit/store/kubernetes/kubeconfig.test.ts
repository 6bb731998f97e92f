import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEndpoint, withTokenFiles } from '../../../../src/kube/kubeconfig.ts';
import { HereaboutsError } from '../../../../src/errors.ts';
import { cniCodeOf } from '../../../../src/cni/errors.ts';

test('withTokenFiles() renames client-go tokenFile to token-file with the path made absolute', () => {
  assert.equal(
    withTokenFiles('    tokenFile: token\n', '/etc/cni/net.d/whereabouts.d'),
    '    token-file: "/etc/cni/net.d/whereabouts.d/token"\n',
  );
});

test('withTokenFiles() keeps absolute paths and handles quoted JSON keys', () => {
  assert.equal(withTokenFiles('{"tokenFile": "/run/token"}', '/x'), '{"token-file": "/run/token"}');
});

test('withTokenFiles() leaves a kubeconfig without token files alone', () => {
  const text = 'users:\n  - name: u\n    user:\n      token: abc\n';
  assert.equal(withTokenFiles(text, '/x'), text);
});

function kubeconfig(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-kc-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, body);
  return file;
}

const base = (context: string, user: string) => `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster:
      server: https://127.0.0.1:6443/
      insecure-skip-tls-verify: true
users:
  - name: u
    user:
${user}
contexts:
  - name: x
    context:
      cluster: c
      user: u
${context}
current-context: x
`;

test('loadEndpoint() takes the namespace from the current context', async () => {
  const endpoint = await loadEndpoint(kubeconfig(base('      namespace: ipam', '      token: t')));
  assert.equal(endpoint.namespace, 'ipam');
  assert.equal(endpoint.server, 'https://127.0.0.1:6443');
  endpoint.agent.destroy();
});

test('loadEndpoint() defaults the namespace to kube-system, as Whereabouts does', async () => {
  const endpoint = await loadEndpoint(kubeconfig(base('', '      token: t')));
  assert.equal(endpoint.namespace, 'kube-system');
  endpoint.agent.destroy();
});

test('loadEndpoint() reads a tokenFile relative to the kubeconfig and trims its newline', async () => {
  const file = kubeconfig(base('', '      tokenFile: sa-token'));
  writeFileSync(join(file, '..', 'sa-token'), 'secret-token\n');
  const endpoint = await loadEndpoint(file);
  assert.equal((endpoint.requestOptions.headers as Record<string, string>)['Authorization'], 'Bearer secret-token');
  endpoint.agent.destroy();
});

test('loadEndpoint() of a missing file is a config error naming the file', async () => {
  await assert.rejects(
    loadEndpoint('/nonexistent/kubeconfig'),
    (err: unknown) =>
      err instanceof HereaboutsError && cniCodeOf(err) === 7 && err.message.includes('/nonexistent/kubeconfig'),
  );
});
