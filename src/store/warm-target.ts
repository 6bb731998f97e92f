// How many addresses the node agent keeps warm in one pool (DESIGN §11): pure, so that every bound is checked by
// enumeration. Modelled on the AWS VPC CNI's MINIMUM_IP_TARGET and WARM_IP_TARGET, with the rate taken from the ADDs
// themselves: as many warm addresses as the pool's ADDs in the last window, so a burst is served from the set while
// its refill runs, and an idle pool shrinks back to the minimum. Whatever the demand, the set never holds more than a
// bounded share of the pool's free space: a node must not drain a small node slice, or a shared pool, by idling.

export interface WarmBounds {
  /** Kept warm even when idle (MINIMUM_IP_TARGET). */
  readonly minimum: number;
  /** Never more warm addresses than this in one pool. */
  readonly maximum: number;
  /** Never more than this share (0 < share <= 1) of the pool's free addresses, warm ones counted as free. */
  readonly maxShareOfFree: number;
  /** The window the ADD rate is counted over. */
  readonly windowMs: number;
  /** No ADD for this long: back to the minimum. */
  readonly idleAfterMs: number;
}

export const DEFAULT_WARM_BOUNDS: WarmBounds = {
  minimum: 1,
  maximum: 16,
  maxShareOfFree: 0.25,
  // About the time a refill takes under load, with a margin: a node that makes one ADD a second keeps two warm, not
  // ten it would hand out over the next ten seconds (each claim is a reservation create and a read).
  windowMs: 2_000,
  idleAfterMs: 60_000,
};

/** What the agent knows of one pool when it decides. */
export interface PoolDemand {
  /** ADDs this node served from the pool within the window. */
  readonly addsInWindow: number;
  /** Since the last such ADD; undefined: none since the agent started. */
  readonly sinceLastAddMs: number | undefined;
  /** Free addresses in the pool, the warm ones not included. */
  readonly free: number;
  /** Warm addresses the agent holds in the pool now. */
  readonly warm: number;
}

/** What is wrong with the bounds, naming the bound and its value; undefined when they hold together. */
export function warmBoundsProblem(bounds: WarmBounds): string | undefined {
  const { minimum, maximum, maxShareOfFree, windowMs, idleAfterMs } = bounds;
  const count = (n: number) => Number.isSafeInteger(n) && n >= 0;
  if (!count(minimum)) return `warm minimum ${minimum}: need a whole number >= 0`;
  if (!count(maximum) || maximum < minimum)
    return `warm maximum ${maximum}: need a whole number >= the minimum (${minimum})`;
  if (!(maxShareOfFree > 0 && maxShareOfFree <= 1)) return `warm maxShareOfFree ${maxShareOfFree}: need 0 < share <= 1`;
  if (!count(windowMs) || windowMs === 0) return `warm windowMs ${windowMs}: need a positive whole number`;
  if (!count(idleAfterMs) || idleAfterMs < windowMs)
    return `warm idleAfterMs ${idleAfterMs}: need >= the window (${windowMs})`;
  return undefined;
}

/** The number of warm addresses to hold in the pool now. */
export function warmTarget(bounds: WarmBounds, demand: PoolDemand): number {
  const idle = demand.sinceLastAddMs === undefined || demand.sinceLastAddMs >= bounds.idleAfterMs;
  const wanted = idle ? bounds.minimum : Math.max(bounds.minimum, demand.addsInWindow);
  const share = Math.floor(bounds.maxShareOfFree * (Math.max(0, demand.free) + Math.max(0, demand.warm)));
  return Math.max(0, Math.min(wanted, bounds.maximum, share));
}

/** The step toward the target: claim more (off the ADD path), give some back (one grouped write), or nothing. */
export type WarmStep =
  | { readonly kind: 'claim'; readonly count: number }
  | { readonly kind: 'give-back'; readonly count: number }
  | { readonly kind: 'hold' };

export function warmStep(bounds: WarmBounds, demand: PoolDemand): WarmStep {
  const target = warmTarget(bounds, demand);
  if (demand.warm < target) return { kind: 'claim', count: target - demand.warm };
  if (demand.warm > target) return { kind: 'give-back', count: demand.warm - target };
  return { kind: 'hold' };
}
