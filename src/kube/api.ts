// A few REST calls on node:https with the kubeconfig's TLS material and credentials. The generated client of
// @kubernetes/client-node is not used: loading it costs more than a whole ADD (docs/kubernetes-store.md).
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { buildInfo } from '../build-info.ts';
import { ConnectionPool } from './connection-pool.ts';
import type { ApiEndpoint } from './kubeconfig.ts';
import { mark, timingsEnabled } from './timings.ts';
import type { TlsSessionStore } from './tls-session.ts';

/** The API server answered (any status). */
export interface ApiResponse {
  readonly status: number;
  /** Parsed JSON, or undefined for an empty body. */
  readonly body: unknown;
}

/** No HTTP answer: connection refused or reset, DNS or TLS failure, or no answer within the timeout. */
export class ApiUnreachableError extends Error {
  /** True when the request may have reached the server and been applied (it was fully sent before the failure). */
  readonly ambiguous: boolean;
  constructor(message: string, options: { ambiguous: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiUnreachableError';
    this.ambiguous = options.ambiguous;
  }
}

export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. /apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/x/ippools/y. */
  readonly path: string;
  readonly body?: unknown;
  readonly contentType?: string;
}

export const USER_AGENT = `hereabouts/${buildInfo.version}`;

export class ApiClient {
  readonly endpoint: ApiEndpoint;
  /** Requests sent by this process, for the debug log and the benchmarks. */
  requests = 0;
  /** How the last new TLS connection was set up: a full handshake, or resumed from a stored session. */
  lastHandshake: 'full' | 'resumed' | undefined;
  readonly #timeoutMs: number;
  readonly #sessions: TlsSessionStore | undefined;
  readonly #connections: ConnectionPool;
  /** The stored TLS session, read once per process (undefined: none, or not read yet). */
  #session: Buffer | undefined;
  #sessionLoaded = false;

  /**
   * `tlsSessions`: keep the server's TLS session ticket there so that the next process resumes (tls-session.ts).
   * `connections`: the pool the endpoint's agent came from, which close() gives it back to (default: one that keeps
   * none, so close() destroys the agent).
   */
  constructor(
    endpoint: ApiEndpoint,
    options: { timeoutMs: number; tlsSessions?: TlsSessionStore; connections?: ConnectionPool },
  ) {
    this.endpoint = endpoint;
    this.#timeoutMs = options.timeoutMs;
    this.#sessions = options.tlsSessions;
    this.#connections = options.connections ?? new ConnectionPool({ keep: false });
  }

  get namespace(): string {
    return this.endpoint.namespace;
  }

  send(req: ApiRequest, options: { timeoutMs?: number } = {}): Promise<ApiResponse> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const url = new URL(this.endpoint.server + req.path);
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body), 'utf8');
    const base = this.endpoint.requestOptions;
    const headers: Record<string, string | number> = {
      ...(base.headers as Record<string, string> | undefined),
      Accept: 'application/json',
      'User-Agent': USER_AGENT,
    };
    if (payload !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const sessions = url.protocol === 'https:' ? this.#sessions : undefined;
    if (sessions !== undefined && !this.#sessionLoaded) {
      this.#sessionLoaded = true;
      this.#session = sessions.load();
    }
    this.requests++;
    return new Promise((resolve, reject) => {
      let sent = false;
      let settled = false;
      const fail = (why: string, cause?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const ambiguous = sent && req.method !== 'GET';
        reject(new ApiUnreachableError(`${req.method} ${url.pathname}: ${why}`, { ambiguous, cause }));
      };
      const session = sessions === undefined ? undefined : this.#session;
      const request = send(
        url,
        { ...base, method: req.method, headers, ...(session === undefined ? {} : { session }) },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (err) => fail(`response aborted: ${err.message}`, err));
          res.on('end', () => {
            if (settled) return;
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            try {
              body = text === '' ? undefined : JSON.parse(text);
            } catch {
              body = text; // a proxy's HTML error page: kept as text for the error message
            }
            settled = true;
            clearTimeout(timer);
            if (timingsEnabled) mark(`${req.method} ${resourceOf(url.pathname)} -> ${res.statusCode ?? 0}`);
            resolve({ status: res.statusCode ?? 0, body });
          });
        },
      );
      const timer = setTimeout(() => {
        request.destroy();
        fail(`no answer from ${this.endpoint.server} within ${timeoutMs} ms`);
      }, timeoutMs);
      request.on('socket', (socket) => this.#watchTls(socket, sessions));
      request.on('finish', () => {
        sent = true;
      });
      request.on('error', (err) => fail(`${this.endpoint.server} unreachable: ${err.message}`, err));
      request.end(payload);
    });
  }

  /** A new TLS connection: time its handshake, and keep the ticket of a full handshake for the next process. */
  #watchTls(socket: Socket, sessions: TlsSessionStore | undefined): void {
    if (!(socket instanceof TLSSocket) || socket.readyState === 'open') return; // a kept-alive connection
    socket.once('secureConnect', () => {
      this.lastHandshake = socket.isSessionReused() ? 'resumed' : 'full';
      if (timingsEnabled) mark(`connect + TLS (${this.lastHandshake} handshake)`);
    });
    if (sessions === undefined) return;
    socket.on('session', (ticket: Buffer) => {
      if (socket.isSessionReused() && this.#session !== undefined) return; // the stored ticket still works
      this.#session = ticket;
      sessions.save(ticket);
    });
  }

  /** Ends this call's use of the connection: closed in a plugin process, kept for the next call in the node agent. */
  close(): void {
    this.#connections.release(this.endpoint.agent);
  }

  /** A client of the same endpoint and connections for a long-lived user (a watch) that outlives this one's call. */
  detached(): ApiClient {
    return new ApiClient(this.endpoint, { timeoutMs: this.#timeoutMs, connections: this.#connections });
  }
}

/** "ippools" of /apis/g/v/namespaces/ns/ippools/name, for the timings. */
function resourceOf(path: string): string {
  const parts = path.split('/');
  const i = parts.indexOf('namespaces');
  return (i >= 0 ? parts[i + 2] : parts.at(-1)) ?? path;
}

/** The `reason` and `message` of a Kubernetes Status body, for errors. */
export function statusText(res: ApiResponse): string {
  const body = res.body;
  if (typeof body === 'object' && body !== null) {
    const { reason, message } = body as { reason?: unknown; message?: unknown };
    const parts = [typeof reason === 'string' ? reason : undefined, typeof message === 'string' ? message : undefined];
    const text = parts.filter((p) => p !== undefined && p !== '').join(': ');
    if (text !== '') return `${res.status} ${text}`;
  }
  return typeof body === 'string' && body !== '' ? `${res.status} ${body.slice(0, 200)}` : `HTTP ${res.status}`;
}
