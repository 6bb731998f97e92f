// A TCP proxy on loopback that delays every byte by a fixed time in each direction: a network between the nodes and
// the API server, for benchmarks only (this kernel has no netem, and tests address only loopback). TLS passes through
// untouched: the client still verifies kube-apiserver's certificate, issued for 127.0.0.1.
//
// Usage: node scripts/bench/delay-proxy.ts --target 127.0.0.1:6443 --delay-ms 1 [--lose-rate 0.02]
//   prints `listening 127.0.0.1:<port>` once it accepts connections; runs until SIGTERM. Every chunk read from one side
//   is written to the other side `delay-ms` later (in order, never earlier; Node's timers add up to about a
//   millisecond more), so a request-answer exchange pays at least twice the delay. With --lose-rate, each chunk the
//   server sends is, with that probability, dropped with the connection: the request was applied, its answer lost
//   (tests of what a client does then; the soak test uses it).
import { createServer, connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

interface Pending {
  readonly due: number;
  readonly chunk: Buffer;
}

/**
 * Forwards `from` to `to`, each chunk `delayMs` after it arrived; ends `to` once `from` ended and all is written. A
 * chunk `lose()` picks is never written: both sockets are destroyed instead.
 */
function delayed(from: Socket, to: Socket, delayMs: number, lose: () => boolean = () => false): void {
  const queue: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const drain = (): void => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && (queue[0]?.due ?? Infinity) <= now) {
      const next = queue.shift();
      if (next !== undefined && !to.write(next.chunk)) {
        from.pause(); // the other side is slow: stop reading until it drained
        to.once('drain', () => from.resume());
      }
    }
    if (queue.length > 0) schedule();
    else if (ended) to.end();
  };
  const schedule = (): void => {
    if (timer !== undefined) return;
    const first = queue[0];
    if (first !== undefined) timer = setTimeout(drain, Math.max(0, first.due - performance.now()));
  };
  from.on('data', (chunk: Buffer) => {
    if (lose()) {
      from.destroy();
      to.destroy();
      return;
    }
    queue.push({ due: performance.now() + delayMs, chunk });
    schedule();
  });
  from.on('end', () => {
    ended = true;
    if (queue.length === 0) to.end();
  });
}

function main(): void {
  const { values } = parseArgs({
    options: {
      target: { type: 'string' },
      'delay-ms': { type: 'string', default: '1' },
      'lose-rate': { type: 'string', default: '0' },
    },
  });
  const target = values.target ?? '';
  const match = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost):(\d+)$/.exec(target);
  if (match === null) throw new RangeError(`--target ${target}: a loopback host:port`);
  const [, host = '', port = ''] = match;
  const delayMs = Number(values['delay-ms']);
  if (!(delayMs >= 0 && delayMs <= 1000)) throw new RangeError(`--delay-ms ${values['delay-ms']}: 0 to 1000`);
  const loseRate = Number(values['lose-rate']);
  if (!(loseRate >= 0 && loseRate < 1)) throw new RangeError(`--lose-rate ${values['lose-rate']}: 0 to below 1`);
  const lose = (): boolean => loseRate > 0 && Math.random() < loseRate;
  const server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect({ host: host.replace(/^\[|\]$/g, ''), port: Number(port), noDelay: true });
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    delayed(client, upstream, delayMs);
    delayed(upstream, client, delayMs, lose);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    process.stdout.write(`listening 127.0.0.1:${address.port}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

main();
