import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { assign } from '../../../src/ipam/assign.ts';
import type { Attachment } from '../../../src/ipam/attachment.ts';
import { poolRefs } from '../../../src/ipam/pools.ts';
import type { Plan, PoolRef } from '../../../src/store/store.ts';
import { MemoryStore, testNetwork, testRange } from '../../support/memory-store.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const pod: Attachment = { containerId: 'c1', ifname: 'eth0', podRef: 'default/pod1', podUid: 'uid-1' };
const v4 = testRange('10.0.0.0/29');
const v6 = testRange('fd00::/120');

const texts = (assigned: ReadonlyArray<{ address: { family: 4 | 6; value: bigint } }>) =>
  assigned.map((a) => formatIP(a.address));

function cniError(code: number, pattern: RegExp) {
  return (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === code && pattern.test(err.message);
}

test('assign() takes the first free address of each range, range first then ipRanges', async () => {
  const store = new MemoryStore();
  const assigned = await assign(store, testNetwork([v4, v6]), pod);
  assert.deepEqual(texts(assigned), ['10.0.0.1', 'fd00::1']);
  assert.deepEqual(
    assigned.map((a) => a.claimed),
    [true, true],
  );
});

test('assign() records container id, pod, ifname, pod UID and when it was written', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4]);
  const before = Date.now();
  await assign(store, config, pod);
  const [pool] = poolRefs(config);
  assert.ok(pool !== undefined);
  const { createdAt, ...record } = (await store.read(pool)).get(parseIP('10.0.0.1').value) ?? {};
  assert.deepEqual(record, { containerId: 'c1', ifname: 'eth0', podRef: 'default/pod1', podUid: 'uid-1' });
  const at = Date.parse(createdAt ?? '');
  assert.ok(at >= before - 1 && at <= Date.now(), `createdAt ${createdAt}`);
});

test('assign() is idempotent for the same pod and ifname, recording the new container id', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4]);
  await assign(store, config, pod);
  const again = await assign(store, config, { ...pod, containerId: 'c2' });
  assert.deepEqual(texts(again), ['10.0.0.1']);
  assert.equal(again[0]?.claimed, false);
  const [pool] = poolRefs(config);
  assert.ok(pool !== undefined);
  const records = await store.read(pool);
  assert.equal(records.size, 1);
  assert.equal(records.get(parseIP('10.0.0.1').value)?.containerId, 'c2');
});

test('assign() repeated for the same container writes nothing', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4]);
  await assign(store, config, pod);
  await assign(store, config, pod);
  assert.equal(store.writes.get('10.0.0.0-29'), 1);
});

test('assign() without a pod is idempotent per container and ifname', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4]);
  const bare = { containerId: 'c1', ifname: 'eth0', podRef: '' };
  await assign(store, config, bare);
  assert.deepEqual(texts(await assign(store, config, bare)), ['10.0.0.1']);
  assert.deepEqual(texts(await assign(store, config, { ...bare, containerId: 'c2' })), ['10.0.0.2']);
});

test('assign() gives another interface of the same pod its own address', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4]);
  await assign(store, config, pod);
  assert.deepEqual(texts(await assign(store, config, { ...pod, ifname: 'net1' })), ['10.0.0.2']);
});

test('assign() fails with code 100 naming the range when it is exhausted', async () => {
  const store = new MemoryStore();
  const config = testNetwork([testRange('10.0.0.0/30')]);
  await assign(store, config, { containerId: 'a', ifname: 'eth0', podRef: 'ns/a' });
  await assign(store, config, { containerId: 'b', ifname: 'eth0', podRef: 'ns/b' });
  await assert.rejects(
    assign(store, config, pod),
    cniError(100, /range 10\.0\.0\.0\/30 \(10\.0\.0\.1-10\.0\.0\.2\) has no free address/),
  );
});

test('assign() rolls back the ranges it claimed when a later range fails', async () => {
  const store = new MemoryStore();
  const tiny = testRange('fd00::/127');
  const config = testNetwork([v4, tiny]);
  await assign(store, config, { containerId: 'a', ifname: 'eth0', podRef: 'ns/a' });
  await assign(store, config, { containerId: 'b', ifname: 'eth0', podRef: 'ns/b' });
  await assert.rejects(assign(store, config, pod), cniError(100, /fd00::\/127/));
  const [v4Pool] = poolRefs(config);
  assert.ok(v4Pool !== undefined);
  assert.deepEqual([...(await store.read(v4Pool)).values()].map((r) => r.containerId).sort(), ['a', 'b']);
});

test('assign() keeps an address the attachment already held when a later range fails', async () => {
  const store = new MemoryStore();
  const config1 = testNetwork([v4]);
  await assign(store, config1, pod);
  const tiny = testRange('fd00::/128');
  const config2 = testNetwork([v4, tiny]);
  await assign(store, config2, { containerId: 'other', ifname: 'eth0', podRef: 'ns/other' }).catch(() => undefined);
  await assert.rejects(assign(store, config2, pod), cniError(100, /fd00::\/128/));
  const [v4Pool] = poolRefs(config2);
  assert.ok(v4Pool !== undefined);
  assert.equal((await store.read(v4Pool)).get(parseIP('10.0.0.1').value)?.containerId, 'c1');
});

test('assign() reports a failed rollback together with the failure that caused it', async () => {
  class BrokenReleases extends MemoryStore {
    calls = 0;
    override async update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
      this.calls++;
      if (this.calls === 3) throw new HereaboutsError(ErrorKind.Io, 'disk gone');
      return super.update(pool, plan);
    }
  }
  const store = new BrokenReleases();
  const config = testNetwork([v4, testRange('fd00::/128')]);
  await assign(store, config, { containerId: 'x', ifname: 'eth0', podRef: 'ns/x' }).catch(() => undefined);
  store.calls = 0;
  // call 1 claims v4, call 2 finds v6 exhausted, call 3 (the rollback) fails
  await assert.rejects(assign(store, config, pod), (err: unknown) => {
    return (
      err instanceof HereaboutsError &&
      cniCodeOf(err) === 100 &&
      /no free address/.test(err.message) &&
      /disk gone/.test(err.message) &&
      err.cause instanceof AggregateError &&
      err.cause.errors.length === 2
    );
  });
});

test('assign() grants a requested address exactly', async () => {
  const store = new MemoryStore();
  const assigned = await assign(store, testNetwork([v4, v6], { requestedIPs: ['10.0.0.5'] }), pod);
  assert.deepEqual(texts(assigned), ['10.0.0.5', 'fd00::1']);
});

test('assign() grants requested addresses of both families', async () => {
  const store = new MemoryStore();
  const assigned = await assign(store, testNetwork([v4, v6], { requestedIPs: ['fd00::42', '10.0.0.3'] }), pod);
  assert.deepEqual(texts(assigned), ['10.0.0.3', 'fd00::42']);
});

test('assign() returns the held address when the same pod requests it again', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4], { requestedIPs: ['10.0.0.5'] });
  await assign(store, config, pod);
  const again = await assign(store, config, { ...pod, containerId: 'c2' });
  assert.deepEqual(texts(again), ['10.0.0.5']);
  assert.equal(again[0]?.claimed, false);
});

test('assign() moves a pod to a newly requested address, releasing its old one', async () => {
  const store = new MemoryStore();
  await assign(store, testNetwork([v4]), pod);
  const config = testNetwork([v4], { requestedIPs: ['10.0.0.5'] });
  assert.deepEqual(texts(await assign(store, config, { ...pod, containerId: 'c2' })), ['10.0.0.5']);
  const [pool] = poolRefs(config);
  assert.ok(pool !== undefined);
  assert.deepEqual([...(await store.read(pool)).keys()], [parseIP('10.0.0.5').value]);
});

/** Every pool of the config as [pool name, address, record] rows, to compare whole stores before and after. */
async function snapshot(store: MemoryStore, config: ReturnType<typeof testNetwork>, withCreatedAt = true) {
  const rows: unknown[] = [];
  for (const pool of poolRefs(config)) {
    for (const [address, record] of await store.read(pool)) {
      const rest: Record<string, unknown> = { ...record };
      delete rest['createdAt'];
      rows.push([
        pool.name,
        formatIP({ family: pool.range.cidr.family, value: address }),
        withCreatedAt ? record : rest,
      ]);
    }
  }
  return rows;
}

test('a failed ADD that moved a pod to a requested address leaves its old address held (every pool as before)', async () => {
  const store = new MemoryStore();
  const full = testRange('fd00::/128');
  await assign(store, testNetwork([full]), { containerId: 'y', ifname: 'eth0', podRef: 'ns/y' });
  await assign(store, testNetwork([v4]), pod); // 10.0.0.1
  const config = testNetwork([v4, full], { requestedIPs: ['10.0.0.5'] });
  const before = await snapshot(store, config);
  await assert.rejects(assign(store, config, { ...pod, containerId: 'c2' }), cniError(100, /fd00::\/128/));
  assert.deepEqual(await snapshot(store, config), before);
});

test('a failed ADD restores a record its idempotent refresh rewrote (every pool as before)', async () => {
  const store = new MemoryStore();
  const full = testRange('fd00::/128');
  await assign(store, testNetwork([full]), { containerId: 'x', ifname: 'eth0', podRef: 'ns/x' });
  await assign(store, testNetwork([v4]), pod);
  const config = testNetwork([v4, full]);
  const before = await snapshot(store, config);
  await assert.rejects(assign(store, config, { ...pod, containerId: 'c2' }), cniError(100, /fd00::\/128/));
  assert.deepEqual(await snapshot(store, config), before);
});

test('assign() releases the old address only after every range succeeded', async () => {
  const store = new MemoryStore();
  await assign(store, testNetwork([v4, v6]), pod);
  const config = testNetwork([v4, v6], { requestedIPs: ['10.0.0.5'] });
  const warnings: string[] = [];
  const assigned = await assign(store, config, { ...pod, containerId: 'c2' }, { warn: (m) => warnings.push(m) });
  assert.deepEqual(texts(assigned), ['10.0.0.5', 'fd00::1']);
  assert.deepEqual(await snapshot(store, config, false), [
    ['10.0.0.0-29', '10.0.0.5', { containerId: 'c2', ifname: 'eth0', podRef: 'default/pod1', podUid: 'uid-1' }],
    ['fd00---120', 'fd00::1', { containerId: 'c2', ifname: 'eth0', podRef: 'default/pod1', podUid: 'uid-1' }],
  ]);
  assert.deepEqual(warnings, []);
});

test('assign() succeeds when releasing a given-up address fails, and says so (GC reclaims it)', async () => {
  class BrokenThirdWrite extends MemoryStore {
    calls = 0;
    override async update<T>(pool: PoolRef, plan: Plan<T>): Promise<T> {
      if (++this.calls === 3) throw new HereaboutsError(ErrorKind.Io, 'disk gone');
      return super.update(pool, plan);
    }
  }
  const store = new BrokenThirdWrite();
  await assign(store, testNetwork([v4]), pod); // call 1
  const warnings: string[] = [];
  const config = testNetwork([v4], { requestedIPs: ['10.0.0.5'] });
  // call 2 claims .5, call 3 (releasing .1) fails
  assert.deepEqual(
    texts(await assign(store, config, { ...pod, containerId: 'c2' }, { warn: (m) => warnings.push(m) })),
    ['10.0.0.5'],
  );
  assert.match(warnings.join('\n'), /could not release 10\.0\.0\.1.*disk gone/);
});

test('assign() refuses a requested address held by another pod with code 101', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4], { requestedIPs: ['10.0.0.5'] });
  await assign(store, config, { containerId: 'o', ifname: 'eth0', podRef: 'ns/other' });
  await assert.rejects(
    assign(store, config, pod),
    cniError(101, /requested address 10\.0\.0\.5 is taken by ns\/other o \(eth0\)/),
  );
});

test('assign() refuses a requested address outside range_start-range_end', async () => {
  const config = testNetwork([testRange('10.0.0.0/24', { start: '10.0.0.10', end: '10.0.0.20' })], {
    requestedIPs: ['10.0.0.5'],
  });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /10\.0\.0\.5 is outside 10\.0\.0\.10-10\.0\.0\.20, the allocatable part of range 10\.0\.0\.0\/24/),
  );
});

test('assign() refuses an excluded requested address', async () => {
  const config = testNetwork([testRange('10.0.0.0/24', { exclude: ['10.0.0.4/30'] })], { requestedIPs: ['10.0.0.5'] });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /10\.0\.0\.5 is excluded from range 10\.0\.0\.0\/24 \(10\.0\.0\.4-10\.0\.0\.7\)/),
  );
});

test('assign() refuses the gateway as a requested address', async () => {
  const config = testNetwork([testRange('10.0.0.0/24', { gateway: '10.0.0.1' })], { requestedIPs: ['10.0.0.1'] });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /10\.0\.0\.1 is the gateway of range 10\.0\.0\.0\/24/),
  );
});

test('assign() refuses a requested address outside every range', async () => {
  const config = testNetwork([v4, v6], { requestedIPs: ['192.168.1.1'] });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /192\.168\.1\.1 is outside every configured range \(10\.0\.0\.0\/29, fd00::\/120\)/),
  );
});

test('assign() refuses a requested address that falls in two ranges', async () => {
  const config = testNetwork([testRange('10.0.0.0/24'), testRange('10.0.0.0/25')], { requestedIPs: ['10.0.0.5'] });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /falls in more than one configured range/),
  );
});

test('assign() refuses two requested addresses in one range', async () => {
  const config = testNetwork([v4], { requestedIPs: ['10.0.0.2', '10.0.0.3'] });
  await assert.rejects(
    assign(new MemoryStore(), config, pod),
    cniError(101, /10\.0\.0\.3 falls in range 10\.0\.0\.0\/29, which already grants 10\.0\.0\.2/),
  );
});

test('assign() leaves a requested address equal to a static address to the static path', async () => {
  const config = testNetwork([v4], { requestedIPs: ['192.168.9.9'], addresses: ['192.168.9.9/24'] });
  assert.deepEqual(texts(await assign(new MemoryStore(), config, pod)), ['10.0.0.1']);
});

test('assign() refuses a requested address before claiming anything', async () => {
  const store = new MemoryStore();
  const config = testNetwork([v4, v6], { requestedIPs: ['192.168.1.1'] });
  await assert.rejects(assign(store, config, pod));
  assert.equal(store.writes.size, 0);
});

test('assign() with no ranges assigns nothing', async () => {
  assert.deepEqual(await assign(new MemoryStore(), testNetwork([]), pod), []);
});
