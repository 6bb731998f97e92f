// What the node agent is told about warm sets (DESIGN §11), and the allocator's choices it hands to the store: the
// store decides when to claim or give back, the allocator which address.
import { freeCount } from '../allocator/capacity.ts';
import { chooseFree } from '../ipam/assign.ts';
import type { WarmOptions, WarmPolicy } from '../store/kubernetes/open.ts';
import type { WarmBounds } from '../store/warm-target.ts';

/** Off: every call runs the synchronous path. On: warm sets while the controller allows them. */
export interface WarmSetting {
  readonly enabled: boolean;
  /** The agent's directory on the host, as this process sees it (the journal lives there). */
  readonly dir: string;
  readonly bounds: WarmBounds;
}

export const DEFAULT_WARM_DIR = '/var/lib/cni/hereabouts/agent';

export const WARM_POLICY: WarmPolicy = {
  choose: chooseFree,
  free: (range, current) => {
    const free = freeCount(range, current);
    return free > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(free);
  },
};

export function warmOptions(setting: WarmSetting, log: (msg: string) => void): WarmOptions | undefined {
  if (!setting.enabled) return undefined;
  return { dir: setting.dir, bounds: setting.bounds, policy: WARM_POLICY, log: (msg) => log(`warm sets: ${msg}`) };
}
