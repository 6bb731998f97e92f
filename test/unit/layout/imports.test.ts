// The layout of DESIGN §2, checked on the real import graph (every static and dynamic import of src/, as the
// TypeScript compiler reads it): folders depend one way, top to bottom; the raw writers of whereabouts objects are
// private to src/store/kubernetes; the Kubernetes client knows nothing of IPAM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  importGraph,
  LAYERS,
  layerOf,
  folderOf,
  folderCycles,
  layerViolations,
  privateWriterImports,
  rawWhereaboutsWrites,
} from '../../support/layout.ts';

const graph = importGraph();

test('every file of src/ belongs to a layer of DESIGN §2', () => {
  const unplaced = [...graph.keys()].filter((file) => layerOf(folderOf(file)) === undefined);
  assert.deepEqual(unplaced, []);
});

test('no import cycle between folders of src/', () => {
  assert.deepEqual(folderCycles(graph), []);
});

test('every import between folders points down the layers of DESIGN §2', () => {
  assert.deepEqual(
    layerViolations(graph),
    [],
    `layers, top to bottom: ${LAYERS.map((l) => l.join(' | ')).join(' > ')}`,
  );
});

test('the raw writers of IPPools, reservations and NodeSlicePools are imported only inside src/store/kubernetes', () => {
  assert.deepEqual(privateWriterImports(graph), []);
});

test('no module outside the store writes a whereabouts.cni.cncf.io object through the bare API client', () => {
  assert.deepEqual(rawWhereaboutsWrites(), []);
});

test('src/kube imports nothing of IPAM (config, ip, store, allocator, ipam)', () => {
  const ipam = new Set(['config', 'ip', 'store', 'allocator', 'ipam']);
  const bad = [...graph].flatMap(([file, deps]) =>
    folderOf(file) === 'kube' ? deps.filter((dep) => ipam.has(folderOf(dep))).map((dep) => `${file} -> ${dep}`) : [],
  );
  assert.deepEqual(bad, []);
});

// The rules themselves, on graphs that break them: a check that cannot fail checks nothing.
test('layerViolations() reports an import from store to cni, and a sideways one between controller and cni', () => {
  const broken = new Map([
    ['src/store/local/x.ts', ['src/cni/errors.ts']],
    ['src/controller/y.ts', ['src/cni/output.ts']],
    ['src/cni/z.ts', ['src/ipam/assign.ts', 'src/errors.ts']],
  ]);
  assert.deepEqual(layerViolations(broken), [
    'src/store/local/x.ts -> src/cni/errors.ts (store may not import cni)',
    'src/controller/y.ts -> src/cni/output.ts (controller may not import cni)',
  ]);
});

test('folderCycles() finds a loop through three folders', () => {
  const loop = new Map([
    ['src/store/a.ts', ['src/config/b.ts']],
    ['src/config/b.ts', ['src/ip/c.ts']],
    ['src/ip/c.ts', ['src/store/a.ts']],
    ['src/fs/d.ts', []],
  ]);
  assert.deepEqual(folderCycles(loop), [['config', 'ip', 'store']]);
});

test('privateWriterImports() reports the controller importing the raw writers', () => {
  const graph = new Map([
    ['src/controller/slices/drain.ts', ['src/store/kubernetes/resources.ts', 'src/store/kubernetes/writer.ts']],
    ['src/store/kubernetes/writer.ts', ['src/store/kubernetes/resources.ts']],
  ]);
  assert.deepEqual(privateWriterImports(graph), [
    'src/controller/slices/drain.ts -> src/store/kubernetes/resources.ts',
  ]);
});
