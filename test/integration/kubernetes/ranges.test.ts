// Several ranges and networks on one API server: overlapping ranges kept apart by reservations, network_name
// separating identical CIDRs, dual-stack all or nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assign } from '../../../src/ipam/assign.ts';
import { release } from '../../../src/ipam/release.ts';
import { formatIP } from '../../../src/ip/address.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { testRange } from '../../support/memory-store.ts';
import { kubeNetwork, openNode, poolView, reservationNames } from './harness.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'ranges');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const pod = (name: string) => ({ containerId: `c-${name}`, ifname: 'eth0', podRef: `default/${name}` });

async function addOne(config: ReturnType<typeof kubeNetwork>, node: string, name: string): Promise<string[]> {
  const store = await openNode(ns, config, node);
  try {
    return (await assign(store, config, pod(name))).map((a) => formatIP(a.address));
  } finally {
    await store.close();
  }
}

test('overlapping ranges (/24 and /28 over the same addresses) hand out different addresses', async () => {
  const wide = kubeNetwork(ns, [testRange('10.30.0.0/24')], { name: 'wide' });
  const narrow = kubeNetwork(ns, [testRange('10.30.0.0/28')], { name: 'narrow' });
  assert.deepEqual(await addOne(wide, 'node-a', 'w1'), ['10.30.0.1']);
  assert.deepEqual(await addOne(narrow, 'node-b', 'n1'), ['10.30.0.2']);
  assert.deepEqual(await addOne(wide, 'node-a', 'w2'), ['10.30.0.3']);
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.30.')),
    ['10.30.0.1', '10.30.0.2', '10.30.0.3'],
  );
  // The pools themselves are distinct objects; only the reservations kept them apart.
  assert.deepEqual([...((await poolView(ns, '10.30.0.0-28'))?.allocations.keys() ?? [])], ['10.30.0.2']);
});

test('overlapping ranges with enable_overlapping_ranges off hand out the same address', async () => {
  const wide = kubeNetwork(ns, [testRange('10.31.0.0/24')], { name: 'wide-off', enableOverlappingRanges: false });
  const narrow = kubeNetwork(ns, [testRange('10.31.0.0/28')], { name: 'narrow-off', enableOverlappingRanges: false });
  assert.deepEqual(await addOne(wide, 'node-a', 'wo1'), ['10.31.0.1']);
  assert.deepEqual(await addOne(narrow, 'node-b', 'no1'), ['10.31.0.1']);
  assert.deepEqual(
    (await reservationNames(ns)).filter((n) => n.startsWith('10.31.')),
    [],
  );
});

test('network_name separates identical CIDRs into their own pools and reservations', async () => {
  const blue = kubeNetwork(ns, [testRange('10.32.0.0/24')], { name: 'attach-blue', networkName: 'blue' });
  const red = kubeNetwork(ns, [testRange('10.32.0.0/24')], { name: 'attach-red', networkName: 'red' });
  assert.deepEqual(await addOne(blue, 'node-a', 'b1'), ['10.32.0.1']);
  assert.deepEqual(await addOne(red, 'node-a', 'r1'), ['10.32.0.1']);
  assert.ok(await poolView(ns, 'blue-10.32.0.0-24'));
  assert.ok(await poolView(ns, 'red-10.32.0.0-24'));
  assert.equal(await poolView(ns, '10.32.0.0-24'), undefined);
  const names = await reservationNames(ns);
  assert.ok(names.includes('blue-10.32.0.1') && names.includes('red-10.32.0.1'), names.join(', '));
});

test('dual-stack ADD takes one address from each range; DEL releases both', async () => {
  const config = kubeNetwork(ns, [testRange('10.33.0.0/24'), testRange('fd00:33::/64')], { name: 'dual' });
  assert.deepEqual(await addOne(config, 'node-a', 'd1'), ['10.33.0.1', 'fd00:33::1']);
  assert.deepEqual([...((await poolView(ns, 'fd00-33---64'))?.allocations.keys() ?? [])], ['fd00:33::1']);
  assert.ok((await reservationNames(ns)).includes('fd00-33--1'));
  const store = await openNode(ns, config, 'node-a');
  try {
    const released = await release(store, config, pod('d1'));
    assert.deepEqual(released.map(formatIP), ['10.33.0.1', 'fd00:33::1']);
  } finally {
    await store.close();
  }
  assert.equal((await poolView(ns, '10.33.0.0-24'))?.allocations.size, 0);
  assert.equal((await poolView(ns, 'fd00-33---64'))?.allocations.size, 0);
});

test('dual-stack ADD is all or nothing: an exhausted IPv6 range rolls back the IPv4 claim and its reservation', async () => {
  const config = kubeNetwork(ns, [testRange('10.34.0.0/24'), testRange('fd00:34::/126')], { name: 'dual-full' });
  await addOne(config, 'node-a', 'f1'); // fd00:34::1
  await addOne(config, 'node-a', 'f2'); // fd00:34::2, the last one
  const store = await openNode(ns, config, 'node-a');
  try {
    await assert.rejects(
      assign(store, config, pod('f3')),
      (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 100,
    );
  } finally {
    await store.close();
  }
  const v4 = await poolView(ns, '10.34.0.0-24');
  assert.deepEqual([...(v4?.allocations.keys() ?? [])].sort(), ['10.34.0.1', '10.34.0.2']);
  assert.ok(!(await reservationNames(ns)).includes('10.34.0.3'));
});

// docs/procedures.md, "Growing a range": the wider range is a new IPPool, and the reservations of the addresses the
// old pool holds keep the new pool off them.
test('a range widened from /25 to /24 (same network_name) never hands out an address the /25 pool still holds', async () => {
  const before = kubeNetwork(ns, [testRange('10.35.0.0/25')], { name: 'grow', networkName: 'grow' });
  const after = kubeNetwork(ns, [testRange('10.35.0.0/24')], { name: 'grow', networkName: 'grow' });
  const oldPool = async () => [...((await poolView(ns, 'grow-10.35.0.0-25'))?.allocations.keys() ?? [])];
  assert.deepEqual(await addOne(before, 'node-a', 'g1'), ['10.35.0.1']);
  assert.deepEqual(await addOne(before, 'node-b', 'g2'), ['10.35.0.2']);
  // The wider range's pool plans 10.35.0.1 first; the reservations of .1 and .2 name other pods, so it takes
  // another address (after two such collisions a writer searches on from a random point of the range).
  const [g3] = await addOne(after, 'node-a', 'g3');
  const [g4] = await addOne(after, 'node-b', 'g4');
  assert.deepEqual(await oldPool(), ['10.35.0.1', '10.35.0.2']);
  for (const ip of [g3!, g4!]) assert.ok(!['10.35.0.1', '10.35.0.2'].includes(ip), `${ip} is held by the /25 pool`);
  assert.notEqual(g3, g4);
  assert.deepEqual(
    [...((await poolView(ns, 'grow-10.35.0.0-24'))?.allocations.keys() ?? [])].sort(),
    [g3!, g4!].sort(),
  );
  // A pod of the old range is released with the configuration of its ADD (Multus keeps it for DEL), in the old pool,
  // with its reservation: the address is then free for the wider range.
  const store = await openNode(ns, before, 'node-a');
  try {
    assert.deepEqual((await release(store, before, pod('g1'))).map(formatIP), ['10.35.0.1']);
  } finally {
    await store.close();
  }
  assert.deepEqual(await oldPool(), ['10.35.0.2']);
  assert.ok(!(await reservationNames(ns)).includes('grow-10.35.0.1'));
  const [g5] = await addOne(after, 'node-c', 'g5');
  assert.notEqual(g5, '10.35.0.2');
  assert.ok(![g3, g4].includes(g5));
});

// docs/procedures.md, "Splitting a range": NADs that keep the range and network_name share its one IPPool, and
// range_start/range_end give each its own part.
test('two NADs splitting one range by range_start/range_end share its IPPool and hand out only their own part', async () => {
  const whole = kubeNetwork(ns, [testRange('10.36.0.0/24')], { name: 'split-whole', networkName: 'split' });
  const low = kubeNetwork(ns, [testRange('10.36.0.0/24', { end: '10.36.0.127' })], {
    name: 'split-low',
    networkName: 'split',
  });
  const high = kubeNetwork(ns, [testRange('10.36.0.0/24', { start: '10.36.0.128' })], {
    name: 'split-high',
    networkName: 'split',
  });
  assert.deepEqual(await addOne(whole, 'node-a', 's1'), ['10.36.0.1']);
  assert.deepEqual(await addOne(low, 'node-a', 's2'), ['10.36.0.2']);
  assert.deepEqual(await addOne(high, 'node-b', 's3'), ['10.36.0.128']);
  assert.deepEqual(await addOne(low, 'node-b', 's4'), ['10.36.0.3']);
  assert.deepEqual([...((await poolView(ns, 'split-10.36.0.0-24'))?.allocations.keys() ?? [])].sort(), [
    '10.36.0.1',
    '10.36.0.128',
    '10.36.0.2',
    '10.36.0.3',
  ]);
});
