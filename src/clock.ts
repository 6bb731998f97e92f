// A monotonic clock in milliseconds: deadlines, lease renewals and backoffs must not stretch or shrink when the
// wall clock is stepped (NTP, a VM resumed). process.hrtime loads no module, unlike the `performance` global.
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
