// The DaemonSet pod runs in the host's network and rolls by surge: the new pod starts while the old one still holds
// the metrics port. It must keep running (and keep its node agent and files) and serve /metrics once the port is free,
// or the rollout never finishes (maxUnavailable 0 keeps the old pod until the new one runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { freePort } from '../../support/free-port.ts';
import { fakeNode, installArgs, startInstaller, waitFor } from './host.ts';

test('an installer whose metrics port is taken keeps running and serves /metrics once the port is free', async () => {
  const node = fakeNode({ token: 't', ca: 'not a real CA', namespace: 'kube-system' });
  const port = await freePort();
  const old = createServer();
  await new Promise<void>((resolve) => old.listen(port, '127.0.0.1', resolve));
  const installer = startInstaller(
    installArgs(node, { extra: ['--poll-interval', '0.2', '--metrics-addr', `127.0.0.1:${port}`, '--log-file', ''] }),
    {
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      NODENAME: 'node-p',
    },
  );
  try {
    await waitFor(
      () => installer.stderr().includes('not serving /metrics yet (retrying)'),
      'the installer reports the taken port',
      installer,
    );
    assert.equal(installer.child.exitCode, null, 'the installer still runs');
    await new Promise<void>((resolve) => old.close(() => resolve()));
    await waitFor(
      () => installer.stderr().includes(`serving /metrics and /healthz on 127.0.0.1:${port}`),
      'the installer serves once the port is free',
      installer,
    );
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    assert.equal(installer.stderr().split('not serving /metrics yet').length - 1, 1, 'the same failure is logged once');
  } finally {
    installer.child.kill('SIGKILL');
    old.close();
    rmSync(node.root, { recursive: true, force: true });
  }
});
