// The driver: seeded random sequences on fresh clusters, invariants after every step and leak checks at the end of
// each sequence; a failing sequence is shrunk (shrink.ts) to the shortest that still breaks the same invariant,
// and printed with its seed so that it replays. Failures are told apart by kind (kinds.ts).
import type { Cluster } from './cluster.ts';
import { newFaultCounts, type FaultCounts } from './faults.ts';
import { generateStep, NODES, type GenerateOptions } from './generate.ts';
import { checkLeaks, checkStep, type Violation } from './invariants.ts';
import { breakOf, featuresOf, kindOf, opOf } from './kinds.ts';
import { shrink } from './shrink.ts';
import { checkSlicing } from './slice-invariants.ts';
import { Prng, withSeededRandom } from './prng.ts';
import { describeStep, type Step } from './steps.ts';

export interface Backend {
  /** A fresh, empty cluster (its own namespace, node names and cache dirs). */
  create(counts: FaultCounts): Promise<{ cluster: Cluster; dispose: () => Promise<void> }>;
}

export interface RunOptions extends GenerateOptions {
  readonly seed: number;
  /** Stop starting sequences after this many steps in all, or after this long. */
  readonly steps: number;
  readonly timeMs: number;
  readonly sequenceLength: number;
  /** Time allowed to shrink each distinct failure, and all of them (not counted in timeMs). */
  readonly shrinkMs: number;
  readonly shrinkTotalMs: number;
  readonly log?: (line: string) => void;
}

export interface Failure {
  /** Invariant, operation, message shape, and the kinds of steps of the shrunk sequence (featuresOf). */
  readonly kind: string;
  readonly seed: number;
  readonly violation: Violation & { readonly after: number; readonly op: string };
  readonly original: number;
  readonly steps: readonly Step[];
  readonly outcomes: readonly string[];
}

export interface Totals {
  sequences: number;
  steps: number;
  checks: number;
  faults: FaultCounts;
  shrinkRuns: number;
  /** Milliseconds spent shrinking failures (the rest of a run's time is the sequences'). */
  shrinkMs: number;
  readonly failures: Failure[];
}

interface Execution {
  readonly steps: Step[];
  readonly outcomes: string[];
  /** Every violation seen, once per message, with the step after which it was first seen (0-based). */
  readonly violations: Array<Violation & { readonly after: number; readonly op: string }>;
  readonly checks: number;
}

/** Runs one sequence: the given steps, or `length` generated ones. */
export async function execute(
  backend: Backend,
  seed: number,
  counts: FaultCounts,
  given: readonly Step[] | { length: number; gen: GenerateOptions },
): Promise<Execution> {
  const { cluster, dispose } = await backend.create(counts);
  const steps: Step[] = [];
  const outcomes: string[] = [];
  const violations: Execution['violations'] = [];
  const seen = new Set<string>();
  const note = (found: readonly Violation[], after: number): void => {
    for (const v of found) {
      if (seen.has(v.message)) continue;
      seen.add(v.message);
      const step = steps[after];
      violations.push({ ...v, after, op: step === undefined ? 'quiesce' : opOf(step) });
    }
  };
  let checks = 0;
  try {
    return await withSeededRandom(seed, async () => {
      const prng = new Prng(seed);
      const gen = Array.isArray(given) ? undefined : (given as { gen: GenerateOptions }).gen;
      // Half the sequences run every node's calls in a node agent with warm sets; no Whereabouts component runs
      // in those (the controller would turn warm sets off), so their steps are not generated. From the seed alone,
      // so that a printed sequence replays alike.
      const whereaboutsRuns = Array.isArray(given) && /"op":"(switch|wb-reconcile)"/.test(JSON.stringify(given));
      const warm = gen?.off?.has('warm') !== true && !whereaboutsRuns && new Prng(seed ^ 0x5a17).chance(0.5);
      // The agents' background writes meet the faults the steps meet (a replay: the highest rate its steps name).
      const rates = Array.isArray(given)
        ? [...JSON.stringify(given).matchAll(/"rate":([0-9.]+)/g)].map((m) => Number(m[1]))
        : [];
      if (warm) cluster.useAgents(gen?.faultRate ?? Math.max(0, ...rates));
      // Sticky addresses are hereabouts' own (Whereabouts' DEL and reconciler free bound records as any others):
      // StatefulSets and VMs come in the sequences without Whereabouts (every one with node agents, a third of the
      // others, all when Whereabouts is off), from the seed alone.
      const sticky =
        gen?.off?.has('sticky') !== true &&
        (warm || gen?.off?.has('whereabouts') === true || new Prng(seed ^ 0x571c).chance(0.35));
      const off = new Set([
        ...(gen?.off ?? []),
        ...(warm || sticky ? ['whereabouts' as const] : []),
        ...(sticky ? [] : ['sticky' as const]),
      ]);
      const genOptions: GenerateOptions | undefined = gen === undefined ? gen : { ...gen, off };
      await cluster.setup(['n1', 'n2']);
      const length = Array.isArray(given) ? given.length : (given as { length: number }).length;
      for (let i = 0; i < length; i++) {
        const step = Array.isArray(given) ? (given[i] as Step) : generateStep(prng, cluster, genOptions!);
        steps.push(step);
        let outcome: string;
        try {
          outcome = await cluster.run(step);
          if (cluster.sticky.used) await cluster.sticky.afterStep();
        } catch (err) {
          outcome = `model error: ${(err as Error).stack ?? String(err)}`;
          outcomes.push(outcome);
          throw err;
        }
        // The agents' grouped writes of this step land before the next one (what fails stays in their journals).
        if (cluster.agents) await cluster.settleAgents();
        outcomes.push(outcome);
        checks++;
        // A broken invariant stays broken: later steps report only what is new, so one bug does not hide others.
        note(await checkStep(cluster), i);
      }
      const problems = await cluster.quiesce();
      outcomes.push('quiesce: kubelets retry their DELs, +2 h, one controller pass');
      checks++;
      note(
        problems.map((message) => ({ invariant: 'kubelet' as const, message })),
        steps.length,
      );
      note(
        [...(await checkStep(cluster)), ...(await checkLeaks(cluster)), ...(await checkSlicing(cluster))],
        steps.length,
      );
      return { steps, outcomes, violations, checks };
    });
  } finally {
    await cluster.closeAgents();
    await dispose();
  }
}

export async function runModel(backend: Backend, o: RunOptions): Promise<Totals> {
  const log = o.log ?? (() => undefined);
  const totals: Totals = {
    sequences: 0,
    steps: 0,
    checks: 0,
    faults: newFaultCounts(),
    shrinkRuns: 0,
    shrinkMs: 0,
    failures: [],
  };
  const started = performance.now();
  let shrinking = 0;
  const master = new Prng(o.seed);
  const seen = new Set<string>();
  while (totals.steps < o.steps && performance.now() - started - shrinking < o.timeMs) {
    const seed = master.seed();
    const run = await execute(backend, seed, totals.faults, { length: o.sequenceLength, gen: o });
    totals.sequences++;
    totals.steps += run.steps.length;
    totals.checks += run.checks;
    for (const violation of run.violations) {
      const kind = kindOf(violation);
      const steps = run.steps.slice(0, violation.after + 1);
      // The same break after the same operation, in sequences that use other capabilities: maybe another path.
      const detected = `${kind}#${featuresOf(steps)}`;
      if (seen.has(detected)) continue;
      seen.add(detected);
      log(
        `sequence seed ${seed}: ${violation.invariant}: ${violation.message} (after step ${violation.after + 1}); shrinking`,
      );
      const t0 = performance.now();
      const budget = Math.min(o.shrinkMs, o.shrinkTotalMs - shrinking);
      const small =
        budget > 0
          ? await shrink(
              (candidate) => {
                totals.shrinkRuns++;
                return execute(backend, seed, newFaultCounts(), candidate);
              },
              steps,
              breakOf(violation),
              t0 + budget,
            )
          : undefined;
      shrinking += performance.now() - t0;
      totals.shrinkMs = shrinking;
      const best = small ?? { run: { ...run, steps }, violation };
      const shrunk = best.run.steps.slice(0, best.violation.after + 1);
      const path = `${kindOf(best.violation)}#${featuresOf(shrunk)}`;
      if (totals.failures.some((f) => f.kind === path)) continue; // a path already shown
      seen.add(path);
      totals.failures.push({
        kind: path,
        seed,
        violation: best.violation,
        original: steps.length,
        steps: shrunk,
        outcomes: best.run.outcomes,
      });
    }
  }
  return totals;
}

export function formatFailure(f: Failure, index: number): string {
  const lines = [
    `#${index + 1} invariant "${f.violation.invariant}" broken (sequence seed ${f.seed}; ${f.original} steps shrunk to ${f.steps.length}):`,
    `   ${f.violation.message}`,
    `   kind: ${f.kind}`,
    '   steps (after set-up: NADs for networks A B C S T U, nodes n1 n2 joined and running hereabouts, one controller pass):',
  ];
  f.steps.forEach((s, i) =>
    lines.push(`   ${String(i + 1).padStart(3)}. ${describeStep(s)}  => ${f.outcomes[i] ?? ''}`),
  );
  if (f.violation.after >= f.steps.length) lines.push(`        then: ${f.outcomes[f.steps.length] ?? 'quiesce'}`);
  lines.push(`   replay: HEREABOUTS_MODEL_REPLAY='${JSON.stringify({ seed: f.seed, steps: f.steps })}'`);
  return lines.join('\n');
}

export function formatTotals(t: Totals, ms: number): string {
  const w = t.faults.warm;
  const st = t.faults.sticky;
  const kinds = Object.entries(t.faults.byKind)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `model totals: ${t.sequences} sequences, ${t.steps} steps, ${t.checks} invariant checks, ${t.faults.injected} faults injected (${kinds}), ${t.faults.kills} process kills, ${w.sequences} sequences with node agents (warm sets: ${w.handedOut} ADDs and ${w.released} DELs answered from them, ${w.groupWrites} grouped writes, ${w.agentsKilled} agents killed, ${w.killedBeforeAnswer} of them before an answer), ${t.faults.claims.reconciles} claim reconciles (${t.faults.claims.ready} held an address or block, ${t.faults.claims.released} released one), sticky: ${st.steps} StatefulSet/VM/restart steps, ${st.bindings} bindings given an address, ${st.found} ADDs found their binding's address (${st.elsewhere} on another node), ${st.migrations} live migrations, ${st.released} bound addresses released, ${st.restarts} controller restarts, ${t.shrinkRuns} shrink replays, ${t.failures.length} distinct failures, ${(ms / 1000).toFixed(1)} s (${((ms - t.shrinkMs) / 1000).toFixed(1)} s of sequences)`;
}

export { NODES };
