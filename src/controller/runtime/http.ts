// The controller's HTTP endpoints: /metrics (Prometheus text) on --metrics-addr; /healthz (the process serves
// requests) and /readyz (the caches are synced: this replica could lead now) on --health-addr. The two may share
// one address.
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { messageOf } from '../../errors.ts';

export interface Routes {
  readonly metrics?: Registry;
  /** Runs before each /metrics answer (e.g. folds what was recorded since the last scrape). */
  readonly beforeMetrics?: () => void;
  /** Why the replica is not ready, or undefined when it is. */
  readonly notReady?: () => string | undefined;
}

export function serve(addr: string, routes: Routes): Promise<Server> {
  const { host, port } = parseAddr(addr);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const text = (status: number, body: string): void => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(body);
    };
    if (path === '/metrics' && routes.metrics !== undefined) {
      const registry = routes.metrics;
      Promise.resolve()
        .then(() => routes.beforeMetrics?.())
        .then(() => registry.metrics())
        .then(
          (body) => {
            res.writeHead(200, { 'Content-Type': registry.contentType });
            res.end(body);
          },
          (err: unknown) => text(500, `metrics failed: ${messageOf(err)}\n`),
        );
      return;
    }
    if (path === '/healthz' && routes.notReady !== undefined) return text(200, 'ok\n');
    if (path === '/readyz' && routes.notReady !== undefined) {
      const why = routes.notReady();
      return why === undefined ? text(200, 'ok\n') : text(503, `not ready: ${why}\n`);
    }
    text(404, 'not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${addr}: ${err.message}`)));
    server.listen(port, host, () => resolve(server));
  });
}

/** ":9090", "0.0.0.0:9090", "127.0.0.1:9090" or "[::1]:9090". */
export function parseAddr(addr: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*))?:(\d{1,5})$/.exec(addr);
  const port = Number(m?.[3]);
  if (m === null || port > 65535)
    throw new TypeError(`address ${JSON.stringify(addr)} must look like :9090 or host:9090`);
  const host = m[1] ?? (m[2] === '' ? undefined : m[2]);
  return { ...(host === undefined ? {} : { host }), port };
}
