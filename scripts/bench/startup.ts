// `npm run bench:startup`: start-up cost of the packaged executable, side by side with its references.
//   (a) CNI VERSION                         vs the embedded `node -e 0`      target <= 1.3x
//   (b) ADD+DEL on the local store          vs host-local ADD+DEL (Go)       reported
//   (c) loading the Kubernetes client       vs the embedded `node -e 0`      target <= 2x
// Usage: node scripts/bench/startup.ts [--runs N] [--warmup N] [--no-build]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { debianCniDir, embeddedNode, hereaboutsBin, repoRoot } from '../../test/support/paths.ts';
import { measure, runChecked, type Case, type Command, type Summary } from './measure.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '3' },
    'no-build': { type: 'boolean', default: false },
  },
});
const runs = Number(flags.runs);
const warmup = Number(flags.warmup);
if (!Number.isInteger(runs) || runs < 20) throw new RangeError(`--runs ${flags.runs}: need an integer >= 20`);
if (!Number.isInteger(warmup) || warmup < 0) throw new RangeError(`--warmup ${flags.warmup}: need an integer >= 0`);

const work = mkdtempSync(join(tmpdir(), 'hereabouts-bench-'));
try {
  main();
} finally {
  rmSync(work, { recursive: true, force: true });
}

function main(): void {
  if (!flags['no-build']) build();
  if (!existsSync(hereaboutsBin)) throw new Error(`${hereaboutsBin} is missing: run "npm run build"`);
  console.log(`dist/hereabouts: ${(statSync(hereaboutsBin).size / 2 ** 20).toFixed(1)} MiB`);
  console.log(`host: ${runChecked({ file: hereaboutsBin, args: ['version'] }).trim()}, ${runs} runs per case`);

  const baseline: Case = {
    label: 'node -e 0 (embedded Node)',
    sample: () => [{ file: embeddedNode, args: ['-e', '0'] }],
  };
  const version: Case = {
    label: 'hereabouts CNI VERSION',
    sample: () => [{ file: hereaboutsBin, env: { CNI_COMMAND: 'VERSION' }, input: '{"cniVersion":"1.0.0"}' }],
  };
  const cases: Case[] = [baseline, version];
  const skipped: string[] = [];

  const loadK8s = kubernetesClientCase();
  if (typeof loadK8s === 'string') skipped.push(loadK8s);
  else cases.push(loadK8s);

  const ours = addDelCase('hereabouts ADD+DEL (local store)', hereaboutsBin, (dir) => ({
    type: 'hereabouts',
    datastore: 'local',
    data_dir: dir,
    range: '10.77.0.0/16',
  }));
  const hostLocal = addDelCase('host-local ADD+DEL', join(debianCniDir, 'host-local'), (dir) => ({
    type: 'host-local',
    ranges: [[{ subnet: '10.78.0.0/16' }]],
    dataDir: dir,
  }));
  for (const c of [ours, hostLocal]) {
    if (typeof c === 'string') skipped.push(c);
    else cases.push(c);
  }

  const results = new Map(measure(cases, { runs, warmup }).map((s) => [s.label, s]));
  console.log('');
  for (const s of results.values()) console.log(row(s));
  console.log('');
  ratio(results, version.label, baseline.label, 1.3);
  if (typeof loadK8s !== 'string') ratio(results, loadK8s.label, baseline.label, 2);
  if (typeof ours !== 'string' && typeof hostLocal !== 'string') ratio(results, ours.label, hostLocal.label);
  for (const reason of skipped) console.log(`skipped: ${reason}`);
}

function build(): void {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [join(repoRoot, 'build', 'build.mjs')], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`build failed:\n${result.stdout}${result.stderr}`);
  const ms = Number((process.hrtime.bigint() - started) / 1_000_000n);
  console.log(`build: ${(ms / 1000).toFixed(1)} s (node build/build.mjs, wall clock)`);
}

/** `hereabouts __load-k8s <kubeconfig>`: loads the client as the Kubernetes store does, sends no request. */
function kubernetesClientCase(): Case | string {
  const kubeconfig = join(work, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: bench, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: bench, user: {token: not-a-token}}]',
      'contexts: [{name: bench, context: {cluster: bench, user: bench, namespace: kube-system}}]',
      'current-context: bench',
      '',
    ].join('\n'),
  );
  const command: Command = { file: hereaboutsBin, args: ['__load-k8s', kubeconfig] };
  const unavailable = probe(command);
  if (unavailable !== undefined) return `Kubernetes client load (hereabouts __load-k8s): ${unavailable}`;
  return { label: 'hereabouts __load-k8s (Kubernetes client)', sample: () => [command] };
}

/** One sample = ADD then DEL of a fresh container, with the IPAM plugin called directly as a runtime does. */
function addDelCase(label: string, plugin: string, ipam: (dataDir: string) => Record<string, unknown>): Case | string {
  if (!existsSync(plugin)) return `${label}: ${plugin} is not installed`;
  const dataDir = mkdtempSync(join(work, 'data-'));
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'bench', type: 'bridge', ipam: ipam(dataDir) });
  const call = (command: string, round: number): Command => ({
    file: plugin,
    input: conf,
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: `bench-${round}`,
      CNI_NETNS: `/var/run/netns/bench-${round}`,
      CNI_IFNAME: 'eth0',
      CNI_PATH: debianCniDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=pod-${round}`,
    },
  });
  const unavailable = probe(call('ADD', -1)) ?? probe(call('DEL', -1));
  if (unavailable !== undefined) return `${label}: ${unavailable}`;
  return { label, sample: (round) => [call('ADD', round), call('DEL', round)] };
}

/** undefined when the command works; otherwise why it cannot be measured (yet). */
function probe(command: Command): string | undefined {
  try {
    runChecked(command);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message.split('\n')[0] : String(err);
  }
}

function row(s: Summary): string {
  return `${s.label.padEnd(44)} median ${s.median.toFixed(1).padStart(7)} ms   p10 ${s.p10.toFixed(1).padStart(7)}   p90 ${s.p90.toFixed(1).padStart(7)}`;
}

function ratio(results: ReadonlyMap<string, Summary>, label: string, reference: string, target?: number): void {
  const a = results.get(label);
  const b = results.get(reference);
  if (a === undefined || b === undefined) return;
  const x = a.median / b.median;
  const verdict = target === undefined ? '' : `  (target <= ${target}x: ${x <= target ? 'met' : 'MISSED'})`;
  console.log(`${label} / ${reference}: ${x.toFixed(2)}x${verdict}`);
}
