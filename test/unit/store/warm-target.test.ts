// How many addresses the node agent keeps warm in a pool (src/store/warm-target.ts): its bounds checked on every
// combination of a grid, and the cases an operator reads about (a /28 slice, a burst, an idle node).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_WARM_BOUNDS,
  warmBoundsProblem,
  warmStep,
  warmTarget,
  type PoolDemand,
  type WarmBounds,
} from '../../../src/store/warm-target.ts';

const bounds: WarmBounds = DEFAULT_WARM_BOUNDS;
const active = (adds: number, free: number, warm = 0): PoolDemand => ({
  addsInWindow: adds,
  sinceLastAddMs: 100,
  free,
  warm,
});

test('the defaults hold together', () => {
  assert.equal(warmBoundsProblem(DEFAULT_WARM_BOUNDS), undefined);
});

test('every target on a grid stays within the maximum and the share of free space, and meets the minimum where it fits', () => {
  let checked = 0;
  for (const minimum of [0, 1, 2, 5])
    for (const maximum of [minimum, minimum + 1, 16])
      for (const maxShareOfFree of [0.1, 0.25, 0.5, 1])
        for (const adds of [0, 1, 3, 20, 200])
          for (const since of [undefined, 0, 9_999, 60_000, 600_000])
            for (const free of [0, 1, 2, 13, 14, 253, 65_533])
              for (const warm of [0, 1, 3, 16]) {
                const b = { ...bounds, minimum, maximum, maxShareOfFree };
                const demand = { addsInWindow: adds, sinceLastAddMs: since, free, warm };
                const target = warmTarget(b, demand);
                const share = Math.floor(maxShareOfFree * (free + warm));
                const label = JSON.stringify({ b, demand, target });
                assert.ok(Number.isSafeInteger(target) && target >= 0, label);
                assert.ok(target <= maximum && target <= share, label);
                assert.ok(target >= Math.min(minimum, share), label);
                const idle = since === undefined || since >= b.idleAfterMs;
                assert.equal(target, Math.min(idle ? minimum : Math.max(minimum, adds), maximum, share), label);
                const step = warmStep(b, demand);
                const after =
                  step.kind === 'claim' ? warm + step.count : step.kind === 'give-back' ? warm - step.count : warm;
                assert.equal(after, target, label);
                checked++;
              }
  assert.ok(checked > 10_000);
});

test('an idle node holds one warm address of a /28 slice, and a burst there at most 3 of its 14 addresses', () => {
  assert.equal(warmTarget(bounds, { addsInWindow: 0, sinceLastAddMs: undefined, free: 14, warm: 0 }), 1);
  assert.equal(warmTarget(bounds, active(40, 10, 1)), 2); // 11 free with the warm one: a quarter is 2
  assert.equal(warmTarget(bounds, active(40, 13, 1)), 3);
});

test('the set grows with the ADDs of the last window, up to the maximum, and shrinks to the minimum once idle', () => {
  assert.equal(warmTarget(bounds, active(5, 253)), 5);
  assert.equal(warmTarget(bounds, active(50, 253)), 16);
  const idle: PoolDemand = { addsInWindow: 0, sinceLastAddMs: 60_000, free: 240, warm: 16 };
  assert.deepEqual(warmStep(bounds, idle), { kind: 'give-back', count: 15 });
  assert.deepEqual(warmStep(bounds, active(5, 253, 2)), { kind: 'claim', count: 3 });
  assert.deepEqual(warmStep(bounds, active(5, 253, 5)), { kind: 'hold' });
});

test('a nearly full pool gives its warm addresses back to the share, down to none', () => {
  assert.deepEqual(warmStep(bounds, active(20, 4, 8)), { kind: 'give-back', count: 5 });
  assert.deepEqual(warmStep(bounds, active(20, 0, 3)), { kind: 'give-back', count: 3 });
});

test('bounds that do not hold together are named with their value', () => {
  const cases: Array<[Partial<WarmBounds>, string]> = [
    [{ minimum: -1 }, 'warm minimum -1'],
    [{ minimum: 1.5 }, 'warm minimum 1.5'],
    [{ minimum: 4, maximum: 3 }, 'warm maximum 3'],
    [{ maxShareOfFree: 0 }, 'warm maxShareOfFree 0'],
    [{ maxShareOfFree: 1.5 }, 'warm maxShareOfFree 1.5'],
    [{ windowMs: 0 }, 'warm windowMs 0'],
    [{ idleAfterMs: 1_000 }, 'warm idleAfterMs 1000'], // shorter than the window
  ];
  for (const [change, flag] of cases)
    assert.match(warmBoundsProblem({ ...bounds, ...change }) ?? '', new RegExp(`^${flag}`));
});
