// enable_overlapping_ranges on the local store: pools of one network whose ranges overlap never hand out one address
// twice, and a reservation left behind by a crash is taken over by the next claimer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstFree } from '../../../src/allocator/first-free.ts';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { acquireLock } from '../../../src/fs/lock.ts';
import { LocalStore } from '../../../src/store/local/local-store.ts';
import { poolPaths } from '../../../src/store/local/paths.ts';
import type { AllocationRecord, PoolRef } from '../../../src/store/store.ts';
import { testRange } from '../../support/memory-store.ts';

const wide: PoolRef = { name: '10.80.0.0-24', network: 'net1', networkNamed: false, range: testRange('10.80.0.0/24') };
const narrow: PoolRef = {
  name: '10.80.0.0-25',
  network: 'net1',
  networkNamed: false,
  range: testRange('10.80.0.0/25'),
};
const rec = (id: string): AllocationRecord => ({ containerId: id, podRef: `ns/${id}`, ifname: 'eth0' });
const ip = (text: string) => parseIP(text).value;

function tempDataDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'hab-resv-')), 'data');
}

/** The first free address (minus what the store refuses), claimed for `id`. */
function claimFirst(pool: PoolRef, id: string) {
  return (current: ReadonlyMap<bigint, AllocationRecord>, refused: ReadonlySet<bigint>) => {
    const address = firstFree(pool.range, current, refused);
    if (address === undefined) return { change: null, value: 'exhausted' };
    return { change: { claim: { address, record: rec(id) } }, value: formatIP({ family: 4, value: address }) };
  };
}

const release = (address: bigint) => () => ({ change: { release: [address] }, value: undefined });

test('pools of overlapping ranges in one network never hand out the same address', async () => {
  const store = new LocalStore(tempDataDir(), { reservations: true });
  assert.equal(await store.update(wide, claimFirst(wide, 'podA')), '10.80.0.1');
  assert.equal(await store.update(narrow, claimFirst(narrow, 'podB')), '10.80.0.2');
  assert.equal(await store.update(wide, claimFirst(wide, 'podC')), '10.80.0.3');
});

test('a reservation names its pool and container, and goes when the address is released', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir, { reservations: true });
  await store.update(wide, claimFirst(wide, 'podA'));
  const file = join(dataDir, 'net1', 'reservations', '10.80.0.1');
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
    pool: '10.80.0.0-24',
    range: '10.80.0.0/24',
    containerid: 'podA',
    podref: 'ns/podA',
    ifname: 'eth0',
  });
  await store.update(wide, release(ip('10.80.0.1')));
  assert.equal(existsSync(file), false);
  assert.equal(await store.update(narrow, claimFirst(narrow, 'podB')), '10.80.0.1');
});

test('reservation names carry network_name when it is set, as the Kubernetes objects do', async () => {
  const dataDir = tempDataDir();
  const named: PoolRef = { ...wide, name: 'blue-10.80.0.0-24', network: 'blue', networkNamed: true };
  await new LocalStore(dataDir, { reservations: true }).update(named, claimFirst(named, 'podA'));
  assert.deepEqual(readdirSync(join(dataDir, 'blue', 'reservations')), ['blue-10.80.0.1']);
});

test('a reservation left by a crash (its pool does not hold the address) is taken over', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1', 'reservations'), { recursive: true });
  writeFileSync(
    join(dataDir, 'net1', 'reservations', '10.80.0.1'),
    JSON.stringify({
      pool: '10.80.0.0-24',
      range: '10.80.0.0/24',
      containerid: 'gone',
      podref: 'ns/gone',
      ifname: 'eth0',
    }),
  );
  const store = new LocalStore(dataDir, { reservations: true });
  assert.equal(await store.update(narrow, claimFirst(narrow, 'podB')), '10.80.0.1');
  assert.equal(
    (JSON.parse(readFileSync(join(dataDir, 'net1', 'reservations', '10.80.0.1'), 'utf8')) as { pool: unknown }).pool,
    '10.80.0.0-25',
  );
});

test('a reservation whose pool is being written (its lock is held) counts as taken', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1', 'reservations'), { recursive: true });
  writeFileSync(
    join(dataDir, 'net1', 'reservations', '10.80.0.1'),
    JSON.stringify({ pool: '10.80.0.0-24', range: '10.80.0.0/24', containerid: 'c', podref: 'ns/c', ifname: 'eth0' }),
  );
  const busy = await acquireLock(poolPaths(dataDir, wide), { staleMs: 10_000, timeoutMs: 1_000 });
  try {
    assert.equal(
      await new LocalStore(dataDir, { reservations: true }).update(narrow, claimFirst(narrow, 'podB')),
      '10.80.0.2',
    );
  } finally {
    await busy.release();
  }
});

test('without enable_overlapping_ranges nothing is reserved', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir, { reservations: false });
  assert.equal(await store.update(wide, claimFirst(wide, 'podA')), '10.80.0.1');
  assert.equal(await store.update(narrow, claimFirst(narrow, 'podB')), '10.80.0.1');
  assert.equal(existsSync(join(dataDir, 'net1', 'reservations')), false);
});

test('a re-ADD by a new container rewrites the reservation (and writes one that was missing)', async () => {
  const dataDir = tempDataDir();
  await new LocalStore(dataDir, { reservations: false }).update(wide, claimFirst(wide, 'old')); // no reservation
  const store = new LocalStore(dataDir, { reservations: true });
  await store.update(wide, () => ({
    change: { update: [{ address: ip('10.80.0.1'), record: rec('new') }] },
    value: undefined,
  }));
  const file = join(dataDir, 'net1', 'reservations', '10.80.0.1');
  assert.equal((JSON.parse(readFileSync(file, 'utf8')) as { containerid: unknown }).containerid, 'new');
  assert.equal(await store.update(narrow, claimFirst(narrow, 'podB')), '10.80.0.2');
});
