// How the model tells failures apart: the kind of a violation (the invariant, the operation after which it
// appeared, the shape of its message) and the capabilities of the model its sequence uses.
import type { Violation } from './invariants.ts';
import type { Step } from './steps.ts';
import { STICKY_OPS } from './sticky.ts';

/** The operation a violation appeared after: a parallel step lists its parts, an interleaving names both. */
export function opOf(step: Step): string {
  if (step.op === 'parallel') return `parallel(${step.steps.map((s) => s.op).join(',')})`;
  if (step.op === 'interleave') return `interleave[${opOf(step.main)} < ${step.at.on} < ${opOf(step.other)}]`;
  return step.op;
}

const SHAPES = new RegExp(
  [
    "although (its pod is \\w+|its pod's sandbox)",
    'without its allocation',
    'has no OverlappingRange',
    'its reservation names',
    'is in \\d+ records',
    'but it is held by',
    'no record holds it',
    'took a pool lock',
    'although IPPool',
    'does not exist after a controller pass',
    'slices \\S+ by',
    'has no slice of',
    'no record of that claim holds',
    'is named by \\d+ IPAddresses',
    'overlaps',
    'which no record of it holds',
    'although its claim is gone',
    'lost: it holds',
    'without a controller pass',
    'before the controller.s caches showed it released',
    'its record now holds',
    'but its binding.s record holds',
    'which is bound to',
    'whose pod binds',
    'although its binding is released',
  ].join('|'),
);

/**
 * Classifies a violation, so that each kind is shrunk and reported once: the invariant, the operation after which
 * it appeared (the final controller pass counts as one; a parallel step's parts are not told apart), whether the
 * pod was disrupted, and the shape of the message.
 */
export function kindOf(v: Violation & { readonly op?: string }): string {
  const disrupted = /DisruptionTarget/.test(v.message) ? 'disrupted' : '';
  const why = SHAPES.exec(v.message);
  const op =
    v.invariant === 'leak' || v.invariant === 'slicing'
      ? ''
      : (v.op ?? '').replace(/^parallel\(.*\)$/, 'parallel').replace('quiesce', 'controller');
  return [v.invariant, op, disrupted, why?.[0].replace(/\d+/, 'n') ?? ''].join('|');
}

/** What shrinking keeps: the invariant broken and how, after whichever operation. */
export function breakOf(v: Violation): string {
  return kindOf({ ...v, op: '' });
}

/**
 * The capabilities of the model a sequence uses (steps of kinds added after the first model test): with the kind of
 * a violation, they tell apart failures that break the same invariant the same way by different paths.
 */
export function featuresOf(steps: readonly Step[]): string {
  const found = new Set<string>();
  const visit = (step: Step): void => {
    switch (step.op) {
      case 'parallel':
        step.steps.forEach(visit);
        return;
      case 'interleave':
        found.add('interleave');
        visit(step.main);
        visit(step.other);
        return;
      case 'switch':
        if (step.binary === 'whereabouts') found.add('whereabouts');
        return;
      case 'wb-reconcile':
        found.add('wb-reconcile');
        return;
      case 'legacy':
        found.add('legacy');
        return;
      case 'claim-create':
      case 'claim-reconcile':
      case 'claim-delete':
      case 'claim-unfinalize':
        found.add('claims');
        return;
      case 'tenant-nad':
        found.add('tenant');
        return;
      case 'nsp-delete':
      case 'nad-delete':
        found.add('nsp/nad');
        return;
      case 'stall':
        if (step.split === true) found.add('pidns');
        return;
      case 'pod-create':
        if ((step.nets?.length ?? 1) > 1) found.add('multi');
        return;
      default:
        if (STICKY_OPS.has(step.op)) found.add(step.op === 'controller-restart' ? 'restart' : 'sticky');
        return;
    }
  };
  steps.forEach(visit);
  return [...found].sort().join(',');
}
