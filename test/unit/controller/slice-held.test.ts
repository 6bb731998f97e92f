// Which IPPools are a sliced network's slice pools in use, read from the controller's pool cache: named
// [<network_name>-]<node>-<slice> with that slice as their range, inside the network's range, holding addresses or
// empty and not retired (an ADD may still be on its way there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCidr } from '../../../src/ip/cidr.ts';
import { heldSlices } from '../../../src/controller/slices/held.ts';
import { poolView } from '../../../src/controller/pools/view.ts';
import { RETIRED_ANNOTATION } from '../../../src/store/kubernetes/pool-object.ts';

const pool = (name: string, range: string, allocations: Record<string, unknown> = {}, retired = false) =>
  poolView({
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '1',
      ...(retired ? { annotations: { [RETIRED_ANNOTATION]: 'u/1' } } : {}),
    },
    spec: { range, allocations },
  })!;
const record = { id: 'c', podref: 'ns/p', ifname: 'net1' };

test('heldSlices() finds the slice pools of a named network that hold addresses or are empty and not retired', () => {
  const pools = [
    pool('n-b-10.0.0.0-28', '10.0.0.0/28', { '1': record }),
    pool('n-a-10.0.0.16-28', '10.0.0.16/28'),
    pool('n-c-10.0.0.32-28', '10.0.0.32/28', {}, true), // released: retired and empty
    pool('n-d-10.0.0.48-28', '10.0.0.48/28', { '2': record }, true), // a mark does not make addresses free
    pool('n-old-10.0.0.64-26', '10.0.0.64/26', { '3': record }), // an earlier slice size
    pool('other-x-10.0.0.128-28', '10.0.0.128/28', { '1': record }), // another network
    pool('n-e-10.1.0.0-28', '10.1.0.0/28', { '1': record }), // outside the range
    pool('n-10.0.0.0-24', '10.0.0.0/24', { '1': record }), // a shared pool of the network, not a slice
    pool('n-f-10.0.0.0-28', '10.0.0.0/27', { '1': record }), // name and range disagree
  ];
  const found = heldSlices({ network: 'n', networkNamed: true, range: parseCidr('10.0.0.0/24') }, pools, {
    notSlicePools: new Set(),
  });
  assert.deepEqual(
    found.map((h) => `${h.nodeName} ${h.sliceRange} ${h.holdsAddresses}`),
    ['b 10.0.0.0/28 true', 'a 10.0.0.16/28 false', 'd 10.0.0.48/28 true', 'old 10.0.0.64/26 true'],
  );
});

test('heldSlices() of an unnamed network leaves out the IPPools that NADs name for their ranges, and the pools retired by this process', () => {
  const pools = [
    pool('b-10.0.0.0-28', '10.0.0.0/28', { '1': record }),
    pool('red-10.0.0.64-26', '10.0.0.64/26', { '1': record }), // network_name red's pool of 10.0.0.64/26
    pool('a-10.0.0.16-28', '10.0.0.16/28'), // retired a moment ago; the cache has not seen the mark yet
  ];
  const found = heldSlices({ network: 'blue', networkNamed: false, range: parseCidr('10.0.0.0/24') }, pools, {
    notSlicePools: new Set(['red-10.0.0.64-26']),
    retiredHere: (name) => name === 'a-10.0.0.16-28',
  });
  assert.deepEqual(
    found.map((h) => `${h.nodeName} ${h.sliceRange}`),
    ['b 10.0.0.0/28'],
  );
});
