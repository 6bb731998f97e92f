// The node agent owns one host (a keeping connection pool and one write memory) for its life and hands it to every
// store it opens (runPlugin -> openStore -> openKubernetesStore); a plugin process passes none, and its store gets
// fresh ones: its API connection ends with the call. Nothing is flipped for the whole process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NetworkConfig } from '../../../../src/config/types.ts';
import { longLivedHost, openKubernetesStore, type StoreHost } from '../../../../src/store/kubernetes/open.ts';
import { testNetwork, testRange } from '../../../support/memory-store.ts';

const quiet = { debug() {}, info() {}, warning() {}, error() {} };
// A throw-away CA certificate, only ever compared as bytes (the store never dials here).
const PEM =
  '-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG0Xv5s8MA0GCSqGSIb3DQEBCwUAMA0xCzAJBgNVBAMMAmNh\n-----END CERTIFICATE-----\n';

function node(): { config: NetworkConfig; datastore: { kind: 'kubernetes'; kubeconfig: string; cacheDir: string } } {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-host-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443", certificate-authority-data: ' +
        Buffer.from(PEM).toString('base64') +
        ' } }]',
      'users: [{ name: u, user: { token: t } }]',
      'contexts: [{ name: x, context: { cluster: c, user: u, namespace: ipam } }]',
      'current-context: x',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const datastore = { kind: 'kubernetes' as const, kubeconfig, cacheDir: join(dir, 'cache') };
  const base = testNetwork([testRange('10.70.0.0/24')]);
  return { config: { ...base, ipam: { ...base.ipam, datastore } }, datastore };
}

async function open(n: ReturnType<typeof node>, host?: StoreHost) {
  return openKubernetesStore(n.config, n.datastore, {
    log: quiet,
    env: { NODENAME: 'n1' },
    ...(host === undefined ? {} : { host }),
  });
}

test("stores opened with the node agent's host share its kept API connection, and closing one keeps it for the next call", async () => {
  const n = node();
  const host = (await longLivedHost())();
  await (await open(n, host)).close(); // the first call resolves the kubeconfig and fills the node's connection cache
  const first = await open(n, host);
  let destroyed = false;
  first.api.endpoint.agent.destroy = () => void (destroyed = true);
  await first.close();
  assert.equal(destroyed, false, 'the kept connection was closed at the end of a call');
  const second = await open(n, host);
  assert.equal(second.api.endpoint.agent, first.api.endpoint.agent, 'the next call reuses the connection');
  assert.equal(host.connections.keptAgents(), 1, 'one agent for the one server and TLS identity');
  await second.close();
});

test('a store opened without a host (a plugin process) has a connection of its own, ended at close()', async () => {
  const n = node();
  const host = (await longLivedHost())();
  await (await open(n, host)).close();
  const first = await open(n);
  const second = await open(n);
  assert.notEqual(first.api.endpoint.agent, second.api.endpoint.agent);
  let destroyed = false;
  first.api.endpoint.agent.destroy = () => void (destroyed = true);
  await first.close();
  assert.equal(destroyed, true);
  await second.close();
  assert.equal(host.connections.keptAgents(), 1, "the agent's pool in the same process was left alone");
});
