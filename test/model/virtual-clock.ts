// Wall-clock time the model can move forward: Date.now() and `new Date()` read real time plus an offset, so grace
// periods (pending pods, young reservations and allocations, terminal pods, slice-cache TTLs) pass in a step instead
// of minutes. monotonicMs() (durations, retry budgets) is left alone: it must not see the jump.
const RealDate = Date;
let offsetMs = 0;
let installed = false;

class VirtualDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...(args as [string | number | Date]));
  }

  static override now(): number {
    return RealDate.now() + offsetMs;
  }
}

export function installVirtualClock(): void {
  if (installed) return;
  installed = true;
  globalThis.Date = VirtualDate as DateConstructor;
}

export function advanceClock(ms: number): void {
  offsetMs += ms;
}

export function clockOffsetMs(): number {
  return offsetMs;
}
