// TLS session resumption across processes (src/kube/tls-session.ts) against the real kube-apiserver:
// the first client does a full handshake and stores the ticket (0600), a later client with the same credentials
// resumes from it, and a client with other credentials never picks it up.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../../src/kube/api.ts';
import { loadEndpointCached } from '../../../src/kube/endpoint-cache.ts';
import { TlsSessionStore } from '../../../src/kube/tls-session.ts';
import {
  controlPlane,
  createNamespace,
  kubeconfigFor,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';

let cp: ControlPlane;
let ns: Namespace;
before(async () => {
  cp = await controlPlane();
  ns = await createNamespace(cp, 'tls');
});
after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
  if ((cp as ControlPlane | undefined) !== undefined) stopControlPlane(cp);
});

/** One "process": resolve the kubeconfig through the node cache, make one request, report the handshake. */
async function oneProcess(kubeconfig: string, cacheDir: string): Promise<'full' | 'resumed' | undefined> {
  const { endpoint } = await loadEndpointCached(kubeconfig, cacheDir);
  const api = new ApiClient(endpoint, {
    timeoutMs: 10_000,
    tlsSessions: new TlsSessionStore(cacheDir, endpoint.server, endpoint.requestOptions),
  });
  try {
    const res = await api.send({
      method: 'GET',
      path: `/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/${ns.name}/ippools`,
    });
    assert.equal(res.status, 200);
    return api.lastHandshake;
  } finally {
    api.close();
  }
}

test('a later process resumes the TLS session the first one stored, in a private file', async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'hereabouts-tls-'));
  assert.equal(await oneProcess(ns.kubeconfig, cacheDir), 'full');
  const sessions = readdirSync(join(cacheDir, '.connection')).filter((n) => n.endsWith('.tls-session'));
  assert.equal(sessions.length, 1);
  assert.equal(statSync(join(cacheDir, '.connection', sessions[0] ?? '')).mode & 0o777, 0o600);
  assert.equal(await oneProcess(ns.kubeconfig, cacheDir), 'resumed');
  assert.equal(await oneProcess(ns.kubeconfig, cacheDir), 'resumed');
});

test('a client with other TLS material does not use the stored session', async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'hereabouts-tls-'));
  assert.equal(await oneProcess(ns.kubeconfig, cacheDir), 'full');
  // Same server and cache dir, but a kubeconfig that skips verification instead of naming the CA: other TLS
  // material, so another session file, and a full handshake.
  const insecure = join(mkdtempSync(join(tmpdir(), 'hereabouts-tls-kc-')), 'kubeconfig');
  writeFileSync(
    insecure,
    kubeconfigFor(cp, ns.name).replace(/certificate-authority: \S+/, 'insecure-skip-tls-verify: true'),
    { mode: 0o600 },
  );
  assert.equal(await oneProcess(insecure, cacheDir), 'full');
  assert.equal(readdirSync(join(cacheDir, '.connection')).filter((n) => n.endsWith('.tls-session')).length, 2);
});
