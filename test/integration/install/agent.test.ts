// `hereabouts install` serves the node agent on --agent-socket: plugin calls on the node are forwarded to it. During a
// rolling update the new pod finds the socket still served by the old pod's agent: it keeps installing, and takes
// the socket over once the old agent lets go. Its /metrics says whether it serves the socket and how requests ended.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentProcess } from '../../support/agent.ts';
import { runCni } from '../../support/cni.ts';
import { controlPlane } from '../../support/control-plane.ts';
import { freePort } from '../../support/free-port.ts';
import { requireBinary } from '../../support/paths.ts';
import { fakeNode, installArgs, startInstaller, waitFor, type RunningInstaller } from './host.ts';

const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((f) => f()));

test(
  'the installer starts its agent once the previous agent on the socket is gone, and the agent serves calls',
  { timeout: 60_000 },
  async () => {
    const ca = readFileSync((await controlPlane()).ca, 'utf8');
    const node = fakeNode({ token: 't', ca, namespace: 'kube-system' });
    cleanups.push(() => rmSync(node.root, { recursive: true, force: true }));
    const socket = join(node.root, 'run', 'agent.sock');
    const previous = await startAgentProcess(requireBinary(), socket);
    cleanups.push(() => previous.kill());
    const port = await freePort();
    const metric = async (name: string): Promise<number | undefined> => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? undefined : Number(line.slice(name.length + 1));
    };
    const installer: RunningInstaller = startInstaller(
      installArgs(node, { extra: ['--poll-interval', '0.2', '--metrics-addr', `127.0.0.1:${port}`, '--log-file', ''] }),
      {
        KUBERNETES_SERVICE_HOST: '10.96.0.1',
        NODENAME: 'node-a',
      },
    );
    cleanups.push(() => installer.child.kill('SIGKILL'));
    await waitFor(
      () => installer.stderr().includes('no node agent yet'),
      'the installer found the socket served',
      installer,
    );
    assert.match(installer.stderr(), /served by another agent/);
    await waitFor(
      () => installer.stderr().includes('serving /metrics and /healthz'),
      'the installer serves /metrics',
      installer,
    );
    assert.equal(await metric('hereabouts_node_agent_up'), 0, 'not serving the socket yet');
    assert.equal(await metric('hereabouts_node_agent_enabled'), 1, 'but set to serve it: the alert would count this');
    previous.kill('SIGTERM');
    await previous.exited;
    await waitFor(
      () => installer.stderr().includes(`agent: listening on ${socket}`),
      "the installer's agent took over",
      installer,
    );
    assert.ok(lstatSync(socket).isSocket());
    const conf = {
      cniVersion: '1.0.0',
      name: 'inst',
      type: 'bridge',
      ipam: { type: 'hereabouts', datastore: 'local', data_dir: join(node.root, 'data'), range: '10.94.0.0/24' },
    };
    const out = await runCni(
      requireBinary(),
      { command: 'ADD', containerId: 'c1', netns: '/x', ifname: 'eth0', path: '/x' },
      conf,
      {
        extraEnv: { HEREABOUTS_AGENT_SOCKET: socket, HEREABOUTS_TIMINGS: '1' },
      },
    );
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stderr, /"in the node agent/);
    assert.equal(await metric('hereabouts_node_agent_up'), 1);
    assert.equal(
      await metric('hereabouts_node_agent_calls_total{result="answered"}'),
      1,
      'the ADD was served by this agent',
    );
    assert.equal(await metric('hereabouts_node_agent_calls_total{result="deadline"}'), 0);
    installer.child.kill('SIGTERM');
    assert.equal(await installer.exit(), 0);
    assert.throws(() => lstatSync(socket), /ENOENT/, 'the agent removes its socket when it stops');
  },
);
