// The node agent's warm-set flags, shared by `hereabouts agent` and `hereabouts install` (which hosts the agent).
import { DEFAULT_WARM_DIR, type WarmSetting } from '../agent/warm-setting.ts';
import { DEFAULT_WARM_BOUNDS, warmBoundsProblem } from '../store/warm-target.ts';
import { duration, UsageError, type FlagValues } from './flags.ts';

export const WARM_FLAGS = {
  'warm-sets': { type: 'boolean', default: true },
  'warm-dir': { type: 'string', default: DEFAULT_WARM_DIR },
  'warm-min': { type: 'string', default: String(DEFAULT_WARM_BOUNDS.minimum) },
  'warm-max': { type: 'string', default: String(DEFAULT_WARM_BOUNDS.maximum) },
  'warm-max-share': { type: 'string', default: String(DEFAULT_WARM_BOUNDS.maxShareOfFree) },
  'warm-window': { type: 'string', default: `${DEFAULT_WARM_BOUNDS.windowMs / 1000}s` },
  'warm-idle': { type: 'string', default: `${DEFAULT_WARM_BOUNDS.idleAfterMs / 1000}s` },
} as const;

export const WARM_HELP = `  --warm-sets BOOL           answer ADDs from addresses the node already holds, while the controller allows it
                             (default true)
  --warm-dir DIR             the agent's journal directory on the host (default ${DEFAULT_WARM_DIR})
  --warm-min N               warm addresses kept per pool when idle (default ${DEFAULT_WARM_BOUNDS.minimum})
  --warm-max N               warm addresses per pool at most (default ${DEFAULT_WARM_BOUNDS.maximum})
  --warm-max-share X         never more than this share of a pool's free addresses, 0 < X <= 1 (default ${DEFAULT_WARM_BOUNDS.maxShareOfFree})
  --warm-window D            the ADD rate is counted over this window (default ${DEFAULT_WARM_BOUNDS.windowMs / 1000}s)
  --warm-idle D              no ADD for this long: back to --warm-min (default ${DEFAULT_WARM_BOUNDS.idleAfterMs / 1000}s)
`;

export function warmSettingOf(values: FlagValues<typeof WARM_FLAGS>): WarmSetting {
  const whole = (flag: 'warm-min' | 'warm-max'): number => {
    const n = Number(values[flag]);
    if (values[flag].trim() === '' || !Number.isSafeInteger(n) || n < 0)
      throw new UsageError(`--${flag} ${JSON.stringify(values[flag])} must be a whole number >= 0`);
    return n;
  };
  const share = Number(values['warm-max-share']);
  const bounds = {
    minimum: whole('warm-min'),
    maximum: whole('warm-max'),
    maxShareOfFree: values['warm-max-share'].trim() === '' ? Number.NaN : share,
    windowMs: duration(values['warm-window'], 'warm-window'),
    idleAfterMs: duration(values['warm-idle'], 'warm-idle'),
  };
  const problem = warmBoundsProblem(bounds);
  if (problem !== undefined) throw new UsageError(`warm-set flags: ${problem}`);
  if (values['warm-dir'] === '') throw new UsageError('--warm-dir "" names no directory');
  return { enabled: values['warm-sets'], dir: values['warm-dir'], bounds };
}
