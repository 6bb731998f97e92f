// The pool a hand-out's journal line records (src/store/kubernetes/warm/pool-ref-json.ts): read back as written, and
// anything else refused rather than guessed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodePoolRef, encodePoolRef } from '../../../../../src/store/kubernetes/warm/pool-ref-json.ts';
import type { PoolRef } from '../../../../../src/store/store.ts';
import { rangeOf } from '../../../allocator/range-fixture.ts';

/** Without undefined fields, bigints as text: what survives JSON either way. */
const plain = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));

const settings = { reservations: true, cacheDir: '/var/lib/cni/hereabouts/cache' };

test('a pool and its settings come back from the journal as they were written (JSON, bigints as text)', () => {
  const refs: PoolRef[] = [
    { name: '10.1.0.0-24', network: 'net', networkNamed: false, range: rangeOf('10.1.0.0/24') },
    {
      name: 'sl-10.2.0.0-28',
      network: 'sl',
      networkNamed: true,
      range: rangeOf('10.2.0.0/28'),
      resultPrefix: 24,
      sliceNode: 'node-a',
    },
    { name: 'fd00--64', network: 'v6', networkNamed: false, range: rangeOf('fd00::/64') },
  ];
  for (const ref of refs) {
    const json: unknown = JSON.parse(JSON.stringify(encodePoolRef(ref, settings)));
    assert.deepEqual(plain(decodePoolRef(json)), plain({ ref, settings }));
  }
});

test('what encodePoolRef() did not write is refused', () => {
  const good = encodePoolRef({ name: 'p', network: 'n', networkNamed: false, range: rangeOf('10.1.0.0/24') }, settings);
  const broken: unknown[] = [
    undefined,
    'p',
    { ...good, start: '-1' },
    { ...good, cidr: 'not a cidr' },
    { ...good, reservations: 'yes' },
    { ...good, exclude: [['1']] },
    { ...good, gateway: 'x' },
    { ...good, name: 7 },
  ];
  for (const json of broken) assert.equal(decodePoolRef(json), undefined, JSON.stringify(json));
});
