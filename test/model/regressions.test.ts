// The failure kinds the model test found, each replayed exactly (regressions.ts) against the in-memory API server:
// every invariant of the model (invariants.ts) must hold after every step and once the sequence is over. A name
// tells what must hold; the message lists what broke, after which step.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryBackend } from './backends.ts';
import { newFaultCounts } from './faults.ts';
import { REGRESSIONS } from './regressions.ts';
import { execute } from './runner.ts';
import { installVirtualClock } from './virtual-clock.ts';

installVirtualClock();

for (const r of REGRESSIONS) {
  test(
    `${r.name} (${r.ref})`,
    { timeout: 60_000, ...(r.knownBug === undefined ? {} : { todo: r.knownBug }) },
    async () => {
      const run = await execute(memoryBackend(), r.seed, newFaultCounts(), r.steps);
      const broken = run.violations.map((v) => `after step ${v.after + 1} (${v.op}): ${v.invariant}: ${v.message}`);
      assert.deepEqual(
        broken,
        [],
        `replay: HEREABOUTS_MODEL_REPLAY='${JSON.stringify({ seed: r.seed, steps: r.steps })}'`,
      );
    },
  );
}
