// A long GET whose answer is read as it arrives (a watch, a streamed list): the kubeconfig's TLS material and
// credentials, a chosen Accept, and a deadline on silence rather than on the whole answer.
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { USER_AGENT } from './api.ts';
import type { ApiEndpoint } from './kubeconfig.ts';

export interface StreamHandlers {
  /** The answer's head arrived (any status): read its body from `res`. */
  response(res: IncomingMessage): void;
  /** No answer, a broken connection, or nothing for `idleMs`. */
  failed(message: string): void;
}

export function getStream(
  endpoint: ApiEndpoint,
  path: string,
  accept: string,
  idleMs: number,
  handlers: StreamHandlers,
): ClientRequest {
  const url = new URL(`${endpoint.server}${path}`);
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  const base = endpoint.requestOptions;
  const headers = { ...(base.headers as Record<string, string> | undefined), Accept: accept, 'User-Agent': USER_AGENT };
  const req = send(url, { ...base, method: 'GET', headers }, (res) => handlers.response(res));
  req.setTimeout(idleMs, () => handlers.failed(`no data for ${idleMs} ms`));
  req.on('error', (err) => handlers.failed(err.message));
  req.end();
  return req;
}
