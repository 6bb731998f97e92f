// Prometheus metrics (prom-client, loaded only by the controller) and the health endpoints.
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { sizeOf } from '../ip/cidr.ts';
import type { PassResult } from './full-pass.ts';

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly #allocations = new Gauge({ name: 'hereabouts_pool_allocations', help: 'Allocated addresses per IPPool', labelNames: ['pool'], registers: [this.registry] });
  readonly #capacity = new Gauge({ name: 'hereabouts_pool_capacity', help: 'Addresses of the pool range (capped at 2^53 for IPv6)', labelNames: ['pool'], registers: [this.registry] });
  readonly #free = new Gauge({ name: 'hereabouts_pool_free', help: 'Capacity minus allocations per IPPool', labelNames: ['pool'], registers: [this.registry] });
  readonly #orphans = new Counter({ name: 'hereabouts_orphans_cleaned_total', help: 'Orphaned allocations released', labelNames: ['reason'], registers: [this.registry] });
  readonly #reservations = new Counter({ name: 'hereabouts_reservations_cleaned_total', help: 'Orphaned OverlappingRangeIPReservations deleted', registers: [this.registry] });
  readonly #passes = new Counter({ name: 'hereabouts_reconcile_passes_total', help: 'Full reconciliation passes', labelNames: ['result'], registers: [this.registry] });
  readonly #passSeconds = new Gauge({ name: 'hereabouts_reconcile_last_pass_seconds', help: 'Duration of the last full pass', registers: [this.registry] });
  readonly #leader = new Gauge({ name: 'hereabouts_leader', help: '1 while this replica holds the lease', registers: [this.registry] });

  recordPass(result: PassResult, seconds: number): void {
    this.#allocations.reset();
    this.#capacity.reset();
    this.#free.reset();
    for (const pool of result.pools) {
      const capacity = Number(sizeOf(pool.range) > 2n ** 53n ? 2n ** 53n : sizeOf(pool.range));
      this.#allocations.set({ pool: pool.name }, pool.used);
      this.#capacity.set({ pool: pool.name }, capacity);
      this.#free.set({ pool: pool.name }, Math.max(0, capacity - pool.used));
    }
    for (const r of result.released) this.#orphans.inc({ reason: r.reason });
    this.#reservations.inc(result.reservationsDeleted.length);
    this.#passes.inc({ result: 'ok' });
    this.#passSeconds.set(seconds);
  }

  passFailed(): void {
    this.#passes.inc({ result: 'error' });
  }

  leader(leading: boolean): void {
    this.#leader.set(leading ? 1 : 0);
  }
}

/** Serves /metrics, /healthz (the process runs) and /readyz (the API server was reached). */
export function serve(addr: string, routes: { metrics?: ControllerMetrics; ready?: () => boolean }): Promise<Server> {
  const { host, port } = parseAddr(addr);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics' && routes.metrics !== undefined) {
      void routes.metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'Content-Type': routes.metrics!.registry.contentType });
        res.end(text);
      });
      return;
    }
    if (path === '/healthz' || (path === '/readyz' && routes.ready !== undefined)) {
      const ok = path === '/healthz' || routes.ready!();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
      res.end(ok ? 'ok\n' : 'not ready\n');
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** ":9090", "127.0.0.1:9090" or "[::1]:9090". */
export function parseAddr(addr: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*))?:(\d+)$/.exec(addr);
  if (m === null) throw new TypeError(`address ${JSON.stringify(addr)} must look like :9090 or host:9090`);
  const host = m[1] ?? (m[2] === '' ? undefined : m[2]);
  return { ...(host === undefined ? {} : { host }), port: Number(m[3]) };
}
