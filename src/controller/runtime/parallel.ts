// Runs `fn` over `items` with at most `width` calls in flight: the controller's bursts of requests (live pod reads,
// pool and status writes, deletes) stay a steady, bounded load on the API server.
export async function eachLimited<T>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}
