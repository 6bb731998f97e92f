// The connection cache must rebuild exactly what kubeconfig.ts resolves, re-read rotated files, notice an edited
// kubeconfig, never cache exec plugins, and trust only private entries of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CONNECTION_DIR,
  loadEndpointCached,
  sameEndpoint,
  type Resolver,
} from '../../../../src/kube/endpoint-cache.ts';
import { loadEndpoint, type ApiEndpoint } from '../../../../src/kube/kubeconfig.ts';
import { recipeOf } from '../../../../src/kube/endpoint-recipe.ts';

// A throw-away CA certificate, only ever compared as bytes.
const PEM =
  '-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG0Xv5s8MA0GCSqGSIb3DQEBCwUAMA0xCzAJBgNVBAMMAmNh\n-----END CERTIFICATE-----\n';

function setup(user: string, cluster = `      certificate-authority-data: ${Buffer.from(PEM).toString('base64')}`) {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-epc-'));
  const file = join(dir, 'kubeconfig');
  const text = (u: string) => `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster:
      server: https://127.0.0.1:6443/
${cluster}
users:
  - name: u
    user:
${u}
contexts:
  - name: x
    context:
      cluster: c
      user: u
      namespace: ipam
current-context: x
`;
  writeFileSync(file, text(user), { mode: 0o600 });
  const cacheDir = join(dir, 'cache');
  return { dir, file, cacheDir, rewrite: (u: string) => writeFileSync(file, text(u)) };
}

/** The real resolver, counting how often the slow path ran. */
function counting(): Resolver & { loads: number } {
  const r = {
    loads: 0,
    async load(path: string) {
      r.loads++;
      return loadEndpoint(path);
    },
    recipe: (text: string, path: string, endpoint: ApiEndpoint) => Promise.resolve(recipeOf(text, path, endpoint)),
  };
  return r;
}

const auth = (e: ApiEndpoint): unknown => (e.requestOptions.headers as Record<string, unknown>)['Authorization'];

test('a cache hit rebuilds the endpoint kubeconfig.ts resolves, without loading it again', async () => {
  const { file, cacheDir } = setup('      token: inline-token');
  const resolver = counting();
  const first = await loadEndpointCached(file, cacheDir, resolver);
  assert.equal(first.outcome, 'miss');
  const second = await loadEndpointCached(file, cacheDir, resolver);
  assert.equal(second.outcome, 'hit');
  assert.equal(resolver.loads, 1);
  const direct = await loadEndpoint(file);
  assert.ok(sameEndpoint(second.endpoint, direct));
  assert.equal(auth(second.endpoint), 'Bearer inline-token');
  assert.equal(second.endpoint.namespace, 'ipam');
  assert.equal(String(second.endpoint.requestOptions.ca), PEM);
  for (const e of [first.endpoint, second.endpoint, direct]) e.agent.destroy();
});

test('entries are private: 0600 files in a 0700 directory; a widened entry is not trusted', async () => {
  const { file, cacheDir } = setup('      token: t');
  (await loadEndpointCached(file, cacheDir, counting())).endpoint.agent.destroy();
  const dir = join(cacheDir, CONNECTION_DIR);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const entries = readdirSync(dir);
  assert.equal(entries.length, 1);
  const entry = join(dir, entries[0] ?? '');
  assert.equal(statSync(entry).mode & 0o777, 0o600);
  chmodSync(entry, 0o644);
  const again = await loadEndpointCached(file, cacheDir, counting());
  assert.equal(again.outcome, 'miss');
  again.endpoint.agent.destroy();
});

test('a token file is read anew on every hit (rotated service-account tokens)', async () => {
  const { dir, file, cacheDir } = setup('      tokenFile: sa-token');
  writeFileSync(join(dir, 'sa-token'), 'first\n');
  (await loadEndpointCached(file, cacheDir, counting())).endpoint.agent.destroy();
  writeFileSync(join(dir, 'sa-token'), 'rotated\n');
  const hit = await loadEndpointCached(file, cacheDir, counting());
  assert.equal(hit.outcome, 'hit');
  assert.equal(auth(hit.endpoint), 'Bearer rotated');
  hit.endpoint.agent.destroy();
});

test('a CA file is read anew on every hit', async () => {
  const { dir, file, cacheDir } = setup('      token: t', `      certificate-authority: ca.crt`);
  writeFileSync(join(dir, 'ca.crt'), PEM);
  (await loadEndpointCached(file, cacheDir, counting())).endpoint.agent.destroy();
  writeFileSync(join(dir, 'ca.crt'), PEM.replace('MIIB', 'MIIC'));
  const hit = await loadEndpointCached(file, cacheDir, counting());
  assert.equal(hit.outcome, 'hit');
  assert.equal(String(hit.endpoint.requestOptions.ca), PEM.replace('MIIB', 'MIIC'));
  hit.endpoint.agent.destroy();
});

test('an edited kubeconfig is a miss, and the new credentials are used', async () => {
  const { file, cacheDir, rewrite } = setup('      token: old');
  (await loadEndpointCached(file, cacheDir, counting())).endpoint.agent.destroy();
  rewrite('      token: new');
  const after = await loadEndpointCached(file, cacheDir, counting());
  assert.equal(after.outcome, 'miss');
  assert.equal(auth(after.endpoint), 'Bearer new');
  after.endpoint.agent.destroy();
});

test('client certificates and keys given as data are cached', async () => {
  const data = Buffer.from('pem-bytes').toString('base64');
  const { file, cacheDir } = setup(`      client-certificate-data: ${data}\n      client-key-data: ${data}`);
  (await loadEndpointCached(file, cacheDir, counting())).endpoint.agent.destroy();
  const hit = await loadEndpointCached(file, cacheDir, counting());
  assert.equal(hit.outcome, 'hit');
  assert.equal(String(hit.endpoint.requestOptions.cert), 'pem-bytes');
  assert.equal(String(hit.endpoint.requestOptions.key as Buffer | undefined), 'pem-bytes'); // a hit sets the bytes it read
  hit.endpoint.agent.destroy();
});

test('exec plugins are never cached: every call goes through kubeconfig.ts', async () => {
  const exec = [
    '      exec:',
    '        apiVersion: client.authentication.k8s.io/v1',
    '        command: /bin/true',
  ].join('\n');
  const { file, cacheDir } = setup(exec);
  const resolver: Resolver = {
    load: async () => ({ ...(await loadEndpoint(setup('      token: stand-in').file)) }),
    recipe: (text, path, endpoint) => Promise.resolve(recipeOf(text, path, endpoint)),
  };
  for (let i = 0; i < 2; i++) {
    const r = await loadEndpointCached(file, cacheDir, resolver);
    assert.equal(r.outcome, 'uncacheable');
    r.endpoint.agent.destroy();
  }
  assert.throws(() => readdirSync(join(cacheDir, CONNECTION_DIR)), /ENOENT/);
});

test('entries of another scope (e.g. another trust level of the naming config) never stand in', async () => {
  const { file, cacheDir } = setup('      token: t');
  const outcome = async (scope: string) => {
    const r = await loadEndpointCached(file, cacheDir, counting(), { scope });
    r.endpoint.agent.destroy();
    return r.outcome;
  };
  assert.equal(await outcome('operator'), 'miss');
  assert.equal(await outcome('tenant'), 'miss');
  assert.equal(await outcome('operator'), 'hit');
  assert.equal(await outcome('tenant'), 'hit');
});
