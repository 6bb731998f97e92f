// The body of both model tests: run (or replay), print the totals and every distinct failure, fail when any.
import assert from 'node:assert/strict';
import { newFaultCounts } from './faults.ts';
import { modelEnv } from './options.ts';
import { execute, formatFailure, formatTotals, runModel, type Backend } from './runner.ts';
import { installVirtualClock } from './virtual-clock.ts';

export async function modelRun(
  label: string,
  backend: Backend,
  defaults: {
    steps: number;
    timeMs: number;
    faultRate: number;
    killRate: number;
    sequenceLength: number;
    shrinkMs: number;
    shrinkTotalMs: number;
  },
): Promise<void> {
  installVirtualClock();
  const env = modelEnv(defaults);
  const print = (line: string): void => void process.stdout.write(`# [model ${label}] ${line}\n`);
  if (env.replay !== undefined) {
    const run = await execute(backend, env.replay.seed, newFaultCounts(), env.replay.steps);
    run.steps.forEach((s, i) => print(`${i + 1}. ${JSON.stringify(s)} => ${run.outcomes[i] ?? ''}`));
    for (const v of run.violations) print(`after step ${v.after + 1}: ${v.invariant}: ${v.message}`);
    assert.deepEqual(run.violations, [], 'the replayed sequence breaks invariants');
    return;
  }
  const off = env.off.size === 0 ? '' : `, without ${[...env.off].join(', ')}`;
  print(
    `seed ${env.seed} (HEREABOUTS_MODEL_SEED=${env.seed} repeats this run), budget ${env.steps} steps / ${env.timeMs} ms${off}`,
  );
  const started = performance.now();
  const totals = await runModel(backend, {
    ...defaults,
    seed: env.seed,
    steps: env.steps,
    timeMs: env.timeMs,
    shrinkMs: env.shrinkMs,
    shrinkTotalMs: env.shrinkTotalMs,
    off: env.off,
    log: print,
  });
  print(formatTotals(totals, performance.now() - started));
  const report = totals.failures.map(formatFailure).join('\n\n');
  if (report !== '') print(`failures (seed ${env.seed}):\n${report}`);
  assert.equal(
    totals.failures.length,
    0,
    `the model test (seed ${env.seed}) found ${totals.failures.length} distinct invariant violations:\n\n${report}`,
  );
  assert.ok(totals.steps >= Math.min(env.steps, 1), 'no step ran');
}
