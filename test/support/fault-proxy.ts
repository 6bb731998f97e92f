// A TCP proxy in front of a real API server that can lose the server's answers: requests still reach the server
// (and are applied), responses never reach the client. That is the one failure a client cannot tell from "not
// applied", which the Kubernetes store must survive without handing out an address twice. TLS passes through
// untouched (the serving certificate names 127.0.0.1).
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface FaultProxy {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** 'pass': a transparent proxy. 'drop-responses': the server's bytes after the TLS handshake are discarded. */
  mode: 'pass' | 'drop-responses';
  close(): Promise<void>;
}

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  const proxy: FaultProxy = {
    url: '',
    mode: 'pass',
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((client) => {
    const upstreamSocket = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [client, upstreamSocket]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstreamSocket.destroy();
      });
    }
    // The TLS handshake must complete for a request to be sent at all: the client's second flight (Finished, then
    // the request) comes only after the server's whole first flight arrived, so from then on answers can be lost.
    let clientFlights = 0;
    client.on('data', (chunk: Buffer) => {
      clientFlights++;
      upstreamSocket.write(chunk);
    });
    upstreamSocket.on('data', (chunk: Buffer) => {
      if (proxy.mode === 'pass' || clientFlights < 2) client.write(chunk);
    });
    client.on('end', () => upstreamSocket.end());
    upstreamSocket.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fault proxy has no TCP address');
  return Object.assign(proxy, { url: `https://127.0.0.1:${address.port}` });
}
