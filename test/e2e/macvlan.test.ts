// Debian's macvlan plugin delegating IPAM to hereabouts. The parent lives inside our own host namespace: a dummy
// device where the kernel has the dummy driver, else one end of a veth pair (this sandbox's kernel has no dummy).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { e2eSkipReason } from '../support/netns.ts';
import { E2eWorld, ipsOf } from './harness.ts';

const skip = e2eSkipReason();
if (skip !== undefined) console.log(`# skipping macvlan e2e: ${skip}`);

describe('macvlan plugin with hereabouts IPAM', { skip }, () => {
  let world: E2eWorld;
  before(() => {
    world = new E2eWorld();
    try {
      world.host.exec('ip', 'link', 'add', 'habdummy0', 'type', 'dummy');
    } catch {
      world.host.exec('ip', 'link', 'add', 'habdummy0', 'type', 'veth', 'peer', 'name', 'habdummy1');
      world.host.exec('ip', 'link', 'set', 'habdummy1', 'up');
    }
    world.host.exec('ip', 'link', 'set', 'habdummy0', 'up');
  });
  after(() => (world as E2eWorld | undefined)?.close()); // unset if before() failed

  for (const cniVersion of ['0.4.0', '1.0.0']) {
    test(`CNI ${cniVersion}: ADD assigns, a repeated ADD is idempotent, DEL releases`, async () => {
      const conf = {
        cniVersion,
        name: `e2e-macvlan-${cniVersion.replaceAll('.', '')}`,
        type: 'macvlan',
        master: 'habdummy0',
        mode: 'bridge',
        ipam: {
          type: 'hereabouts',
          datastore: 'local',
          data_dir: world.dataDir,
          range: '192.168.250.0/28',
          exclude: ['192.168.250.0/30'],
        },
      };
      const pod = world.newPod();
      const call = {
        containerId: `mv-${cniVersion}`,
        netns: pod.path,
        ifname: 'net1',
        args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=mv',
      };
      const add = await world.plugin('macvlan', 'ADD', call, conf);
      assert.equal(add.code, 0, add.stdout + add.stderr);
      // .0/30 is excluded (.0-.3): the first free address is .4.
      assert.deepEqual(ipsOf(add.json), ['192.168.250.4/28']);
      assert.deepEqual(pod.addresses('net1'), ['192.168.250.4/28']);

      // The runtime retries ADD in a fresh sandbox of the same pod: same address.
      const again = world.newPod();
      const add2 = await world.plugin(
        'macvlan',
        'ADD',
        { ...call, containerId: `mv2-${cniVersion}`, netns: again.path },
        conf,
      );
      assert.equal(add2.code, 0, add2.stdout + add2.stderr);
      assert.deepEqual(ipsOf(add2.json), ['192.168.250.4/28']);

      const del = await world.plugin(
        'macvlan',
        'DEL',
        { ...call, containerId: `mv2-${cniVersion}`, netns: again.path },
        conf,
      );
      assert.equal(del.code, 0, del.stdout + del.stderr);
      assert.equal(again.hasLink('net1'), false);
      // DEL of the first sandbox, whose netns is now gone, still succeeds.
      pod.delete();
      const del1 = await world.plugin('macvlan', 'DEL', call, conf);
      assert.equal(del1.code, 0, del1.stdout + del1.stderr);
    });
  }
});
