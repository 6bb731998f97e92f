// Shrinking a failing sequence: delta debugging over its steps, then simpler steps in place of interleavings,
// parallel steps and pods with two networks, to the shortest sequence (found within the time allowed) that still
// breaks the same invariant the same way.
import type { Violation } from './invariants.ts';
import { breakOf } from './kinds.ts';
import type { Step } from './steps.ts';

interface Replayed {
  readonly violations: ReadonlyArray<Violation & { readonly after: number; readonly op: string }>;
}

export async function shrink<R extends Replayed>(
  replay: (steps: readonly Step[]) => Promise<R>,
  steps: readonly Step[],
  kind: string,
  deadline: number,
): Promise<{ run: R; violation: R['violations'][number] } | undefined> {
  let best: { run: R; violation: R['violations'][number] } | undefined;
  const fails = async (candidate: readonly Step[]): Promise<boolean> => {
    const run = await replay(candidate);
    const violation = run.violations.find((v) => breakOf(v) === kind);
    if (violation === undefined) return false;
    best = { run, violation };
    return true;
  };
  let current = [...steps];
  if (!(await fails(current))) return undefined; // not reproducible from the step list alone
  // Fewer steps, then simpler ones (each simpler step may make others unnecessary), until neither helps.
  for (;;) {
    current = await fewer(current, fails, deadline);
    const simpler = await simplified(current, fails, deadline);
    if (simpler === undefined) break;
    current = simpler;
  }
  // The last failing run is the shortest one; re-run it so that its outcomes match its steps.
  await fails(current);
  return best;
}

type Fails = (candidate: readonly Step[]) => Promise<boolean>;

/** ddmin: drops chunks of steps while the sequence still fails. */
async function fewer(steps: readonly Step[], fails: Fails, deadline: number): Promise<Step[]> {
  let current = [...steps];
  let n = 2;
  while (current.length >= 2 && performance.now() < deadline) {
    const chunk = Math.ceil(current.length / n);
    let reduced = false;
    for (let start = 0; start < current.length && performance.now() < deadline; start += chunk) {
      const complement = [...current.slice(0, start), ...current.slice(start + chunk)];
      if (complement.length > 0 && (await fails(complement))) {
        current = complement;
        n = Math.max(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= current.length) break;
      n = Math.min(current.length, n * 2);
    }
  }
  return current;
}

/** The sequence with one step made simpler (simplifications()), if that still fails; undefined when none does. */
async function simplified(steps: readonly Step[], fails: Fails, deadline: number): Promise<Step[] | undefined> {
  for (const [i, step] of steps.entries()) {
    for (const simpler of simplifications(step)) {
      if (performance.now() >= deadline) return undefined;
      const candidate = [...steps.slice(0, i), ...simpler, ...steps.slice(i + 1)];
      if (await fails(candidate)) return candidate;
    }
  }
  return undefined;
}

/** Simpler replacements of one step, tried in order by shrink(). */
function simplifications(step: Step): Array<readonly Step[]> {
  switch (step.op) {
    case 'interleave':
      return [[step.main], [step.main, step.other], [step.other, step.main]];
    case 'parallel':
      return [step.steps];
    case 'pod-create':
      return (step.nets?.length ?? 1) > 1 ? (step.nets ?? []).map((net) => [{ ...step, nets: [net] }]) : [];
    case 'stall':
      return step.split === true ? [[{ ...step, split: false }]] : [];
    default:
      return [];
  }
}
