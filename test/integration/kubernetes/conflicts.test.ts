// Several writers on one IPPool: a node deciding on a stale cache loses the resourceVersion race (409), reads the
// pool again and still hands out a unique address; concurrent nodes never share one; a reservation left by a
// crashed attempt is adopted by the same pod and respected by every other.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assign } from '../../../src/ipam/assign.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { runCni } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, kubeNetwork, memoryLogger, openNode, poolView, reservationNames } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'conflicts');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });

for (const reservations of [false, true]) {
  test(`a write planned on a stale cache gets 409, re-reads and stays unique (reservations ${reservations ? 'on' : 'off'})`, async () => {
    const cidr = reservations ? '10.40.1.0/24' : '10.40.0.0/24';
    const config = kubeNetwork(ns, [testRange(cidr)], {
      name: `stale-${reservations}`,
      enableOverlappingRanges: reservations,
    });
    const log = memoryLogger();
    const nodeA = await openNode(ns, config, 'node-a', { log });
    const nodeB = await openNode(ns, config, 'node-b');
    try {
      await assign(nodeA, config, pod(`a1-${reservations}`)); // node-a caches the pool with .1
      await assign(nodeB, config, pod(`b1-${reservations}`)); // the second writer takes .2 behind node-a's back
      const [third] = await assign(nodeA, config, pod(`a2-${reservations}`)); // plans .2 on its cache
      const prefix = cidr.slice(0, -5);
      assert.equal(third && formatIP(third.address), `${prefix}.3`);
      if (!reservations) {
        assert.ok(
          log.lines.some((l) => /changed since resourceVersion/.test(l)),
          `node-a never noticed the other writer:\n${log.lines.join('\n')}`,
        );
      } // with reservations the shared pool is read before reserving: no conflict to notice

      const view = await poolView(ns, `${prefix}.0-24`);
      assert.deepEqual([...(view?.allocations.keys() ?? [])].sort(), [`${prefix}.1`, `${prefix}.2`, `${prefix}.3`]);
      const names = (await reservationNames(ns)).filter((n) => n.startsWith(`${prefix}.`));
      assert.deepEqual(names, reservations ? [`${prefix}.1`, `${prefix}.2`, `${prefix}.3`] : []);
    } finally {
      await nodeA.close();
      await nodeB.close();
    }
  });
}

test('8 nodes adding 12 pods each at once on one shared pool get 96 distinct addresses, then DELs empty it', async () => {
  const config = kubeNetwork(ns, [testRange('10.41.0.0/24')], { name: 'shared' });
  const nodes = await Promise.all(Array.from({ length: 8 }, (_, i) => openNode(ns, config, `node-${i}`)));
  try {
    const results = await Promise.all(
      nodes.flatMap((store, n) => Array.from({ length: 12 }, (_, p) => assign(store, config, pod(`s-${n}-${p}`)))),
    );
    const addresses = results.map(([a]) => (a === undefined ? 'none' : formatIP(a.address)));
    assert.equal(new Set(addresses).size, 96, `duplicates among ${addresses.join(' ')}`);
    const view = await poolView(ns, '10.41.0.0-24');
    assert.deepEqual([...(view?.allocations.keys() ?? [])].sort(), [...addresses].sort());
    const reserved = (await reservationNames(ns)).filter((n) => n.startsWith('10.41.'));
    assert.deepEqual(reserved, [...addresses].sort());
    await Promise.all(
      nodes.flatMap((store, n) => Array.from({ length: 12 }, (_, p) => release(store, config, pod(`s-${n}-${p}`)))),
    );
    assert.equal((await poolView(ns, '10.41.0.0-24'))?.allocations.size, 0);
    assert.deepEqual(
      (await reservationNames(ns)).filter((n) => n.startsWith('10.41.')),
      [],
    );
  } finally {
    await Promise.all(nodes.map((s) => s.close()));
  }
});

test('a reservation left by a crashed attempt of the same pod is adopted, not skipped', async () => {
  const config = kubeNetwork(ns, [testRange('10.42.0.0/24')], { name: 'adopt' });
  await ns.create('overlappingrangeipreservations', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name: '10.42.0.1' },
    spec: { podref: 'default/crashed', ifname: 'eth0', containerid: 'c-old' },
  });
  const store = await openNode(ns, config, 'node-a');
  try {
    const [assigned] = await assign(store, config, pod('crashed'));
    assert.equal(assigned && formatIP(assigned.address), '10.42.0.1');
  } finally {
    await store.close();
  }
});

test("another pod's reservation makes the allocator skip that address", async () => {
  const config = kubeNetwork(ns, [testRange('10.43.0.0/24')], { name: 'skip' });
  await ns.create('overlappingrangeipreservations', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'OverlappingRangeIPReservation',
    metadata: { name: '10.43.0.1' },
    spec: { podref: 'default/someone-else' },
  });
  const store = await openNode(ns, config, 'node-a');
  try {
    const [assigned] = await assign(store, config, pod('newcomer'));
    assert.equal(assigned && formatIP(assigned.address), '10.43.0.2');
  } finally {
    await store.close();
  }
  const orir = await ns.get('overlappingrangeipreservations', '10.43.0.1');
  assert.equal((orir?.['spec'] as { podref: string }).podref, 'default/someone-else');
});

test('plugin processes of one node remember a contended shared pool through the node cache: the next one starts spread', async () => {
  // Two racing writers reserved the lowest addresses and have not written the pool yet.
  for (const name of ['10.44.0.1', '10.44.0.2']) {
    await ns.create('overlappingrangeipreservations', {
      apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
      kind: 'OverlappingRangeIPReservation',
      metadata: { name },
      spec: { podref: 'default/racing', ifname: 'eth0', containerid: `c-${name}` },
    });
  }
  const logOf = (node: string): string[] => {
    const file = join(ns.dir, 'nodes', `${node}.log`);
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  };
  const collisions = (lines: readonly string[]) =>
    lines.filter((l) => /is reserved through an overlapping range; planning again/.test(l)).length;
  /** One ADD by a plugin process of its own, as kubelet runs it; the log lines it added. */
  const add = async (node: string, name: string): Promise<{ address: string; lines: string[] }> => {
    const before = logOf(node).length;
    const outcome = await runCni(
      requireBinary(),
      {
        command: 'ADD',
        path: '/opt/cni/bin',
        containerId: `c-${name}`,
        netns: `/var/run/netns/${name}`,
        ifname: 'eth0',
        args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${name}`,
      },
      cniConf(ns, node, { name: 'remembered', range: '10.44.0.0/16' }),
      { extraEnv: { NODENAME: node } },
    );
    assert.equal(outcome.code, 0, outcome.stdout);
    const address = (outcome.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address ?? '';
    return { address, lines: logOf(node).slice(before) };
  };

  const first = await add('node-a', 'first');
  assert.equal(collisions(first.lines), 2, `the first process probes the lowest addresses:\n${first.lines.join('\n')}`);
  const second = await add('node-a', 'second');
  assert.equal(
    collisions(second.lines),
    0,
    `the next process on node-a plans spread from the start:\n${second.lines.join('\n')}`,
  );
  const other = await add('node-b', 'other');
  assert.equal(collisions(other.lines), 2, `node-b remembers nothing: lowest-first:\n${other.lines.join('\n')}`);
  const addresses = [first.address, second.address, other.address];
  assert.equal(new Set(addresses).size, 3, addresses.join(' '));
  for (const address of addresses) assert.ok(!['10.44.0.1/16', '10.44.0.2/16'].includes(address), address);
});
