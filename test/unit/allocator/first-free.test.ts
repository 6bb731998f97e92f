import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIP } from '../../../src/ip/address.ts';
import type { RangeConfig } from '../../../src/config/types.ts';
import { firstFree } from '../../../src/allocator/first-free.ts';
import { ip, ips, none, rangeOf, record, takenOf } from './range-fixture.ts';
import type { AllocationRecord } from '../../../src/store/store.ts';

const show = (v: bigint | undefined, family: 4 | 6 = 4): string | undefined =>
  v === undefined ? undefined : formatIP({ family, value: v });

/** Allocations that count their reads: the cost of a search, by count rather than by clock. */
class CountedAllocations extends Map<bigint, AllocationRecord> {
  reads = 0;
  constructor(values: Iterable<bigint>) {
    super();
    for (const v of values) super.set(v, record);
  }
  override has(key: bigint): boolean {
    this.reads++;
    return super.has(key);
  }
  override get(key: bigint): AllocationRecord | undefined {
    this.reads++;
    return super.get(key);
  }
  override *keys(): MapIterator<bigint> {
    for (const key of super.keys()) {
      this.reads++;
      yield key;
    }
  }
  override *entries(): MapIterator<[bigint, AllocationRecord]> {
    for (const entry of super.entries()) {
      this.reads++;
      yield entry;
    }
  }
  override *values(): MapIterator<AllocationRecord> {
    for (const value of super.values()) {
      this.reads++;
      yield value;
    }
  }
  override [Symbol.iterator](): MapIterator<[bigint, AllocationRecord]> {
    return this.entries();
  }
  override forEach(fn: (value: AllocationRecord, key: bigint, map: Map<bigint, AllocationRecord>) => void): void {
    for (const [key, value] of this.entries()) fn(value, key, this);
  }
}

test('firstFree() of an empty IPv4 /24 is the network address + 1', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24'), none)), '10.0.0.1');
});

test('firstFree() of an empty IPv6 /64 is ::1 of the prefix', () => {
  assert.equal(show(firstFree(rangeOf('fd00:0:0:5::/64'), none), 6), 'fd00:0:0:5::1');
});

test('firstFree() skips the gateway', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24', { gateway: '10.0.0.1' }), none)), '10.0.0.2');
});

test('firstFree() skips a gateway in the middle of allocated addresses', () => {
  const range = rangeOf('10.0.0.0/24', { gateway: '10.0.0.3' });
  assert.equal(show(firstFree(range, ips('10.0.0.1', '10.0.0.2'))), '10.0.0.4');
});

test('firstFree() ignores a gateway of the other family', () => {
  const range = { ...rangeOf('10.0.0.0/24'), gateway: { family: 6 as const, value: ip('10.0.0.1') } };
  assert.equal(show(firstFree(range, none)), '10.0.0.1');
});

test('firstFree() starts at range_start', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24', { start: '10.0.0.100' }), none)), '10.0.0.100');
});

test('firstFree() starts at A of A-B/len', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.10-10.0.0.20/24'), ips('10.0.0.10'))), '10.0.0.11');
});

test('firstFree() gives range_end when everything before it is taken', () => {
  const range = rangeOf('10.0.0.0/24', { start: '10.0.0.10', end: '10.0.0.12' });
  assert.equal(show(firstFree(range, ips('10.0.0.10', '10.0.0.11'))), '10.0.0.12');
});

test('firstFree() is undefined when start to end is taken', () => {
  const range = rangeOf('10.0.0.0/24', { start: '10.0.0.10', end: '10.0.0.12' });
  assert.equal(firstFree(range, ips('10.0.0.10', '10.0.0.11', '10.0.0.12')), undefined);
});

test('firstFree() never goes past range_end', () => {
  const range = rangeOf('10.0.0.0/24', { end: '10.0.0.2' });
  assert.equal(firstFree(range, ips('10.0.0.1', '10.0.0.2')), undefined);
});

test('firstFree() of a full /30 is undefined', () => {
  assert.equal(firstFree(rangeOf('10.0.0.0/30'), ips('10.0.0.1', '10.0.0.2')), undefined);
});

test('firstFree() returns the lowest hole first', () => {
  assert.equal(
    show(firstFree(rangeOf('10.0.0.0/24'), ips('10.0.0.1', '10.0.0.2', '10.0.0.4', '10.0.0.6'))),
    '10.0.0.3',
  );
});

test('firstFree() ignores allocations outside the range', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24', { start: '10.0.0.5' }), ips('10.0.0.1', '10.0.1.5'))), '10.0.0.5');
});

test('firstFree() skips a masked exclude: x.229/30 excludes .228 to .231', () => {
  const range = rangeOf('192.168.2.225/28', { exclude: ['192.168.2.229/30'] });
  assert.equal(show(firstFree(range, ips('192.168.2.225', '192.168.2.226', '192.168.2.227'))), '192.168.2.232');
});

test('firstFree() skips an exclude at range_start', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.0/29'] }), none)), '10.0.0.8');
});

test('firstFree() is undefined when an exclude covers the end of a full range', () => {
  const range = rangeOf('10.0.0.0/29', { exclude: ['10.0.0.4/30'] });
  assert.equal(firstFree(range, ips('10.0.0.1', '10.0.0.2', '10.0.0.3')), undefined);
});

test('firstFree() skips a single-IP exclude', () => {
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.1'] }), none)), '10.0.0.2');
});

test('firstFree() skips overlapping and adjacent excludes in one jump', () => {
  const range = rangeOf('10.0.0.0/24', { exclude: ['10.0.0.0/28', '10.0.0.4/30', '10.0.0.16', '10.0.0.17/32'] });
  assert.equal(show(firstFree(range, none)), '10.0.0.18');
});

test('firstFree() is undefined when excludes cover the whole range', () => {
  assert.equal(firstFree(rangeOf('10.0.0.0/24', { exclude: ['10.0.0.0/24'] }), none), undefined);
});

test('firstFree() skips refused addresses', () => {
  const refused = new Set([ip('10.0.0.1'), ip('10.0.0.3')]);
  assert.equal(show(firstFree(rangeOf('10.0.0.0/24'), ips('10.0.0.2'), refused)), '10.0.0.4');
});

test('firstFree() of a /31 hands out both addresses, then none', () => {
  const range = rangeOf('10.0.0.6/31');
  assert.equal(show(firstFree(range, none)), '10.0.0.6');
  assert.equal(show(firstFree(range, ips('10.0.0.6'))), '10.0.0.7');
  assert.equal(firstFree(range, ips('10.0.0.6', '10.0.0.7')), undefined);
});

test('firstFree() of a /32 hands out its single address, then none', () => {
  const range = rangeOf('10.0.0.9/32');
  assert.equal(show(firstFree(range, none)), '10.0.0.9');
  assert.equal(firstFree(range, ips('10.0.0.9')), undefined);
});

test('firstFree() of a /127 hands out both addresses', () => {
  assert.equal(show(firstFree(rangeOf('fd00::4/127'), ips('fd00::4')), 6), 'fd00::5');
});

test('firstFree() of a /128 hands out its single address', () => {
  assert.equal(show(firstFree(rangeOf('fd00::9/128'), none), 6), 'fd00::9');
});

test('firstFree() of 0.0.0.0/0 starts at 0.0.0.1', () => {
  assert.equal(show(firstFree(rangeOf('0.0.0.0/0'), none)), '0.0.0.1');
});

test('firstFree() of a range whose end is below its start is undefined', () => {
  const range: RangeConfig = { ...rangeOf('10.0.0.0/24'), start: ip('10.0.0.9'), end: ip('10.0.0.8') };
  assert.equal(firstFree(range, none), undefined);
});

test('firstFree() finds a hole after many allocations that span an exclude', () => {
  const range = rangeOf('10.0.0.0/24', { exclude: ['10.0.0.100/30'], gateway: '10.0.0.150' });
  const taken = new Set<bigint>();
  for (let v = ip('10.0.0.1'); v <= ip('10.0.0.200'); v++) taken.add(v);
  taken.delete(ip('10.0.0.180'));
  assert.equal(show(firstFree(range, takenOf(taken))), '10.0.0.180');
});

test('firstFree() gives the address after a long run that crosses an exclude and the gateway', () => {
  const range = rangeOf('10.0.0.0/24', { exclude: ['10.0.0.100/30'], gateway: '10.0.0.150' });
  const taken: bigint[] = [];
  for (let v = ip('10.0.0.1'); v <= ip('10.0.0.200'); v++) taken.push(v);
  assert.equal(show(firstFree(range, takenOf(taken))), '10.0.0.201');
});

test('firstFree() is undefined for a long fully allocated range with excludes', () => {
  const range = rangeOf('10.0.0.0/24', { exclude: ['10.0.0.100/30'], gateway: '10.0.0.1' });
  const taken: bigint[] = [];
  for (let v = ip('10.0.0.1'); v <= ip('10.0.0.254'); v++) taken.push(v);
  assert.equal(firstFree(range, takenOf(taken)), undefined);
});

test('firstFree() counts refused addresses in the long-run pass', () => {
  const range = rangeOf('10.0.0.0/24');
  const taken: bigint[] = [];
  for (let v = ip('10.0.0.1'); v <= ip('10.0.0.199'); v++) taken.push(v);
  assert.equal(show(firstFree(range, takenOf(taken), new Set([ip('10.0.0.200'), ip('10.0.0.201')]))), '10.0.0.202');
});

test('firstFree() agrees with a linear scan on random ranges, excludes, allocations and refusals', () => {
  let seed = 12345;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let round = 0; round < 400; round++) {
    const start = 1 + rand(20);
    const end = start + rand(80);
    const exclude = Array.from({ length: rand(4) }, () => {
      const p = 28 + rand(5);
      return `10.0.0.${rand(128)}/${p}`;
    });
    const gateway = `10.0.0.${rand(127)}`;
    const range = rangeOf('10.0.0.0/25', { start: `10.0.0.${start}`, end: `10.0.0.${end}`, exclude, gateway });
    const density = rand(100);
    const taken: bigint[] = [];
    const refused = new Set<bigint>();
    for (let i = 0; i < 128; i++) {
      if (rand(100) < density) taken.push(ip(`10.0.0.${i}`));
      else if (rand(100) < 10) refused.add(ip(`10.0.0.${i}`));
    }
    const takenMap = takenOf(taken);
    let expected: bigint | undefined;
    for (let v = range.start; v <= range.end && expected === undefined; v++) {
      const excluded = range.exclude.some((b) => v >= b.first && v <= b.last);
      if (!excluded && v !== range.gateway?.value && !takenMap.has(v) && !refused.has(v)) expected = v;
    }
    assert.equal(
      firstFree(range, takenMap, refused),
      expected,
      `round ${round}: ${JSON.stringify({ start, end, exclude, gateway, density })}`,
    );
  }
});

test('firstFree() with 100 000 contiguous allocations in an IPv6 /64 reads each allocation at most once, not the range', () => {
  const range = rangeOf('fd00:0:0:1::/64', { gateway: 'fd00:0:0:1::1' });
  const taken: bigint[] = [];
  for (let v = range.start + 1n; v <= range.start + 100_000n; v++) taken.push(v);
  const allocations = new CountedAllocations(taken);
  const found = firstFree(range, allocations);
  assert.equal(show(found, 6), 'fd00::1:0:0:1:86a2');
  // A few probes, then one pass over the allocations: not a walk of the range, not a search per allocation.
  assert.ok(
    allocations.reads <= 64 + allocations.size,
    `${allocations.reads} reads of ${allocations.size} allocations`,
  );
});

test('firstFree() with 100 000 shuffled allocations, one hole and scattered far addresses in a /64 reads each allocation at most once', () => {
  const range = rangeOf('fd00:0:0:2::/64', { exclude: ['fd00:0:0:2::8000/112'] });
  const values: bigint[] = [];
  for (let v = range.start; v < range.start + 100_000n; v++) values.push(v);
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let i = 0; i < 20_000; i++) values.push(range.start + (BigInt(rand(2 ** 30)) << 32n) + BigInt(rand(2 ** 30)));
  for (let i = values.length - 1; i > 0; i--) {
    const j = rand(i + 1);
    [values[i], values[j]] = [values[j] as bigint, values[i] as bigint];
  }
  const hole = range.start + 77_777n;
  const allocations = new CountedAllocations(values.filter((v) => v !== hole));
  const found = firstFree(range, allocations);
  assert.equal(found, hole);
  assert.ok(
    allocations.reads <= 64 + allocations.size,
    `${allocations.reads} reads of ${allocations.size} allocations`,
  );
});
