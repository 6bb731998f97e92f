// `hereabouts install` as the DaemonSet container runs it: it stays up and keeps the node's files right — a rotated
// token or CA, a removed config file, a replaced plugin — until SIGTERM, which ends it with exit 0.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { controlPlane } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import {
  fakeNode,
  installArgs,
  readJson,
  startInstaller,
  waitFor,
  writeServiceAccount,
  type FakeNode,
  type RunningInstaller,
} from './host.ts';

const bin = requireBinary();

describe('hereabouts install, running', () => {
  let node: FakeNode;
  let installer: RunningInstaller;
  let ca = '';
  const read = (file: string): string => readFileSync(join(node.filesDir, file), 'utf8');
  before(async () => {
    ca = readFileSync((await controlPlane()).ca, 'utf8');
    node = fakeNode({ token: 'first-token', ca, namespace: 'kube-system' });
    installer = startInstaller(installArgs(node, { extra: ['--poll-interval', '0.2', '--whereabouts-name'] }), {
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      NODENAME: 'node-3',
    });
    await waitFor(() => installer.stderr().includes('nodename'), 'the first write happened', installer);
  });
  after(() => {
    installer.child.kill('SIGKILL');
    rmSync(node.root, { recursive: true, force: true });
  });

  test('a rotated token is written within the poll interval', async () => {
    writeServiceAccount(node, { token: 'rotated-token\n' });
    await waitFor(() => read('token') === 'rotated-token', 'the rotated token was written', installer);
    assert.equal(statSync(join(node.filesDir, 'token')).mode & 0o777, 0o600);
  });

  test('a changed CA is written into the kubeconfig', async () => {
    const caOf = (): unknown =>
      (
        readJson(join(node.filesDir, 'hereabouts.kubeconfig')) as {
          clusters: Array<{ cluster: Record<string, unknown> }>;
        }
      ).clusters[0]?.cluster['certificate-authority-data'];
    assert.equal(caOf(), Buffer.from(ca).toString('base64'));
    const rotated = `${ca}${ca}`; // a CA bundle during a CA rotation: old and new
    writeServiceAccount(node, { ca: rotated });
    await waitFor(() => caOf() === Buffer.from(rotated).toString('base64'), 'the new CA bundle was written', installer);
  });

  test('a removed config file is written again', async () => {
    unlinkSync(join(node.filesDir, 'hereabouts.conf'));
    const flat = join(node.filesDir, 'hereabouts.conf');
    await waitFor(
      () => existsSync(flat) && read('hereabouts.conf').includes('"datastore": "kubernetes"'),
      'the flat config is back',
      installer,
    );
  });

  test('a plugin replaced by someone else is installed again', async () => {
    const target = join(node.binDir, 'whereabouts');
    copyFileSync('/bin/true', target);
    // The installer logs each path after it is back, and the log arrives through a pipe: wait for both.
    await waitFor(() => statSync(target).size === statSync(bin).size, 'our executable is back', installer);
    await waitFor(
      () => /reinstalled .*whereabouts/.test(installer.stderr()),
      'the installer said it reinstalled whereabouts',
      installer,
    );
    // whereabouts is a hard link: writing over it wrote hereabouts too, and both are whole again, one inode.
    assert.equal(statSync(join(node.binDir, 'hereabouts')).size, statSync(bin).size);
    assert.equal(statSync(target).ino, statSync(join(node.binDir, 'hereabouts')).ino);
  });

  test('a removed whereabouts is linked to hereabouts again', async () => {
    const target = join(node.binDir, 'whereabouts');
    unlinkSync(target);
    await waitFor(
      () => existsSync(target) && statSync(target).ino === statSync(join(node.binDir, 'hereabouts')).ino,
      'whereabouts is a link to hereabouts again',
      installer,
    );
  });

  test('SIGTERM ends the installer with exit 0', async () => {
    installer.child.kill('SIGTERM');
    assert.equal(await installer.exit(), 0);
    assert.match(installer.stderr(), /SIGTERM: exiting/);
  });
});
