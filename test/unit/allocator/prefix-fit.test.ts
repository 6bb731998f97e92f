import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../../src/ip/address.ts';
import { blockOfCidr, mergeBlocks, type Block } from '../../../src/ip/block.ts';
import { formatCidr, parseCidr, type Cidr } from '../../../src/ip/cidr.ts';
import {
  firstFitPrefix,
  freePrefixCount,
  freePrefixes,
  judgePrefix,
  type PrefixSpace,
  type PrefixVerdict,
} from '../../../src/allocator/prefix-fit.ts';

const ip = (text: string): bigint => parseIP(text).value;
const cidr = (text: string): Block => blockOfCidr(parseCidr(text));
const range = (first: string, last: string = first): Block => ({ first: ip(first), last: ip(last) });
const v4 = (space: readonly Block[], taken: readonly Block[] = []): PrefixSpace => ({ family: 4, space, taken });
const v6 = (space: readonly Block[], taken: readonly Block[] = []): PrefixSpace => ({ family: 6, space, taken });
const show = (c: Cidr | undefined): string | undefined => (c === undefined ? undefined : formatCidr(c));
const judge = (s: PrefixSpace, text: string): PrefixVerdict => judgePrefix(s, parseCidr(text));

// --- the brute-force reference: every address of 10.0.0.0/24 marked, every aligned block of it tried ---

const BASE = ip('10.0.0.0');

interface Reference {
  readonly first: bigint | undefined;
  readonly count: bigint;
  readonly all: readonly bigint[];
  readonly verdictAt: (offset: number, prefixLength: number) => PrefixVerdict;
}

function reference(s: PrefixSpace, prefixLength: number): Reference {
  const inside = (blocks: readonly Block[], offset: number): boolean =>
    blocks.some((b) => BASE + BigInt(offset) >= b.first && BASE + BigInt(offset) <= b.last);
  const inSpace = Array.from({ length: 256 }, (_, i) => inside(s.space, i));
  const inTaken = Array.from({ length: 256 }, (_, i) => inside(s.taken, i));
  const size = 2 ** (32 - prefixLength);
  const verdictAt = (offset: number, length: number): PrefixVerdict => {
    const n = 2 ** (32 - length);
    if (offset % n !== 0) return 'misaligned';
    const offsets = Array.from({ length: n }, (_, i) => offset + i);
    if (!offsets.every((i) => inSpace[i])) return 'outside';
    return offsets.some((i) => inTaken[i]) ? 'taken' : 'free';
  };
  const all: bigint[] = [];
  for (let offset = 0; offset < 256; offset += size) {
    if (verdictAt(offset, prefixLength) === 'free') all.push(BASE + BigInt(offset));
  }
  return { first: all[0], count: BigInt(all.length), all, verdictAt };
}

/** Seeded, so a failing layout replays. */
function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
}

/** A random layout within 10.0.0.0/24 (or one /26 of it): unaligned, overlapping, unsorted blocks on both sides. */
function randomLayout(rand: (n: number) => number): PrefixSpace {
  const narrow = rand(10) < 3;
  const lo = narrow ? 64 * rand(4) : 0;
  const width = narrow ? 64 : 256;
  const at = (offset: number): bigint => BASE + BigInt(offset);
  const space: Block[] = [];
  if (rand(5) === 0) space.push({ first: at(lo), last: at(lo + width - 1) });
  for (let i = rand(4) + (space.length === 0 ? 1 : 0); i > 0; i--) {
    const first = lo + rand(width);
    space.push({ first: at(first), last: at(first + rand(lo + width - first)) });
  }
  const taken: Block[] = [];
  for (let i = rand(12); i > 0; i--) {
    const kind = rand(10);
    if (kind < 4) {
      const a = at(rand(256)); // a single address
      taken.push({ first: a, last: a });
    } else if (kind < 7) {
      taken.push(blockOfCidr({ family: 4, address: at(rand(256)), prefix: 24 + rand(9) }));
    } else if (kind < 9) {
      const first = rand(256); // an exclusion range, unaligned
      taken.push({ first: at(first), last: at(Math.min(255, first + rand(40))) });
    } else if (rand(2) === 0) {
      taken.push({ first: BASE - 8n, last: at(rand(8)) }); // from below the /24 into it
    } else {
      taken.push({ first: at(256 + rand(8)), last: at(300) }); // just above, touching nothing
    }
    if (rand(8) === 0) taken.push(taken[rand(taken.length)]!); // a duplicate
  }
  return v4(space, taken);
}

const describeLayout = (s: PrefixSpace): string => {
  const offsets = (blocks: readonly Block[]): string =>
    blocks.map((b) => `${b.first - BASE}-${b.last - BASE}`).join(',');
  return `space [${offsets(s.space)}] taken [${offsets(s.taken)}]`;
};

test('firstFitPrefix(), freePrefixCount() and judgePrefix() agree with a brute-force walk of a /24, /24 to /32, on 400 seeded layouts', () => {
  const rand = seeded(2026);
  let found = 0;
  let judged = 0;
  for (let round = 0; round < 400; round++) {
    const s = randomLayout(rand);
    const what = `round ${round}: ${describeLayout(s)}`;
    for (let length = 24; length <= 32; length++) {
      const ref = reference(s, length);
      const got = firstFitPrefix(s, length);
      assert.equal(got?.address, ref.first, `${what} /${length}`);
      if (got !== undefined) {
        assert.deepEqual(got, { family: 4, address: ref.first, prefix: length });
        found++;
      }
      assert.equal(freePrefixCount(s, length), ref.count, `${what} count /${length}`);
      const listed = [...freePrefixes(s, length)];
      assert.deepEqual(
        listed.map((c) => c.address),
        ref.all,
        `${what} list /${length}`,
      );
      assert.ok(listed.every((c) => c.family === 4 && c.prefix === length));
      // Every aligned /length of the /24, and a few with host bits set.
      const step = 2 ** (32 - length);
      const offsets: number[] = [];
      for (let offset = 0; offset < 256; offset += step) offsets.push(offset);
      if (step > 1) for (let i = 0; i < 4; i++) offsets.push(rand(256) | 1);
      for (const offset of offsets) {
        const verdict = judgePrefix(s, { family: 4, address: BASE + BigInt(offset), prefix: length });
        assert.equal(verdict, ref.verdictAt(offset, length), `${what} judge +${offset}/${length}`);
        judged++;
      }
    }
  }
  // The layouts are not all full or all empty: the comparison exercised both answers.
  assert.ok(found > 400 && found < 3000, `${found} fits found`);
  assert.ok(judged > 200_000, `${judged} verdicts`);
});

test('the brute-force comparison holds on a space of several disjoint blocks given in descending order', () => {
  const rand = seeded(99);
  for (let round = 0; round < 200; round++) {
    const cuts = [...new Set(Array.from({ length: 6 }, () => rand(256)))].sort((a, b) => a - b);
    const space: Block[] = [];
    for (let i = 0; i + 1 < cuts.length; i += 2) {
      space.unshift({ first: BASE + BigInt(cuts[i]!), last: BASE + BigInt(cuts[i + 1]!) });
    }
    const taken = Array.from({ length: rand(6) }, () => {
      const a = BASE + BigInt(rand(256));
      return { first: a, last: a };
    });
    const s = v4(space, taken);
    for (let length = 24; length <= 32; length++) {
      const ref = reference(s, length);
      const what = `round ${round}: ${describeLayout(s)} /${length}`;
      assert.equal(firstFitPrefix(s, length)?.address, ref.first, what);
      assert.equal(freePrefixCount(s, length), ref.count, what);
      assert.deepEqual(
        [...freePrefixes(s, length)].map((c) => c.address),
        ref.all,
        what,
      );
    }
  }
});

// --- alignment, fragmentation, exclusions ---

test('firstFitPrefix() aligns: a /26 in a space starting at .1 begins at .64, never at .1', () => {
  const s = v4([range('10.0.0.1', '10.0.0.255')]);
  assert.equal(show(firstFitPrefix(s, 26)), '10.0.0.64/26');
  assert.equal(show(firstFitPrefix(s, 25)), '10.0.0.128/25');
  assert.equal(show(firstFitPrefix(s, 31)), '10.0.0.2/31');
  assert.equal(show(firstFitPrefix(s, 32)), '10.0.0.1/32');
  assert.equal(firstFitPrefix(s, 24), undefined);
  assert.equal(freePrefixCount(s, 26), 3n);
  assert.equal(judge(s, '10.0.0.1/26'), 'misaligned');
});

test('firstFitPrefix() aligns past a taken network address', () => {
  const s = v4([cidr('10.0.0.0/24')], [range('10.0.0.0')]);
  assert.equal(show(firstFitPrefix(s, 26)), '10.0.0.64/26');
  assert.equal(show(firstFitPrefix(s, 30)), '10.0.0.4/30');
  assert.equal(show(firstFitPrefix(s, 32)), '10.0.0.1/32');
});

test('fragmentation: one taken address in each /26 leaves 252 free addresses but no /26', () => {
  const taken = ['10.0.0.63', '10.0.0.127', '10.0.0.191', '10.0.0.255'].map((a) => range(a));
  const s = v4([cidr('10.0.0.0/24')], taken);
  assert.equal(firstFitPrefix(s, 26), undefined);
  assert.equal(freePrefixCount(s, 26), 0n);
  assert.equal(freePrefixCount(s, 32), 252n);
  assert.equal(show(firstFitPrefix(s, 27)), '10.0.0.0/27');
  assert.equal(freePrefixCount(s, 27), 4n);
  assert.equal(judge(s, '10.0.0.0/26'), 'taken');
});

test('fragmentation: an unaligned 64-address space holds no /26, only a /27 in its middle', () => {
  const s = v4([range('10.0.0.10', '10.0.0.73')]);
  assert.equal(firstFitPrefix(s, 26), undefined);
  assert.equal(freePrefixCount(s, 26), 0n);
  assert.equal(show(firstFitPrefix(s, 27)), '10.0.0.32/27');
  assert.equal(freePrefixCount(s, 27), 1n);
  assert.equal(freePrefixCount(s, 28), 3n); // .16, .32, .48: .64/28 would end at .79
  assert.equal(judge(s, '10.0.0.0/26'), 'outside');
  assert.equal(judge(s, '10.0.0.64/26'), 'outside');
});

test('fragmentation: every 32nd address taken leaves half the /28s', () => {
  const taken = Array.from({ length: 8 }, (_, i) => ({ first: BASE + BigInt(32 * i), last: BASE + BigInt(32 * i) }));
  const s = v4([cidr('10.0.0.0/24')], taken);
  assert.equal(firstFitPrefix(s, 27), undefined);
  assert.equal(show(firstFitPrefix(s, 28)), '10.0.0.16/28');
  assert.equal(freePrefixCount(s, 28), 8n);
  assert.equal(freePrefixCount(s, 29), 24n);
});

test('exclusions inside the range push each length to its first aligned place after them', () => {
  const s = v4([cidr('10.0.0.0/24')], [range('10.0.0.0', '10.0.0.99')]);
  assert.equal(show(firstFitPrefix(s, 25)), '10.0.0.128/25');
  assert.equal(show(firstFitPrefix(s, 26)), '10.0.0.128/26');
  assert.equal(show(firstFitPrefix(s, 28)), '10.0.0.112/28');
  assert.equal(show(firstFitPrefix(s, 30)), '10.0.0.100/30');
  const middle = v4([cidr('10.0.0.0/24')], [range('10.0.0.60', '10.0.0.70'), cidr('10.0.0.0/27')]);
  assert.equal(show(firstFitPrefix(middle, 27)), '10.0.0.96/27');
  assert.equal(show(firstFitPrefix(middle, 28)), '10.0.0.32/28');
  assert.equal(show(firstFitPrefix(middle, 30)), '10.0.0.32/30');
  assert.equal(show(firstFitPrefix(middle, 29)), '10.0.0.32/29');
  assert.equal(freePrefixCount(middle, 26), 2n);
});

test('overlapping, duplicated and unsorted taken blocks count once', () => {
  const taken = [cidr('10.0.0.0/25'), range('10.0.0.100', '10.0.0.140'), cidr('10.0.0.0/26'), range('10.0.0.140')];
  const s = v4([cidr('10.0.0.0/24')], taken);
  assert.equal(show(firstFitPrefix(s, 26)), '10.0.0.192/26');
  assert.equal(show(firstFitPrefix(s, 28)), '10.0.0.144/28');
  assert.equal(show(firstFitPrefix(s, 32)), '10.0.0.141/32');
  assert.equal(freePrefixCount(s, 32), 115n);
});

test('a taken block spanning two space blocks keeps covering the second one', () => {
  const s = v4([range('10.0.0.0', '10.0.0.9'), range('10.0.0.20', '10.0.0.63')], [range('10.0.0.5', '10.0.0.40')]);
  assert.equal(show(firstFitPrefix(s, 32)), '10.0.0.0/32');
  assert.equal(show(firstFitPrefix(s, 29)), '10.0.0.48/29');
  assert.equal(show(firstFitPrefix(s, 30)), '10.0.0.0/30');
  assert.equal(freePrefixCount(s, 32), 5n + 23n);
});

test('adjacent space blocks merge: a prefix across their boundary fits', () => {
  const s = v4([range('10.0.0.128', '10.0.0.255'), range('10.0.0.0', '10.0.0.127')]);
  assert.equal(show(firstFitPrefix(s, 24)), '10.0.0.0/24');
  assert.equal(judge(s, '10.0.0.0/24'), 'free');
});

test('an empty space or a fully taken one has no fit and counts zero', () => {
  assert.equal(firstFitPrefix(v4([]), 32), undefined);
  assert.equal(freePrefixCount(v4([]), 32), 0n);
  const full = v4([cidr('10.0.0.0/24')], [cidr('10.0.0.0/16')]);
  assert.equal(firstFitPrefix(full, 32), undefined);
  assert.equal(freePrefixCount(full, 32), 0n);
});

// --- IPv6 at scale, and the ends of the prefix lengths ---

test('an IPv6 /48 splits into 65 536 /64s, one after another, in address order, then none', (t) => {
  const base = ip('fd00:1:2::');
  const space = [cidr('fd00:1:2::/48')];
  let taken: Block[] = [];
  // Distinct by strictly rising addresses (a Set of bigints would hash these, equal in their low 64 bits, alike).
  let previous = -1n;
  const started = performance.now();
  for (let i = 0n; i < 65_536n; i++) {
    if (i % 4096n === 0n || i === 65_535n) assert.equal(freePrefixCount(v6(space, taken), 64), 65_536n - i);
    const got = firstFitPrefix(v6(space, taken), 64);
    assert.ok(got !== undefined, `/64 number ${i}`);
    assert.equal(got.address, base + (i << 64n));
    assert.equal(got.prefix, 64);
    assert.ok(got.address > previous);
    previous = got.address;
    taken = mergeBlocks([...taken, blockOfCidr(got)]);
  }
  const elapsed = performance.now() - started;
  t.diagnostic(`65 536 first fits of a /64 in a /48: ${elapsed.toFixed(0)} ms`);
  assert.equal(previous, base + (65_535n << 64n));
  assert.equal(firstFitPrefix(v6(space, taken), 64), undefined);
  assert.equal(freePrefixCount(v6(space, taken), 64), 0n);
  assert.equal(freePrefixCount(v6(space, taken), 128), 0n);
  assert.ok(elapsed < 3000, `${elapsed} ms`);
});

test('freePrefixCount() counts the /64s of an empty /48 and /32, and the addresses of all IPv6, without enumerating', () => {
  assert.equal(freePrefixCount(v6([cidr('fd00:1:2::/48')]), 64), 65_536n);
  assert.equal(freePrefixCount(v6([cidr('2001:db8::/32')]), 64), 2n ** 32n);
  assert.equal(freePrefixCount(v6([cidr('2001:db8::/32')]), 128), 2n ** 96n);
  assert.equal(freePrefixCount(v6([cidr('::/0')]), 128), 2n ** 128n);
  assert.equal(freePrefixCount(v6([cidr('::/0')], [range('::1')]), 128), 2n ** 128n - 1n);
  assert.equal(freePrefixCount(v6([cidr('2001:db8::/32')], [cidr('2001:db8::/33')]), 64), 2n ** 31n);
  assert.equal(freePrefixCount(v4([cidr('0.0.0.0/0')]), 32), 2n ** 32n);
});

test('a /48 with every other /64 taken: 32 768 gaps walked, no /63 left', () => {
  const base = ip('fd00:1:2::');
  const taken = Array.from({ length: 32_768 }, (_, i) =>
    blockOfCidr({ family: 6, address: base + (BigInt(2 * i) << 64n), prefix: 64 }),
  );
  const s = v6([cidr('fd00:1:2::/48')], taken.reverse());
  assert.equal(freePrefixCount(s, 64), 32_768n);
  assert.equal(freePrefixCount(s, 63), 0n);
  assert.equal(firstFitPrefix(s, 63), undefined);
  assert.equal(show(firstFitPrefix(s, 64)), 'fd00:1:2:1::/64');
  assert.equal(judge(s, 'fd00:1:2:ffff::/64'), 'free');
  assert.equal(judge(s, 'fd00:1:2:fffe::/64'), 'taken');
});

test('freePrefixes() is lazy: the first /64s of a /32 without producing its 2^32, skipping taken ones', () => {
  const s = v6([cidr('2001:db8::/32')], [cidr('2001:db8::/64'), cidr('2001:db8:0:2::/63')]);
  const it = freePrefixes(s, 64);
  const firstThree = [it.next(), it.next(), it.next()].map((r) => (r.done === true ? undefined : formatCidr(r.value)));
  assert.deepEqual(firstThree, ['2001:db8:0:1::/64', '2001:db8:0:4::/64', '2001:db8:0:5::/64']);
  assert.equal(show(firstFitPrefix(s, 64)), '2001:db8:0:1::/64');
});

test('freePrefixes() hands out a /48 as /64s in order, the same ones 65 536 firstFitPrefix calls give', () => {
  const base = ip('fd00:1:2::');
  let i = 0n;
  for (const got of freePrefixes(v6([cidr('fd00:1:2::/48')]), 64)) {
    assert.equal(got.address, base + (i << 64n));
    i++;
  }
  assert.equal(i, 65_536n);
});

test('IPv6 /0 and /128 at the ends of the address space', () => {
  const all = v6([cidr('::/0')]);
  assert.equal(show(firstFitPrefix(all, 0)), '::/0');
  assert.equal(show(firstFitPrefix(all, 128)), '::/128');
  assert.equal(freePrefixCount(all, 0), 1n);
  assert.equal(judge(all, '::/0'), 'free');
  assert.equal(judge(all, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128'), 'free');
  const lowTaken = v6([cidr('::/0')], [range('::')]);
  assert.equal(firstFitPrefix(lowTaken, 0), undefined);
  assert.equal(freePrefixCount(lowTaken, 0), 0n);
  assert.equal(show(firstFitPrefix(lowTaken, 128)), '::1/128');
  assert.equal(show(firstFitPrefix(lowTaken, 1)), '8000::/1');
  assert.equal(judge(lowTaken, '::/0'), 'taken');
  const topOnly = v6([range('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff')]);
  assert.equal(show(firstFitPrefix(topOnly, 128)), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128');
  assert.equal(firstFitPrefix(topOnly, 127), undefined);
  assert.equal(judge(topOnly, '::/0'), 'outside');
  assert.equal(judge(v6([cidr('fd00::/8')]), '::/0'), 'outside');
});

test('IPv4 /0 and /32 at the ends of the address space', () => {
  const all = v4([cidr('0.0.0.0/0')]);
  assert.equal(show(firstFitPrefix(all, 0)), '0.0.0.0/0');
  assert.equal(show(firstFitPrefix(all, 32)), '0.0.0.0/32');
  assert.equal(freePrefixCount(all, 0), 1n);
  const topTaken = v4([cidr('0.0.0.0/0')], [range('255.255.255.255')]);
  assert.equal(firstFitPrefix(topTaken, 0), undefined);
  assert.equal(show(firstFitPrefix(topTaken, 1)), '0.0.0.0/1');
  assert.equal(freePrefixCount(topTaken, 1), 1n);
  assert.equal(freePrefixCount(topTaken, 32), 2n ** 32n - 1n);
  const top = v4([range('255.255.255.254', '255.255.255.255')], [range('255.255.255.254')]);
  assert.equal(show(firstFitPrefix(top, 32)), '255.255.255.255/32');
  assert.equal(firstFitPrefix(top, 31), undefined);
  assert.equal(judge(top, '255.255.255.255/32'), 'free');
  assert.equal(judge(top, '255.255.255.254/31'), 'taken');
});

// --- judgePrefix ---

test('judgePrefix() gives each verdict', () => {
  const s = v4([cidr('10.0.0.0/24')], [range('10.0.0.70')]);
  assert.equal(judge(s, '10.0.0.0/26'), 'free');
  assert.equal(judge(s, '10.0.0.64/26'), 'taken');
  assert.equal(judge(s, '10.0.0.70/32'), 'taken');
  assert.equal(judge(s, '10.0.0.71/32'), 'free');
  assert.equal(judge(s, '10.0.0.0/23'), 'outside');
  assert.equal(judge(s, '10.0.1.0/24'), 'outside');
  assert.equal(judge(s, '10.0.0.8/26'), 'misaligned');
  assert.equal(judge(s, '10.0.0.0/24'), 'taken');
});

test('judgePrefix() checks misaligned, then outside, then taken', () => {
  const s = v4([range('10.0.0.0', '10.0.0.99')], [range('10.0.0.0', '10.0.0.255')]);
  // Host bits set, partly outside the space and taken: misaligned first.
  assert.equal(judge(s, '10.0.0.65/26'), 'misaligned');
  // Aligned, partly outside the space and taken: outside before taken.
  assert.equal(judge(s, '10.0.0.64/26'), 'outside');
  // Aligned, inside, taken.
  assert.equal(judge(s, '10.0.0.0/26'), 'taken');
  // Host bits set in a prefix wholly outside everything is still misaligned.
  assert.equal(judge(v4([]), '192.168.0.1/24'), 'misaligned');
  assert.equal(judge(v4([]), '192.168.0.0/24'), 'outside');
});

test('judgePrefix() sees a taken block that starts before the prefix and reaches into it', () => {
  const s = v4([cidr('10.0.0.0/24')], [range('10.0.0.10', '10.0.0.64'), range('10.0.0.200')]);
  assert.equal(judge(s, '10.0.0.64/26'), 'taken');
  assert.equal(judge(s, '10.0.0.65/32'), 'free');
  assert.equal(judge(s, '10.0.0.128/26'), 'free');
  assert.equal(judge(s, '10.0.0.192/26'), 'taken');
});

// --- bad input ---

test('a prefix length outside 0..bits of the family is a RangeError', () => {
  const s4 = v4([cidr('10.0.0.0/24')]);
  const s6 = v6([cidr('fd00::/64')]);
  for (const bad of [-1, 33, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => firstFitPrefix(s4, bad), RangeError, `v4 ${bad}`);
    assert.throws(() => freePrefixCount(s4, bad), RangeError, `v4 ${bad}`);
    assert.throws(() => freePrefixes(s4, bad), RangeError, `v4 ${bad}: thrown when called, not when read`);
    assert.throws(() => judgePrefix(s4, { family: 4, address: 0n, prefix: bad }), RangeError, `v4 ${bad}`);
  }
  for (const bad of [-1, 129, 64.5]) {
    assert.throws(() => firstFitPrefix(s6, bad), RangeError, `v6 ${bad}`);
    assert.throws(() => freePrefixCount(s6, bad), RangeError, `v6 ${bad}`);
  }
  assert.equal(firstFitPrefix(s6, 33)?.prefix, undefined); // valid for IPv6, just too big for a /64
  assert.equal(show(firstFitPrefix(s6, 128)), 'fd00::/128');
});

test('a prefix of the other family, a space beyond the family or an inverted block is a RangeError', () => {
  assert.throws(() => judgePrefix(v4([cidr('10.0.0.0/24')]), parseCidr('fd00::/64')), RangeError);
  assert.throws(() => firstFitPrefix(v4([{ first: 0n, last: 2n ** 32n }]), 32), RangeError);
  assert.throws(() => freePrefixCount(v4([{ first: -1n, last: 5n }]), 32), RangeError);
  assert.throws(() => firstFitPrefix(v4([cidr('10.0.0.0/24')], [{ first: 5n, last: 4n }]), 32), RangeError);
});

test('the inputs are not modified', () => {
  const space = [range('10.0.0.128', '10.0.0.255'), range('10.0.0.0', '10.0.0.127')];
  const taken = [range('10.0.0.9'), range('10.0.0.3')];
  const before = JSON.stringify({ space, taken }, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  const s = v4(space, taken);
  firstFitPrefix(s, 28);
  freePrefixCount(s, 28);
  judgePrefix(s, parseCidr('10.0.0.0/28'));
  const after = JSON.stringify({ space, taken }, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  assert.equal(after, before);
});
