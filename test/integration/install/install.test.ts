// `hereabouts install` as the DaemonSet runs it, with the host's dirs and the service account in temp dirs; the
// kubeconfig it writes is then used by the plugin against the real API server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

const bin = requireBinary();

interface Host {
  readonly root: string;
  readonly binDir: string;
  readonly confDir: string;
  readonly saDir: string;
}

function makeHost(sa: { token: string; ca: string; namespace: string }): Host {
  const root = mkdtempSync(join(tmpdir(), 'hab-install-'));
  const host = { root, binDir: join(root, 'opt/cni/bin'), confDir: join(root, 'etc/cni/net.d'), saDir: join(root, 'sa') };
  for (const dir of [host.binDir, host.confDir, host.saDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(host.saDir, 'token'), `${sa.token}\n`);
  writeFileSync(join(host.saDir, 'ca.crt'), sa.ca);
  writeFileSync(join(host.saDir, 'namespace'), sa.namespace);
  return host;
}

function installArgs(host: Host, ...extra: string[]): string[] {
  // In these tests the "host" path and the mounted path are the same directory.
  return ['install', '--cni-bin-dir', host.binDir, '--cni-conf-dir', host.confDir, '--host-cni-conf-dir', host.confDir, '--service-account-dir', host.saDir, ...extra];
}

describe('hereabouts install', () => {
  let ns: Namespace;
  let host: Host;
  let apiHost = '';
  let apiPort = '';
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'inst');
    const url = new URL(ns.cp.url);
    apiHost = url.hostname;
    apiPort = url.port;
    host = makeHost({ token: ns.cp.token, ca: readFileSync(ns.cp.ca, 'utf8'), namespace: ns.name });
  });
  after(async () => {
    rmSync(host.root, { recursive: true, force: true });
    await ns.cleanup();
  });

  test('--once installs the executable (0755, both names) and writes hereabouts.d files with mode 0600', () => {
    const run = spawnSync(bin, installArgs(host, '--once', '--whereabouts-name'), {
      env: { KUBERNETES_SERVICE_HOST: apiHost, KUBERNETES_SERVICE_PORT: apiPort, NODENAME: 'node-7' },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    for (const name of ['hereabouts', 'whereabouts']) {
      const st = statSync(join(host.binDir, name));
      assert.equal(st.mode & 0o777, 0o755);
      assert.equal(st.size, statSync(bin).size);
    }
    const dir = join(host.confDir, 'hereabouts.d');
    for (const file of ['token', 'hereabouts.kubeconfig', 'hereabouts.conf', 'nodename']) {
      assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600, file);
    }
    assert.equal(readFileSync(join(dir, 'nodename'), 'utf8'), 'node-7\n');
    const flat = JSON.parse(readFileSync(join(dir, 'hereabouts.conf'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(flat, { datastore: 'kubernetes', kubernetes: { kubeconfig: join(dir, 'hereabouts.kubeconfig') } });
  });

  test('the written config lets the plugin allocate from the real API server', async () => {
    const dir = join(host.confDir, 'hereabouts.d');
    const conf = { cniVersion: '1.0.0', name: 'installed', type: 'macvlan', ipam: { type: 'whereabouts', range: '10.88.0.0/24', configuration_path: join(dir, 'hereabouts.conf'), cache_dir: join(host.root, 'cache') } };
    const call = { containerId: 'inst-1', netns: '/x', ifname: 'net1', path: host.binDir, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p1` };
    const add = await runCni(join(host.binDir, 'whereabouts'), { command: 'ADD', ...call }, conf);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.deepEqual(add.json?.['ips'], [{ address: '10.88.0.1/24' }]);
    const pool = await ns.get('ippools', '10.88.0.0-24');
    const allocation = (pool?.['spec'] as { allocations: Record<string, { node?: string }> }).allocations['1'];
    assert.equal(allocation?.node, 'node-7', 'the node name came from the nodename file');
    const del = await runCni(join(host.binDir, 'hereabouts'), { command: 'DEL', ...call }, conf);
    assert.equal(del.code, 0, del.stdout + del.stderr);
  });

  test('a rotated token is picked up while running, and SIGTERM ends the installer cleanly', async () => {
    const child = spawn(bin, installArgs(host, '--poll-interval', '0.2'), {
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443', NODENAME: 'node-7' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const tokenFile = join(host.confDir, 'hereabouts.d', 'token');
    const until = async (check: () => boolean, what: string): Promise<void> => {
      for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(check(), `${what}; installer said: ${stderr}`);
    };
    try {
      await until(() => stderr.includes('wrote hereabouts.d'), 'the first write happened');
      const kubeconfig = JSON.parse(readFileSync(join(host.confDir, 'hereabouts.d', 'hereabouts.kubeconfig'), 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
      assert.equal(kubeconfig.clusters[0]?.cluster.server, 'https://[fd00::1]:6443', 'IPv6 host in brackets');
      writeFileSync(join(host.saDir, 'token'), 'rotated-token\n');
      await until(() => readFileSync(tokenFile, 'utf8') === 'rotated-token\n', 'the rotated token was written');
    } finally {
      writeFileSync(join(host.saDir, 'token'), `${ns.cp.token}\n`);
    }
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.match(stderr, /SIGTERM: exiting/);
  });

  test('without KUBERNETES_SERVICE_HOST the installer refuses to run', () => {
    const run = spawnSync(bin, installArgs(host, '--once'), { env: {}, encoding: 'utf8' });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /KUBERNETES_SERVICE_HOST is not set/);
  });
});
