import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseIP } from '../../../src/ip/address.ts';
import { firstFree } from '../../../src/allocator/first-free.ts';
import { LocalStore } from '../../../src/store/local/local-store.ts';
import type { AllocationRecord, PoolRef } from '../../../src/store/store.ts';
import { testRange } from '../../support/memory-store.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const v4Pool: PoolRef = { name: '10.0.0.0-24', network: 'net1', networkNamed: false, range: testRange('10.0.0.0/24') };
const v6Pool: PoolRef = { name: 'fd00---64', network: 'net1', networkNamed: false, range: testRange('fd00::/64') };
const rec = (containerId: string, extra: Partial<AllocationRecord> = {}): AllocationRecord => ({
  containerId,
  podRef: `default/${containerId}`,
  ifname: 'eth0',
  ...extra,
});

function tempDataDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'hereabouts-local-')), 'data');
}

function claim(pool: PoolRef, address: string, record: AllocationRecord) {
  return () => ({ change: { claim: { address: parseIP(address).value, record } }, value: undefined });
}

function isCniError(code: number, pattern: RegExp) {
  return (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === code && pattern.test(err.message);
}

test('update() writes the pool as an IPPool-shaped JSON file under <data_dir>/<network>/', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.5', rec('c1', { podUid: 'u1' })));
  const file = join(dataDir, 'net1', '10.0.0.0-24.json');
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
    range: '10.0.0.0/24',
    allocations: { '5': { id: 'c1', podref: 'default/c1', ifname: 'eth0', podUid: 'u1' } },
  });
});

test('read() returns what update() wrote, keyed by absolute address', async () => {
  const store = new LocalStore(tempDataDir());
  await store.update(v4Pool, claim(v4Pool, '10.0.0.7', rec('c1')));
  assert.deepEqual([...(await store.read(v4Pool))], [[parseIP('10.0.0.7').value, rec('c1')]]);
});

test('read() of a pool that was never written is empty', async () => {
  const store = new LocalStore(tempDataDir());
  assert.equal((await store.read(v4Pool)).size, 0);
});

test('update() stores offsets beyond 2^53 exactly (IPv6 /64)', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  const address = parseIP('fd00::8000:0:0:5');
  await store.update(v6Pool, () => ({ change: { claim: { address: address.value, record: rec('c1') } }, value: 0 }));
  const doc = JSON.parse(readFileSync(join(dataDir, 'net1', 'fd00---64.json'), 'utf8')) as {
    allocations: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(doc.allocations), ['9223372036854775813']);
  assert.deepEqual([...(await store.read(v6Pool)).keys()], [address.value]);
});

test('update() returns the plan value and writes nothing when the change is null', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  const value = await store.update(v4Pool, () => ({ change: null, value: 'unchanged' }));
  assert.equal(value, 'unchanged');
  assert.deepEqual(readdirSync(join(dataDir, 'net1')), []);
});

test('update() applies releases and record updates', async () => {
  const store = new LocalStore(tempDataDir());
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  await store.update(v4Pool, claim(v4Pool, '10.0.0.2', rec('c2')));
  await store.update(v4Pool, () => ({
    change: {
      release: [parseIP('10.0.0.1').value],
      update: [{ address: parseIP('10.0.0.2').value, record: rec('c9') }],
    },
    value: undefined,
  }));
  assert.deepEqual([...(await store.read(v4Pool))], [[parseIP('10.0.0.2').value, rec('c9')]]);
});

test('update() refuses a claim of an address that is already allocated, leaving the file as it was', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  const before = readFileSync(join(dataDir, 'net1', '10.0.0.0-24.json'), 'utf8');
  await assert.rejects(
    store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c2'))),
    isCniError(999, /already allocated/),
  );
  assert.equal(readFileSync(join(dataDir, 'net1', '10.0.0.0-24.json'), 'utf8'), before);
});

test('update() releases the lock when the plan throws', async () => {
  const store = new LocalStore(tempDataDir(), { lock: { timeoutMs: 500 } });
  await assert.rejects(
    store.update(v4Pool, () => {
      throw new RangeError('plan failed');
    }),
    /plan failed/,
  );
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  assert.equal((await store.read(v4Pool)).size, 1);
});

test('pools of different networks live in different directories', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  await store.update({ ...v4Pool, network: 'net2' }, claim(v4Pool, '10.0.0.1', rec('c2')));
  assert.deepEqual(readdirSync(dataDir).sort(), ['net1', 'net2']);
  assert.equal((await store.read({ ...v4Pool, network: 'net2' })).get(parseIP('10.0.0.1').value)?.containerId, 'c2');
});

test('network and pool names with "/" and ".." cannot leave data_dir', async () => {
  const dataDir = tempDataDir();
  const parent = join(dataDir, '..');
  const store = new LocalStore(dataDir);
  const hostile: PoolRef = { ...v4Pool, network: '../../etc', name: '../x/../../passwd' };
  await store.update(hostile, claim(hostile, '10.0.0.1', rec('c1')));
  assert.deepEqual(readdirSync(parent), ['data']);
  assert.deepEqual(readdirSync(dataDir), ['%2E.%2F..%2Fetc']);
  assert.deepEqual(readdirSync(join(dataDir, '%2E.%2F..%2Fetc')), ['%2E.%2Fx%2F..%2F..%2Fpasswd.json']);
});

test('a very long network name maps to one bounded directory name', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  const long: PoolRef = { ...v4Pool, network: 'n'.repeat(1000), name: 'p/'.repeat(300) };
  await store.update(long, claim(long, '10.0.0.1', rec('c1')));
  const [dir] = readdirSync(dataDir);
  assert.ok(dir !== undefined && dir.length <= 161, `directory name of ${dir?.length} characters`);
  assert.equal((await store.read(long)).size, 1);
});

for (const umask of [0o000, 0o277]) {
  test(`files are 0600 and directories 0700 under umask ${umask.toString(8).padStart(3, '0')}`, async () => {
    const dataDir = join(tempDataDir(), 'nested');
    const previous = process.umask(umask);
    try {
      await new LocalStore(dataDir).update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
    } finally {
      process.umask(previous);
    }
    const mode = (path: string) => statSync(path).mode & 0o777;
    assert.equal(mode(join(dataDir, '..')), 0o700);
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(join(dataDir, 'net1')), 0o700);
    assert.equal(mode(join(dataDir, 'net1', '10.0.0.0-24.json')), 0o600);
  });
}

test('leftover temp files of a crashed writer are ignored and left unread', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  writeFileSync(join(dataDir, 'net1', '.10.0.0.0-24.json.tmp-4242-deadbeef'), '{"range":"10.0.0.0/2');
  assert.equal((await store.read(v4Pool)).size, 1);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.2', rec('c2')));
  assert.equal((await store.read(v4Pool)).size, 2);
});

test('a successful update leaves no temp file behind', async () => {
  const dataDir = tempDataDir();
  const store = new LocalStore(dataDir);
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  assert.deepEqual(readdirSync(join(dataDir, 'net1')), ['10.0.0.0-24.json']);
});

const corruptions: Array<[string, string, RegExp]> = [
  ['truncated JSON', '{"range":"10.0.0.0/24","alloc', /not valid JSON/],
  ['an empty file', '', /not valid JSON/],
  ['a JSON array', '[]', /not a JSON object/],
  ['another range', '{"range":"10.0.1.0/24","allocations":{}}', /range is "10.0.1.0\/24", expected "10.0.0.0\/24"/],
  ['a non-numeric offset', '{"range":"10.0.0.0/24","allocations":{"x":{"id":"c"}}}', /allocation key "x"/],
  ['an offset past the range', '{"range":"10.0.0.0/24","allocations":{"256":{"id":"c"}}}', /allocation key "256"/],
  ['a record without id', '{"range":"10.0.0.0/24","allocations":{"5":{"podref":"a/b"}}}', /allocation 5/],
  ['"allocations": null', '{"range":"10.0.0.0/24","allocations":null}', /"allocations" is not an object/],
  ['no "allocations" key', '{"range":"10.0.0.0/24"}', /"allocations" is not an object/],
  ['"allocations" as a list', '{"range":"10.0.0.0/24","allocations":[]}', /"allocations" is not an object/],
  ['a null record', '{"range":"10.0.0.0/24","allocations":{"5":null}}', /allocation 5/],
  ['JSON null', 'null', /not a JSON object/],
];

for (const [what, content, pattern] of corruptions) {
  test(`read() reports a pool file holding ${what} as corrupt, naming the file`, async () => {
    const dataDir = tempDataDir();
    mkdirSync(join(dataDir, 'net1'), { recursive: true });
    const file = join(dataDir, 'net1', '10.0.0.0-24.json');
    writeFileSync(file, content);
    const store = new LocalStore(dataDir);
    await assert.rejects(store.read(v4Pool), (err: unknown) => {
      return isCniError(5, pattern)(err) && err instanceof Error && err.message.includes(file);
    });
  });
}

test('update() on a corrupt pool file fails and leaves the file untouched', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1'), { recursive: true });
  const file = join(dataDir, 'net1', '10.0.0.0-24.json');
  writeFileSync(file, 'garbage');
  await assert.rejects(
    new LocalStore(dataDir).update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1'))),
    isCniError(5, /corrupt/),
  );
  assert.equal(readFileSync(file, 'utf8'), 'garbage');
});

test('a record written by Whereabouts without ifname reads with an empty ifname', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1'), { recursive: true });
  writeFileSync(
    join(dataDir, 'net1', '10.0.0.0-24.json'),
    '{"range":"10.0.0.0/24","allocations":{"3":{"id":"c","podref":"a/b"}}}',
  );
  const records = await new LocalStore(dataDir).read(v4Pool);
  assert.deepEqual(records.get(parseIP('10.0.0.3').value), { containerId: 'c', podRef: 'a/b', ifname: '' });
});

test('status() succeeds on a writable data_dir and leaves no probe file', async () => {
  const dataDir = tempDataDir();
  await new LocalStore(dataDir).status([v4Pool]);
  assert.deepEqual(readdirSync(join(dataDir, 'net1')), []);
});

test('status() fails with code 50 when data_dir cannot be written', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'hereabouts-local-'));
  writeFileSync(join(parent, 'file'), '');
  const store = new LocalStore(join(parent, 'file', 'data'));
  await assert.rejects(store.status([v4Pool]), isCniError(50, /is not writable/));
});

test('status() fails with code 50 when a pool file is corrupt', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1'), { recursive: true });
  writeFileSync(join(dataDir, 'net1', '10.0.0.0-24.json'), '{');
  await assert.rejects(new LocalStore(dataDir).status([v4Pool]), isCniError(50, /10\.0\.0\.0-24 cannot be read/));
});

test('the local store records no node', () => {
  assert.equal(new LocalStore(tempDataDir()).node, undefined);
});

test('concurrent update() calls in one process each claim a distinct address', async () => {
  const store = new LocalStore(tempDataDir());
  const plan = (id: string) => (current: ReadonlyMap<bigint, AllocationRecord>) => {
    const address = firstFree(v4Pool.range, current);
    assert.ok(address !== undefined);
    return { change: { claim: { address, record: rec(id) } }, value: address };
  };
  const got = await Promise.all(Array.from({ length: 100 }, (_, i) => store.update(v4Pool, plan(`c${i}`))));
  assert.equal(new Set(got).size, 100);
  assert.equal((await store.read(v4Pool)).size, 100);
});

test('two store instances in one process exclude each other through the file lock', async () => {
  const dataDir = tempDataDir();
  const stores = [new LocalStore(dataDir), new LocalStore(dataDir)];
  const plan = (id: string) => (current: ReadonlyMap<bigint, AllocationRecord>) => {
    const address = firstFree(v4Pool.range, current);
    assert.ok(address !== undefined);
    return { change: { claim: { address, record: rec(id) } }, value: address };
  };
  const got = await Promise.all(
    Array.from({ length: 40 }, (_, i) => (stores[i % 2] as LocalStore).update(v4Pool, plan(`c${i}`))),
  );
  assert.equal(new Set(got).size, 40);
  assert.equal((await stores[0]?.read(v4Pool))?.size, 40);
});

test('a lock directory left by an older hereabouts is taken over once older than the stale window', async () => {
  const dataDir = tempDataDir();
  const lock = join(dataDir, 'net1', '10.0.0.0-24.json.lock');
  mkdirSync(lock, { recursive: true });
  const past = new Date(Date.now() - 5_000);
  utimesSync(lock, past, past);
  const logged: string[] = [];
  const log = {
    debug: (m: string) => logged.push(`debug: ${m}`),
    warning: (m: string) => logged.push(`warning: ${m}`),
  };
  const store = new LocalStore(dataDir, { lock: { staleMs: 2_000, timeoutMs: 5_000 }, log });
  await store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1')));
  // Already past the window when the update first looked: taken over on that look (no "waiting"), with a warning.
  assert.equal(logged.length, 1, logged.join('\n'));
  assert.match(
    logged[0] ?? '',
    /^warning: lock .*\.lock: a lock directory \(an older hereabouts\), .*; taking it over after 2000 ms without a refresh$/,
  );
  assert.deepEqual([...(await store.read(v4Pool))], [[parseIP('10.0.0.1').value, rec('c1')]]);
});

test('update() gives up with code 11 when a live lock outlasts the wait budget', async () => {
  const dataDir = tempDataDir();
  mkdirSync(join(dataDir, 'net1', '10.0.0.0-24.json.lock'), { recursive: true });
  const store = new LocalStore(dataDir, { lock: { staleMs: 10_000, timeoutMs: 300 } });
  await assert.rejects(
    store.update(v4Pool, claim(v4Pool, '10.0.0.1', rec('c1'))),
    isCniError(11, /waiting for the lock/),
  );
});
