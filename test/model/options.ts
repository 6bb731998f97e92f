// The knobs of a model run, from the environment (defaults fit `npm test`; raise them for longer runs):
//   HEREABOUTS_MODEL_SEED     master seed (default: random, always printed)
//   HEREABOUTS_MODEL_STEPS    step budget (in-process default 10000, control plane 300)
//   HEREABOUTS_MODEL_TIME_MS  time budget for generating sequences, shrinking excluded (in-process 90000, control plane 180000)
//   HEREABOUTS_MODEL_SHRINK_MS, HEREABOUTS_MODEL_SHRINK_TOTAL_MS
//                             time to shrink each distinct failure, and all of them (in-process 10000 / 90000)
//   HEREABOUTS_MODEL_REPLAY   a failure's printed {"seed","steps"}: replays exactly that sequence
//   HEREABOUTS_MODEL_OFF      feature groups not to generate, comma-separated (generate.ts FEATURES: whereabouts,
//                             networks, tenant, legacy, multi, interleave, pidns, warm, claims, sticky), to tell
//                             which a failure needs (off=whereabouts: every sequence gets sticky addresses)
import { FEATURES, type Feature } from './generate.ts';
import type { Step } from './steps.ts';

export interface ModelEnv {
  readonly seed: number;
  readonly steps: number;
  readonly timeMs: number;
  readonly shrinkMs: number;
  readonly shrinkTotalMs: number;
  readonly off: ReadonlySet<Feature>;
  readonly replay?: { readonly seed: number; readonly steps: Step[] };
}

export function modelEnv(
  defaults: { steps: number; timeMs: number; shrinkMs: number; shrinkTotalMs: number },
  env = process.env,
): ModelEnv {
  const num = (name: string, fallback: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name}=${text} is not a number`);
    return value;
  };
  const replayText = env['HEREABOUTS_MODEL_REPLAY'];
  const off = new Set<Feature>();
  for (const name of (env['HEREABOUTS_MODEL_OFF'] ?? '').split(',').map((s) => s.trim())) {
    if (name === '') continue;
    if (!(FEATURES as readonly string[]).includes(name))
      throw new TypeError(`HEREABOUTS_MODEL_OFF: ${name} is not one of ${FEATURES.join(', ')}`);
    off.add(name as Feature);
  }
  return {
    seed: num('HEREABOUTS_MODEL_SEED', Math.floor(Math.random() * 2 ** 31)),
    steps: num('HEREABOUTS_MODEL_STEPS', defaults.steps),
    timeMs: num('HEREABOUTS_MODEL_TIME_MS', defaults.timeMs),
    shrinkMs: num('HEREABOUTS_MODEL_SHRINK_MS', defaults.shrinkMs),
    shrinkTotalMs: num('HEREABOUTS_MODEL_SHRINK_TOTAL_MS', defaults.shrinkTotalMs),
    off,
    ...(replayText === undefined || replayText === ''
      ? {}
      : { replay: JSON.parse(replayText) as { seed: number; steps: Step[] } }),
  };
}
