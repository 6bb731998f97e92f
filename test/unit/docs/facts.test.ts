// README.md and docs/ say what the code does: every CLI flag, metric (with its labels), quoted error or log message,
// configuration key and Helm value they name exists in the code, every metric the code registers is in
// docs/monitoring.md, and every measured figure names the commit and the machine it was measured on. Each check is
// first shown to catch a small document that breaks it (test/support/docs-facts.ts has the checks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Histogram } from 'prom-client';
import { ControllerMetrics } from '../../../src/controller/runtime/metrics.ts';
import { NodeMetrics } from '../../../src/install/node-metrics.ts';
import { CniCode, cniCodeOf } from '../../../src/cni/errors.ts';
import { ErrorKind, HereaboutsError } from '../../../src/errors.ts';
import { repoRoot } from '../../support/paths.ts';
import {
  badMarkers,
  codeFacts,
  machinesOf,
  metricLabelMismatches,
  misfiledMessages,
  undocumentedMetrics,
  unknownFlags,
  unknownMessages,
  unknownValues,
  unmarkedFigures,
  unparsedKeys,
  unregisteredMetrics,
  type Doc,
  type RegisteredMetric,
  type SourceFile,
} from '../../support/docs-facts.ts';

const read = (path: string): Doc => ({ path, text: readFileSync(join(repoRoot, path), 'utf8') });
const docs: Doc[] = [
  read('README.md'),
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => read(join('docs', f))),
];
const docNamed = (path: string): Doc => docs.find((d) => d.path === path)!;

function sources(dir: string, pattern: RegExp): SourceFile[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && pattern.test(e.name))
    .map((e) => {
      const path = relative(repoRoot, join(e.parentPath, e.name));
      return { path, text: readFileSync(join(repoRoot, path), 'utf8') };
    });
}

const src = codeFacts(sources('src', /\.ts$/));
const tools = codeFacts([...sources('scripts', /\.(ts|mjs)$/), ...sources('build', /\.(mjs|cjs|js)$/)]);
const config = codeFacts(sources('src/config', /\.ts$/));

/** Flags the docs give for other programs, with the program: never a flag of hereabouts. */
const FOREIGN: Readonly<Record<string, string>> = {
  '--foo': 'nobody: the example of an unknown flag in the docs of the CLI errors',
  '--emulated-version': 'kube-apiserver (the test control plane)',
  '--server-side': 'kubectl apply',
  '--force-conflicts': 'kubectl apply',
  '--ignore-not-found': 'kubectl delete',
  '--field-selector': 'kubectl get',
  '--as': 'kubectl auth can-i',
  '--skip-crds': 'helm install',
  '--untar': 'helm pull',
  '--version': 'helm install, helm template (and hereabouts --version)',
  '--all': 'skopeo copy',
  '--preserve-digests': 'skopeo copy',
  '--from-oci-layout': 'oras cp',
  '--experimental-sea-config': 'node',
  '--build-sea': 'node',
  '--require': 'node',
  '--enable-source-maps': 'node',
  '--use-openssl-ca': 'node',
  '--max-lazy': 'node (V8)',
  '--no-flush-bytecode': 'node (V8)',
  '--single-threaded': 'node (V8)',
  '--max-old-space-size': 'node (V8)',
  '--min-semi-space-size': 'node (V8)',
  '--semi-space-growth-factor': 'node (V8)',
  '--no-git-tag-version': 'npm version',
  '--strip-all': 'strip',
  '--add-architecture': 'dpkg',
  '--short': 'git rev-parse',
  '--pid': 'unshare',
  '--node-options': "the executable's Node (single-executable `execArgvExtension: 'cli'`, build/sea.mjs)",
  '--flag': 'a placeholder: "booleans as Go\'s (--flag, --flag=false)"',
};

function registeredMetrics(): RegisteredMetric[] {
  const none = () => [];
  const controller = new ControllerMetrics({
    pools: none,
    nodeSlicePools: none,
    slices: none,
    starved: () => new Map(),
    leading: () => false,
    informers: none,
  });
  const node = new NodeMetrics({ maxNetworks: 1 });
  return [...controller.registry.getMetricsAsArray(), ...node.registry.getMetricsAsArray()]
    .filter((m) => m.name.startsWith('hereabouts_'))
    .map((m) => ({
      name: m.name,
      labels: (m as unknown as { labelNames: readonly string[] }).labelNames,
      histogram: m instanceof Histogram,
    }));
}
const registered = registeredMetrics();

function isCommit(commit: string): boolean {
  try {
    execFileSync('git', ['-C', repoRoot, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Whether the whole history is here to look commits up in (not an export, not a shallow clone). */
function fullHistory(): boolean {
  try {
    const shallow = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--is-shallow-repository'], { encoding: 'utf8' });
    return shallow.trim() === 'false';
  } catch {
    return false;
  }
}

// The checks catch what the docs got wrong before (issue 21), on excerpts of those docs.

test('a flag the code does not define is reported, with its file and line; other programs\' flags are not', () => {
  const code = codeFacts([{ path: 'x.ts', text: "const f = { 'reconcile-interval': { type: 'string' } };" }]);
  const doc: Doc = {
    path: 'd.md',
    text: 'Set `--reconcile-interval 30s`.\n`kubectl apply --server-side` then `--reconcile-intervall 5s`.',
  };
  assert.deepEqual(unknownFlags([doc], code.flags, { '--server-side': 'kubectl' }), ['d.md:2: --reconcile-intervall']);
});

test('a metric the docs miss, name wrongly, or list with other labels is reported', () => {
  const before: Doc = {
    path: 'docs/monitoring.md',
    text: [
      '| metric | labels | meaning |',
      '|---|---|---|',
      '| `hereabouts_reservations_cleaned_total` | `reason` | orphaned OverlappingRangeIPReservations deleted |',
      '| `hereabouts_pool_free` | pool | capacity − allocations |',
      '| `hereabouts_pool_freed` | `pool` | a metric nobody registers |',
    ].join('\n'),
  };
  assert.ok(undocumentedMetrics(before, registered).includes('hereabouts_reservations_recreated_total'));
  assert.deepEqual(unregisteredMetrics([before], registered), ['docs/monitoring.md:5: hereabouts_pool_freed']);
  assert.deepEqual(metricLabelMismatches([before], registered), [
    'docs/monitoring.md:4: hereabouts_pool_free labels ["pool"], registered ["network","pool","range"]',
  ]);
});

test('a quoted message the code does not write is reported; one with its values filled in is not', () => {
  const row = (msg: string): Doc => ({
    path: 'docs/troubleshooting.md',
    text: `| code | meaning | typical \`msg\` |\n|---|---|---|\n| 4 | invalid environment | ${msg} |`,
  });
  assert.deepEqual(unknownMessages(row('`CNI_CONTAINERID is empty`'), src.literals), [
    'docs/troubleshooting.md:3: "CNI_CONTAINERID is empty" of "CNI_CONTAINERID is empty"',
  ]);
  assert.deepEqual(unknownMessages(row('`CNI_CONTAINERID is required for ADD`'), src.literals), []);
  assert.deepEqual(unknownMessages(row('`CNI_NETNS is empty`, `IPPool <pool>: spec.range changed to ...`'), src.literals), [
    'docs/troubleshooting.md:3: "CNI_NETNS is empty" of "CNI_NETNS is empty"',
    'docs/troubleshooting.md:3: "changed to" of "IPPool <pool>: spec.range changed to ..."',
  ]);
});

test('a configuration key no parser reads, or a Helm value the chart does not have, is reported', () => {
  const keys: Doc = {
    path: 'README.md',
    text: '| key | default | meaning |\n|---|---|---|\n| `node_slice_size` | — | |\n| `node_slice_sizes` | — | |',
  };
  assert.deepEqual(unparsedKeys([keys], config.literals), ['README.md:4: node_slice_sizes']);
  const values: Doc = {
    path: 'docs/helm.md',
    text: '| value | default | what |\n|---|---|---|\n| `node.updateStrategy`, `.maxSurge` | | |',
  };
  assert.deepEqual(unknownValues(values, 'node:\n  updateStrategy: {type: RollingUpdate}\n'), ['docs/helm.md:3: node.maxSurge']);
});

test('a measured figure without the commit and machine it was measured on is reported, and so is a bad marker', () => {
  const install: Doc = {
    path: 'docs/install.md',
    text: 'Requests: 50m CPU and 128 MiB. Limit: 384 MiB (a pass over\n10 000 pods measured 164 MiB).',
  };
  assert.deepEqual(unmarkedFigures(install), ['docs/install.md:1: Requests: 50m CPU and 128 MiB. Limit: 384 MiB (a pass over']);
  const table: Doc = {
    path: 'docs/controller.md',
    text: [
      '## Performance',
      '',
      'Two runs, measured at `75a4d51` on `dev-2vcpu`:',
      '',
      '| | measured |',
      '|---|---|',
      '| peak RSS (VmHWM) | 131 MiB |',
      '',
      '## Known limits',
      '',
      '| | measured |',
      '|---|---|',
      '| peak RSS (VmHWM) | 164 MiB |',
    ].join('\n'),
  };
  assert.deepEqual(unmarkedFigures(table), ['docs/controller.md:13: | peak RSS (VmHWM) | 164 MiB |']);
  const wrong: Doc = { path: 'd.md', text: 'It took 4.2 s, measured at `0123456` on `my-laptop`.' };
  assert.deepEqual(badMarkers([wrong], new Set(['dev-2vcpu']), (c) => c === '75a4d51'), [
    'd.md:1: machine my-laptop is not in the machine table',
    "d.md:1: commit 0123456 is not in the repository's history",
  ]);
  assert.deepEqual(badMarkers([table], new Set(['dev-2vcpu']), (c) => c === '75a4d51'), []);
});

// The docs as they are.

test('every CLI flag the docs name is defined by the code (hereabouts, scripts/, build/) or is another program\'s', () => {
  assert.deepEqual(unknownFlags(docs, new Set([...src.flags, ...tools.flags]), FOREIGN), []);
});

test('every metric the docs name is registered, with the labels the tables give, and monitoring.md names them all', () => {
  assert.ok(registered.length > 10, `found ${registered.length} metrics`);
  assert.deepEqual(unregisteredMetrics(docs, registered), []);
  assert.deepEqual(metricLabelMismatches(docs, registered), []);
  assert.deepEqual(undocumentedMetrics(docNamed('docs/monitoring.md'), registered), []);
});

test('every message docs/troubleshooting.md quotes is written by src/', () => {
  assert.deepEqual(unknownMessages(docNamed('docs/troubleshooting.md'), src.literals), []);
});

/** The CNI code of an error a literal is the message of (Literal.error). */
function codeOfError(error: string): number {
  if (error === 'configError') return CniCode.InvalidNetworkConfig;
  const [type, name = ''] = error.split('.');
  if (type === 'CniCode') return CniCode[name as keyof typeof CniCode];
  return cniCodeOf(new HereaboutsError(ErrorKind[name as keyof typeof ErrorKind], 'x'));
}

test('a quoted message filed under another code than the one its error prints is reported', () => {
  const row = (code: number, msg: string): Doc => ({
    path: 'docs/troubleshooting.md',
    text: `| code | meaning | typical \`msg\` |\n|---|---|---|\n| ${String(code)} | x | ${msg} |`,
  });
  const wrong = misfiledMessages(row(5, '`pool file ... is corrupt`, `range 10.1.0.0/24 has no free address`'), src.literals, codeOfError);
  assert.equal(wrong.checked, 2);
  assert.deepEqual(wrong.mismatches, ['docs/troubleshooting.md:3: "range 10.1.0.0/24 has no free address" under code 5, raised as 100']);
});

test('every message docs/troubleshooting.md quotes sits under the code its error prints', () => {
  const { mismatches, checked } = misfiledMessages(docNamed('docs/troubleshooting.md'), src.literals, codeOfError);
  assert.ok(checked >= 10, `only ${String(checked)} quoted messages are the message of an error the code raises`);
  assert.deepEqual(mismatches, []);
});

test('every key of a configuration table is read by src/config/', () => {
  assert.deepEqual(unparsedKeys(docs, config.literals), []);
});

test("every Helm value docs/helm.md names is in the chart's values.yaml", () => {
  const values = readFileSync(join(repoRoot, 'deploy/helm/hereabouts/values.yaml'), 'utf8');
  assert.deepEqual(unknownValues(docNamed('docs/helm.md'), values), []);
});

test('every measured figure names the commit and the machine it was measured on', (t) => {
  const machines = machinesOf(docNamed('docs/benchmarks.md'));
  assert.deepEqual(docs.flatMap(unmarkedFigures), []);
  assert.ok(machines.size > 0, 'docs/benchmarks.md defines the machines');
  const history = fullHistory();
  if (!history) t.diagnostic('no full git history here: the commits of the markers are not looked up');
  assert.deepEqual(badMarkers(docs, machines, history ? isCommit : () => true), []);
});
