// Which NetworkAttachmentDefinitions hear that a pool is exhausted: those naming it among their range pools, and
// node-slice NADs whose range holds the slice (with their network_name prefix).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nadsOfPool, wasExhausted } from '../../../src/controller/pools/exhaustion-events.ts';
import type { PoolView } from '../../../src/controller/pools/view.ts';
import type { NadView } from '../../../src/controller/runtime/views.ts';
import { parseCidr } from '../../../src/ip/cidr.ts';

const nad = (name: string, extra: Partial<NadView>): NadView => ({
  name,
  namespace: 't',
  uid: name,
  resourceVersion: '1',
  networkNames: [],
  pools: [],
  ...extra,
});
const pool = (name: string, range: string): PoolView => ({ name, range: parseCidr(range) }) as unknown as PoolView;
const slice = (network: string, range: string, networkNamed = true): NadView['slice'] => ({
  network,
  networkNamed,
  range: parseCidr(range),
  sliceSize: 28,
  source: `t/${network}`,
});

test('nadsOfPool() finds range NADs by pool name and node-slice NADs by range and prefix', () => {
  const nads = [
    nad('by-name', { pools: ['net-10.0.0.0-24'] }),
    nad('other', { pools: ['net-10.9.0.0-24'] }),
    nad('sliced', { slice: slice('blue', '10.1.0.0/16') }),
    nad('sliced-elsewhere', { slice: slice('green', '10.2.0.0/16') }),
  ];
  assert.deepEqual(
    nadsOfPool(pool('net-10.0.0.0-24', '10.0.0.0/24'), nads).map((n) => n.name),
    ['by-name'],
  );
  assert.deepEqual(
    nadsOfPool(pool('blue-node1-10.1.0.16-28', '10.1.0.16/28'), nads).map((n) => n.name),
    ['sliced'],
  );
  assert.deepEqual(
    nadsOfPool(pool('red-node1-10.1.0.16-28', '10.1.0.16/28'), nads).map((n) => n.name),
    [],
    "another network's prefix",
  );
});

test('wasExhausted() reads the Exhausted condition', () => {
  assert.equal(wasExhausted([{ type: 'Exhausted', status: 'True' }]), true);
  assert.equal(
    wasExhausted([
      { type: 'Exhausted', status: 'False' },
      { type: 'Other', status: 'True' },
    ]),
    false,
  );
  assert.equal(wasExhausted([]), false);
});
