import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCidr, parseCidr } from '../../../../src/ip/cidr.ts';
import { formatIP } from '../../../../src/ip/address.ts';
import { sliceRange, slicingOf } from '../../../../src/store/kubernetes/node-slices.ts';
import { readSliceMemory, writeSliceMemory } from '../../../../src/store/kubernetes/slice-memory.ts';
import { createLogger } from '../../../../src/log/logger.ts';
import { testRange } from '../../../support/memory-store.ts';
import { HereaboutsError } from '../../../../src/errors.ts';
import { cniCodeOf } from '../../../../src/cni/errors.ts';

const nsp = (allocations: unknown[]) => ({ spec: { range: '10.0.0.0/24', sliceSize: '/28' }, status: { allocations } });
const ip = (value: bigint) => formatIP({ family: 4, value });

test('slicingOf() finds the slice of the node and the slices it has draining', () => {
  const found = slicingOf(
    {
      ...nsp([
        { nodeName: 'a', sliceRange: '10.0.0.0/28' },
        { nodeName: 'b', sliceRange: '10.0.0.16/28' },
      ]),
      status: {
        allocations: [
          { nodeName: 'a', sliceRange: '10.0.0.0/28' },
          { nodeName: 'b', sliceRange: '10.0.0.16/28' },
        ],
        draining: [
          { nodeName: 'b', sliceRange: '10.0.0.32/27', reason: 'Resliced' },
          { nodeName: 'a', sliceRange: '10.0.0.64/27', reason: 'Resliced' },
        ],
      },
    },
    'net',
    'b',
  );
  assert.deepEqual(
    [formatCidr(found.range), found.sliceSize, found.slice && formatCidr(found.slice), found.draining.map(formatCidr)],
    ['10.0.0.0/24', 28, '10.0.0.16/28', ['10.0.0.32/27']],
  );
  assert.equal(found.tracksDraining, true);
});

test('slicingOf() of a Whereabouts object: no draining list, and no slice for a node it does not name', () => {
  const found = slicingOf(nsp([{ nodeName: '', sliceRange: '10.0.0.0/28' }]), 'net', 'c');
  assert.deepEqual([found.slice, found.draining, found.tracksDraining], [undefined, [], false]);
});

test('slicingOf() rejects an assigned slice outside the range', () => {
  assert.throws(
    () => slicingOf(nsp([{ nodeName: 'a', sliceRange: '10.9.0.0/28' }]), 'net', 'a'),
    (err: unknown) => err instanceof HereaboutsError && cniCodeOf(err) === 999,
  );
});

test('slicingOf() reads a re-created NodeSlicePool afresh, even at the generation and slicing it remembers', () => {
  const memory = {
    uid: 'first-incarnation',
    generation: 2,
    range: '10.0.0.0/24',
    sliceSize: 28,
    slice: '10.0.0.0/28',
    draining: [],
    held: ['10.0.0.0/28'],
  };
  const recreated = {
    metadata: { uid: 'second-incarnation', generation: 2 },
    ...nsp([
      { nodeName: 'b', sliceRange: '10.0.0.0/28' },
      { nodeName: 'a', sliceRange: '10.0.0.16/28' },
    ]),
  };
  const found = slicingOf(recreated, 'net', 'a', memory);
  assert.equal(found.slice && formatCidr(found.slice), '10.0.0.16/28');
  const same = slicingOf({ ...recreated, metadata: { uid: 'first-incarnation', generation: 2 } }, 'net', 'a', memory);
  assert.equal(same.slice && formatCidr(same.slice), '10.0.0.0/28', 'the same incarnation and generation: remembered');
});

test('sliceRange() leaves out the slice network and broadcast addresses, as Whereabouts does', () => {
  const r = sliceRange(testRange('10.0.0.0/24'), parseCidr('10.0.0.16/28'));
  assert.deepEqual([ip(r.start), ip(r.end)], ['10.0.0.17', '10.0.0.30']);
});

test('sliceRange() applies range_start and range_end inside the slice', () => {
  const r = sliceRange(testRange('10.0.0.0/24', { start: '10.0.0.20', end: '10.0.0.25' }), parseCidr('10.0.0.16/28'));
  assert.deepEqual([ip(r.start), ip(r.end)], ['10.0.0.20', '10.0.0.25']);
});

test('sliceRange() of a slice outside range_start..range_end is empty', () => {
  const r = sliceRange(testRange('10.0.0.0/24', { start: '10.0.0.100' }), parseCidr('10.0.0.16/28'));
  assert.ok(r.start > r.end);
});

test('sliceRange() keeps only the exclusions and the gateway inside the slice', () => {
  const r = sliceRange(
    testRange('10.0.0.0/24', { exclude: ['10.0.0.1', '10.0.0.18/31'], gateway: '10.0.0.1' }),
    parseCidr('10.0.0.16/28'),
  );
  assert.deepEqual(
    r.exclude.map((b) => [ip(b.first), ip(b.last)]),
    [['10.0.0.18', '10.0.0.19']],
  );
  assert.equal(r.gateway, undefined);
});

test('the slice memory keeps the NodeSlicePool resourceVersion; one the API server could not parse is dropped', () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'hereabouts-slice-memory-'));
  try {
    const ctx = {
      node: 'a',
      cacheDir,
      scope: { server: 'https://api', namespace: 'kube-system' },
      log: createLogger({ level: 'error' }),
    };
    // `older` is the same memory as written before versions were recorded (see below).
    const older = {
      generation: 3,
      range: '10.0.0.0/24',
      sliceSize: 28,
      slice: '10.0.0.0/28',
      draining: [],
      held: ['10.0.0.0/28'],
    };
    const memory = { ...older, resourceVersion: '4711' };
    writeSliceMemory(ctx, 'net', memory);
    assert.deepEqual(readSliceMemory(ctx, 'net'), memory);
    for (const odd of ['', '0', '12a', '../x', 7]) {
      writeSliceMemory(ctx, 'net', { ...memory, resourceVersion: odd as string });
      assert.equal(readSliceMemory(ctx, 'net')?.resourceVersion, undefined, String(odd));
    }
    // A memory written before versions were recorded still reads (the next GET takes any version).
    writeSliceMemory(ctx, 'net', older);
    assert.deepEqual(readSliceMemory(ctx, 'net'), older);
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
