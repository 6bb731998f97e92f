// Debian's bridge plugin delegating IPAM to the packaged hereabouts executable, in namespaces this test creates.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { e2eSkipReason } from '../support/netns.ts';
import { E2eWorld, ipsOf } from './harness.ts';

const skip = e2eSkipReason();
if (skip !== undefined) console.log(`# skipping bridge e2e: ${skip}`);

function bridgeConf(world: E2eWorld, cniVersion: string, ipam: Record<string, unknown>): Record<string, unknown> {
  return {
    cniVersion,
    name: 'e2e-bridge',
    type: 'bridge',
    bridge: 'habbr0',
    // The bridge takes the gateway address only when IPAM names one; otherwise it would claim .1 for itself.
    isGateway: 'gateway' in ipam,
    ipMasq: false,
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: world.dataDir, ...ipam },
  };
}

const podArgs = (name: string): string =>
  `IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=x`;

describe('bridge plugin with hereabouts IPAM', { skip }, () => {
  let world: E2eWorld;
  before(() => {
    world = new E2eWorld();
  });
  after(() => (world as E2eWorld | undefined)?.close()); // unset if before() failed

  const v4 = { range: '10.99.0.0/24', gateway: '10.99.0.1' };

  test('ADD puts the first free address on eth0 inside the pod netns (CNI 1.0.0)', async () => {
    const pod = world.newPod();
    const res = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'c-first', netns: pod.path, args: podArgs('first') },
      bridgeConf(world, '1.0.0', v4),
    );
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.deepEqual(ipsOf(res.json), ['10.99.0.2/24']);
    assert.deepEqual(pod.addresses('eth0'), ['10.99.0.2/24']);
    const del = await world.plugin(
      'bridge',
      'DEL',
      { containerId: 'c-first', netns: pod.path, args: podArgs('first') },
      bridgeConf(world, '1.0.0', v4),
    );
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(pod.hasLink('eth0'), false);
  });

  test('two pods get distinct addresses and reach each other across the bridge', async () => {
    const a = world.newPod();
    const b = world.newPod();
    const conf = bridgeConf(world, '1.0.0', v4);
    const ra = await world.plugin('bridge', 'ADD', { containerId: 'c-a', netns: a.path, args: podArgs('a') }, conf);
    const rb = await world.plugin('bridge', 'ADD', { containerId: 'c-b', netns: b.path, args: podArgs('b') }, conf);
    assert.equal(ra.code, 0, ra.stdout);
    assert.equal(rb.code, 0, rb.stdout);
    const [ipA] = ipsOf(ra.json);
    const [ipB] = ipsOf(rb.json);
    assert.ok(ipA !== undefined && ipB !== undefined);
    assert.notEqual(ipA, ipB);
    // One ping between two namespaces of ours: proves the address is live on the interface.
    a.exec('ping', '-c', '1', '-W', '2', ipB.split('/')[0] ?? '');
    for (const [id, ns, name] of [
      ['c-a', a, 'a'],
      ['c-b', b, 'b'],
    ] as const) {
      const del = await world.plugin('bridge', 'DEL', { containerId: id, netns: ns.path, args: podArgs(name) }, conf);
      assert.equal(del.code, 0, del.stdout);
    }
  });

  test('a re-created sandbox of the same pod gets the same address back (idempotent ADD)', async () => {
    const conf = bridgeConf(world, '1.0.0', v4);
    const first = world.newPod();
    const r1 = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'sandbox-1', netns: first.path, args: podArgs('same') },
      conf,
    );
    assert.equal(r1.code, 0, r1.stdout);
    first.delete(); // the runtime lost the sandbox without a DEL
    const second = world.newPod();
    const r2 = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'sandbox-2', netns: second.path, args: podArgs('same') },
      conf,
    );
    assert.equal(r2.code, 0, r2.stdout);
    assert.deepEqual(ipsOf(r2.json), ipsOf(r1.json));
    assert.deepEqual(second.addresses('eth0'), ipsOf(r1.json));
    // The stale sandbox's DEL (netns already gone) succeeds and must not free the new sandbox's address.
    const staleDel = await world.plugin(
      'bridge',
      'DEL',
      { containerId: 'sandbox-1', netns: first.path, args: podArgs('same') },
      conf,
    );
    assert.equal(staleDel.code, 0, staleDel.stdout);
    const other = world.newPod();
    const r3 = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'other', netns: other.path, args: podArgs('other') },
      conf,
    );
    assert.notDeepEqual(ipsOf(r3.json), ipsOf(r2.json));
    for (const [id, ns, name] of [
      ['sandbox-2', second, 'same'],
      ['other', other, 'other'],
    ] as const) {
      assert.equal(
        (await world.plugin('bridge', 'DEL', { containerId: id, netns: ns.path, args: podArgs(name) }, conf)).code,
        0,
      );
    }
  });

  test('DEL releases the address: the next pod gets it again', async () => {
    const conf = bridgeConf(world, '1.0.0', { range: '10.98.0.0/29' });
    const p1 = world.newPod();
    const r1 = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'rel-1', netns: p1.path, args: podArgs('rel-1') },
      conf,
    );
    assert.equal(r1.code, 0, r1.stdout);
    const del = await world.plugin(
      'bridge',
      'DEL',
      { containerId: 'rel-1', netns: p1.path, args: podArgs('rel-1') },
      conf,
    );
    assert.equal(del.code, 0, del.stdout);
    const p2 = world.newPod();
    const r2 = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'rel-2', netns: p2.path, args: podArgs('rel-2') },
      conf,
    );
    assert.deepEqual(ipsOf(r2.json), ipsOf(r1.json));
    assert.equal(
      (await world.plugin('bridge', 'DEL', { containerId: 'rel-2', netns: p2.path, args: podArgs('rel-2') }, conf))
        .code,
      0,
    );
  });

  test('CNI 0.4.0: ADD renders versioned ips and CHECK passes through the bridge', async () => {
    const conf = bridgeConf(world, '0.4.0', { range: '10.97.0.0/24' });
    const pod = world.newPod();
    const add = await world.plugin(
      'bridge',
      'ADD',
      { containerId: 'v040', netns: pod.path, args: podArgs('v040') },
      conf,
    );
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const ips = add.json?.['ips'] as Array<{ version?: string; address: string }>;
    assert.equal(ips[0]?.version, '4');
    assert.equal(ips[0].address, '10.97.0.1/24');
    const check = await world.plugin(
      'bridge',
      'CHECK',
      { containerId: 'v040', netns: pod.path, args: podArgs('v040') },
      { ...conf, prevResult: add.json },
    );
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.equal(
      (await world.plugin('bridge', 'DEL', { containerId: 'v040', netns: pod.path, args: podArgs('v040') }, conf)).code,
      0,
    );
  });

  test('dual-stack ipRanges put one IPv4 and one IPv6 address on the interface', async () => {
    const conf = bridgeConf(world, '1.0.0', { ipRanges: [{ range: '10.96.0.0/24' }, { range: 'fd00:96::/64' }] });
    const pod = world.newPod();
    const add = await world.plugin('bridge', 'ADD', { containerId: 'ds', netns: pod.path, args: podArgs('ds') }, conf);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.deepEqual(ipsOf(add.json), ['10.96.0.1/24', 'fd00:96::1/64']);
    const onLink = pod.addresses('eth0');
    assert.ok(onLink.includes('10.96.0.1/24'), onLink.join());
    assert.ok(onLink.includes('fd00:96::1/64'), onLink.join());
    assert.equal(
      (await world.plugin('bridge', 'DEL', { containerId: 'ds', netns: pod.path, args: podArgs('ds') }, conf)).code,
      0,
    );
  });

  test('the "whereabouts" type name works as a drop-in', async () => {
    const conf = bridgeConf(world, '1.0.0', { range: '10.95.0.0/24' });
    (conf['ipam'] as Record<string, unknown>)['type'] = 'whereabouts';
    const pod = world.newPod();
    const add = await world.plugin('bridge', 'ADD', { containerId: 'wa', netns: pod.path, args: podArgs('wa') }, conf);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.deepEqual(pod.addresses('eth0'), ['10.95.0.1/24']);
    assert.equal(
      (await world.plugin('bridge', 'DEL', { containerId: 'wa', netns: pod.path, args: podArgs('wa') }, conf)).code,
      0,
    );
  });
});
