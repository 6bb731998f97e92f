// `hereabouts install --once` (the packaged executable) on a fake node: what lands in the CNI bin and config dirs,
// with which modes and contents; then the plugin allocates from the real API server with the files it wrote.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { runCni } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { fakeNode, installArgs, installOnce, readJson, type FakeNode, type PodEnv } from './host.ts';

const bin = requireBinary();
const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('hereabouts install --once', () => {
  let ns: Namespace;
  let node: FakeNode;
  let ca = '';
  let env: PodEnv;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'inst');
    const url = new URL(ns.cp.url);
    env = { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port, NODENAME: 'node-7' };
    ca = readFileSync(ns.cp.ca, 'utf8');
    node = fakeNode({ token: ns.cp.token, ca, namespace: ns.name });
    const run = installOnce(installArgs(node, { extra: ['--whereabouts-name'] }), env);
    assert.equal(run.code, 0, run.stderr);
  });
  after(async () => {
    rmSync(node.root, { recursive: true, force: true });
    await ns.cleanup();
  });

  test('installs the running executable as hereabouts and whereabouts, byte for byte, mode 0755', () => {
    const expected = sha256(bin);
    for (const name of ['hereabouts', 'whereabouts']) {
      assert.equal(statSync(join(node.binDir, name)).mode & 0o777, 0o755, name);
      assert.equal(sha256(join(node.binDir, name)), expected, name);
    }
    assert.deepEqual(readdirSync(node.binDir).sort(), ['hereabouts', 'whereabouts'], 'no temp file left behind');
  });

  test('whereabouts is a hard link to hereabouts: one inode, not a second copy of the executable', () => {
    const here = statSync(join(node.binDir, 'hereabouts'));
    const there = statSync(join(node.binDir, 'whereabouts'));
    assert.equal(there.ino, here.ino);
    assert.equal(here.nlink, 2);
  });

  test("temp files a killed copy left are swept at start; a fresh one (a concurrent installer's) is kept", () => {
    const other = fakeNode({ token: ns.cp.token, ca, namespace: ns.name });
    try {
      const stale = [join(other.binDir, '.hereabouts.tmp-17-a1b2c3'), join(other.binDir, '.whereabouts.tmp-17-d4e5f6')];
      const fresh = join(other.binDir, '.hereabouts.tmp-18-g7h8i9');
      const unrelated = join(other.binDir, '.hereabouts.tmp-notes');
      for (const path of [...stale, fresh, unrelated]) writeFileSync(path, 'partial');
      const old = new Date(Date.now() - 10 * 60_000);
      for (const path of [...stale, unrelated]) utimesSync(path, old, old);
      const run = installOnce(installArgs(other, { extra: ['--whereabouts-name'] }), env);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(readdirSync(other.binDir).sort(), [
        '.hereabouts.tmp-18-g7h8i9',
        '.hereabouts.tmp-notes',
        'hereabouts',
        'whereabouts',
      ]);
      assert.match(run.stderr, /removed \S*\.hereabouts\.tmp-17-a1b2c3/);
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('writes token, kubeconfig, flat config and nodename with mode 0600 in a 0700 hereabouts.d', () => {
    assert.equal(statSync(node.filesDir).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(node.filesDir).sort(), [
      'hereabouts.conf',
      'hereabouts.kubeconfig',
      'nodename',
      'token',
    ]);
    for (const file of readdirSync(node.filesDir))
      assert.equal(statSync(join(node.filesDir, file)).mode & 0o777, 0o600, file);
    assert.equal(readFileSync(join(node.filesDir, 'token'), 'utf8'), ns.cp.token);
    assert.equal(readFileSync(join(node.filesDir, 'nodename'), 'utf8'), 'node-7\n');
  });

  test('the written config lets the plugin allocate from the real API server, with the node name from the nodename file', async () => {
    const conf = {
      cniVersion: '1.0.0',
      name: 'installed',
      type: 'macvlan',
      ipam: {
        type: 'whereabouts',
        range: '10.88.0.0/24',
        configuration_path: join(node.filesDir, 'hereabouts.conf'),
        cache_dir: join(node.root, 'cache'),
      },
    };
    const call = {
      containerId: 'inst-1',
      netns: '/x',
      ifname: 'net1',
      path: node.binDir,
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=p1`,
    };
    const add = await runCni(join(node.binDir, 'whereabouts'), { command: 'ADD', ...call }, conf);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.deepEqual(add.json?.['ips'], [{ address: '10.88.0.1/24' }]);
    const pool = await ns.get('ippools', '10.88.0.0-24');
    const allocation = (pool?.['spec'] as { allocations: Record<string, { node?: string }> }).allocations['1'];
    assert.equal(allocation?.node, 'node-7');
    const del = await runCni(join(node.binDir, 'hereabouts'), { command: 'DEL', ...call }, conf);
    assert.equal(del.code, 0, del.stdout + del.stderr);
  });

  test('the kubeconfig reads the token file at its host path and embeds the CA and the pod namespace', () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    try {
      const run = installOnce(installArgs(other, { hostConfDir: '/etc/cni/net.d' }), {
        ...env,
        KUBERNETES_SERVICE_HOST: '10.96.0.1',
        KUBERNETES_SERVICE_PORT: '443',
      });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(readJson(join(other.filesDir, 'hereabouts.kubeconfig')), {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'local',
            cluster: {
              server: 'https://10.96.0.1:443',
              'certificate-authority-data': Buffer.from(ca).toString('base64'),
            },
          },
        ],
        users: [{ name: 'hereabouts', user: { tokenFile: '/etc/cni/net.d/hereabouts.d/token' } }],
        contexts: [{ name: 'hereabouts', context: { cluster: 'local', user: 'hereabouts', namespace: 'kube-system' } }],
        'current-context': 'hereabouts',
      });
      assert.deepEqual(readJson(join(other.filesDir, 'hereabouts.conf')), {
        datastore: 'kubernetes',
        kubernetes: { kubeconfig: '/etc/cni/net.d/hereabouts.d/hereabouts.kubeconfig' },
        // By default the plugin logs to a file on the host, so that its errors are findable (docs/troubleshooting.md).
        log_file: '/var/log/hereabouts.log',
      });
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('-n writes another namespace into the kubeconfig: where the plugin keeps its pools', () => {
    for (const flag of [['-n', 'pools'], ['--namespace=pools']]) {
      const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
      try {
        const run = installOnce(installArgs(other, { extra: flag }), { ...env, KUBERNETES_SERVICE_HOST: '10.96.0.1' });
        assert.equal(run.code, 0, run.stderr);
        const kubeconfig = readJson(join(other.filesDir, 'hereabouts.kubeconfig')) as {
          contexts: Array<{ context: { namespace: string } }>;
        };
        assert.equal(kubeconfig.contexts[0]?.context.namespace, 'pools', flag.join(' '));
      } finally {
        rmSync(other.root, { recursive: true, force: true });
      }
    }
  });

  test('an IPv6 KUBERNETES_SERVICE_HOST is written in brackets', () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    try {
      const run = installOnce(installArgs(other), {
        ...env,
        KUBERNETES_SERVICE_HOST: 'fd00:10:96::1',
        KUBERNETES_SERVICE_PORT: '6443',
      });
      assert.equal(run.code, 0, run.stderr);
      const kubeconfig = readJson(join(other.filesDir, 'hereabouts.kubeconfig')) as {
        clusters: Array<{ cluster: { server: string } }>;
      };
      assert.equal(kubeconfig.clusters[0]?.cluster.server, 'https://[fd00:10:96::1]:6443');
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('--log-level and --log-file go into the flat config', () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    try {
      const run = installOnce(
        installArgs(other, { extra: ['--log-level', 'debug', '--log-file', '/var/log/cni/ipam.log'] }),
        env,
      );
      assert.equal(run.code, 0, run.stderr);
      const flat = readJson(join(other.filesDir, 'hereabouts.conf'));
      assert.equal(flat['log_level'], 'debug');
      assert.equal(flat['log_file'], '/var/log/cni/ipam.log');
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('--log-file "" leaves log_file out of the flat config (the plugin logs to the runtime\'s stderr)', () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    try {
      const run = installOnce(installArgs(other, { extra: ['--log-file', ''] }), env);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(readJson(join(other.filesDir, 'hereabouts.conf'))['log_file'], undefined);
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('--whereabouts-kubeconfig writes whereabouts.d/whereabouts.kubeconfig (0600) and leaves whereabouts.conf alone', () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    try {
      const whereaboutsDir = join(other.confDir, 'whereabouts.d');
      mkdirSync(whereaboutsDir);
      const theirs =
        '{"datastore":"kubernetes","kubernetes":{"kubeconfig":"/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"},"log_level":"error"}\n';
      writeFileSync(join(whereaboutsDir, 'whereabouts.conf'), theirs);
      writeFileSync(join(whereaboutsDir, 'whereabouts.kubeconfig'), 'token: of-a-deleted-pod\n');
      const run = installOnce(installArgs(other, { extra: ['--whereabouts-kubeconfig'] }), env);
      assert.equal(run.code, 0, run.stderr);
      const kubeconfig = join(whereaboutsDir, 'whereabouts.kubeconfig');
      assert.equal(
        readFileSync(kubeconfig, 'utf8'),
        readFileSync(join(other.filesDir, 'hereabouts.kubeconfig'), 'utf8'),
      );
      assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
      assert.equal(readFileSync(join(whereaboutsDir, 'whereabouts.conf'), 'utf8'), theirs);
    } finally {
      rmSync(other.root, { recursive: true, force: true });
    }
  });

  test('a running copy of the plugin is replaced by a rename: new inode, the running process unharmed', async () => {
    const other = fakeNode({ token: 'tok', ca, namespace: 'kube-system' });
    const target = join(other.binDir, 'hereabouts');
    copyFileSync('/bin/sleep', target);
    const busy = spawn(target, ['30'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => busy.once('spawn', resolve));
      const inodeBefore = statSync(target).ino;
      const run = installOnce(installArgs(other), env); // writing in place would fail with ETXTBSY
      assert.equal(run.code, 0, run.stderr);
      assert.notEqual(statSync(target).ino, inodeBefore);
      assert.equal(statSync(target).size, statSync(bin).size);
      assert.equal(busy.exitCode, null, 'the running copy still runs');
      assert.deepEqual(readdirSync(other.binDir), ['hereabouts']);
    } finally {
      busy.kill('SIGKILL');
      rmSync(other.root, { recursive: true, force: true });
    }
  });
});

describe('hereabouts install refuses a bad setup before installing anything', () => {
  let node: FakeNode;
  before(() => {
    node = fakeNode({ token: 'tok', ca: 'not checked here', namespace: 'kube-system' });
  });
  after(() => rmSync(node.root, { recursive: true, force: true }));

  test('without KUBERNETES_SERVICE_HOST it exits 2', () => {
    const run = installOnce(installArgs(node), {});
    assert.equal(run.code, 2);
    assert.match(run.stderr, /KUBERNETES_SERVICE_HOST is not set/);
    assert.deepEqual(readdirSync(node.binDir), []);
  });

  test("an invalid --log-level exits 2 with the plugin parser's message, naming the flag", () => {
    const run = installOnce(installArgs(node, { extra: ['--log-level', 'loud'] }), {
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
    });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--log-level "loud" is not one of debug/);
    assert.doesNotMatch(run.stderr, /ipam\.|log_level/, 'the flag, not the flat config key');
    assert.deepEqual(readdirSync(node.binDir), []);
  });

  test('a missing service-account token fails and names the file', () => {
    const empty = join(node.root, 'no-sa');
    mkdirSync(empty);
    const args = installArgs(node).map((a) => (a === node.saDir ? empty : a));
    const run = installOnce(args, { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`cannot read the service account's ${empty}/token`));
    assert.deepEqual(readdirSync(node.binDir), []);
    assert.equal(existsSync(node.filesDir), false);
  });

  test('a --poll-interval that is not a positive number exits 2', () => {
    const run = installOnce(installArgs(node, { extra: ['--poll-interval', '0'] }), {
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
    });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--poll-interval "0" must be a positive number of seconds/);
  });
});

// The DaemonSet runs the installer as root with every capability dropped (deploy/daemonset.yaml): root-owned host
// dirs must be enough. setpriv drops the capabilities here as the container runtime would.
const rootWithSetpriv = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv');

test(
  'installs with no capability at all, as the DaemonSet runs it',
  { skip: rootWithSetpriv ? false : 'needs root and setpriv' },
  () => {
    const node = fakeNode({ token: 'tok', ca: 'ca', namespace: 'kube-system' });
    try {
      const run = spawnSync(
        '/usr/bin/setpriv',
        [
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--',
          bin,
          ...installArgs(node, { extra: ['--whereabouts-name', '--whereabouts-kubeconfig'] }),
          '--once',
        ],
        {
          env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', NODENAME: 'n1' },
          encoding: 'utf8',
        },
      );
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(readdirSync(node.binDir).sort(), ['hereabouts', 'whereabouts']);
      assert.deepEqual(readdirSync(node.filesDir).sort(), [
        'hereabouts.conf',
        'hereabouts.kubeconfig',
        'nodename',
        'token',
      ]);
    } finally {
      rmSync(node.root, { recursive: true, force: true });
    }
  },
);
