// One Kubernetes watch request: GET …?watch=1 answered with a stream of JSON lines ({type, object}), read line by
// line so that memory holds one event at a time. The caller re-opens it when it ends.
import type { ClientRequest, IncomingMessage } from 'node:http';
import { getStream } from './get-stream.ts';
import type { ApiEndpoint } from './kubeconfig.ts';

export interface WatchEvent {
  readonly type: string;
  readonly object: unknown;
}

export interface WatchHandlers {
  /** Called for every event line, in order. */
  event(event: WatchEvent): void;
  /** Called once: without an error when the server ended the watch, with one when it failed or answered non-200. */
  end(failure?: { readonly status?: number; readonly message: string }): void;
}

export interface WatchOptions {
  /** The server ends the watch after this long (client-go picks 5-10 minutes at random). */
  readonly timeoutSeconds: number;
  /** No byte for this long (not even a bookmark) means a dead connection. */
  readonly idleMs: number;
}

export function openWatch(
  endpoint: ApiEndpoint,
  path: string,
  handlers: WatchHandlers,
  options: WatchOptions,
): { close(): void } {
  const query = `watch=1&allowWatchBookmarks=true&timeoutSeconds=${options.timeoutSeconds}`;
  let ended = false;
  const finish = (failure?: { status?: number; message: string }): void => {
    if (ended) return;
    ended = true;
    req.destroy();
    handlers.end(failure);
  };
  const req: ClientRequest = getStream(
    endpoint,
    `${path}${path.includes('?') ? '&' : '?'}${query}`,
    'application/json',
    options.idleMs,
    {
      response: (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += text.length < 2000 ? chunk : ''));
          res.on('end', () =>
            finish({ status: res.statusCode ?? 0, message: `HTTP ${res.statusCode}: ${text.slice(0, 300)}` }),
          );
          res.on('error', (err) => finish({ message: err.message }));
          return;
        }
        res.setEncoding('utf8');
        let buffered = '';
        res.on('data', (chunk: string) => {
          let start = 0;
          buffered += chunk;
          // Scan only the new text for line ends: a 1 MB IPPool arrives in many chunks.
          for (
            let nl = buffered.indexOf('\n', buffered.length - chunk.length);
            nl >= 0;
            nl = buffered.indexOf('\n', nl + 1)
          ) {
            const line = buffered.slice(start, nl);
            start = nl + 1;
            if (line.trim() === '') continue;
            let event: WatchEvent;
            try {
              event = JSON.parse(line) as WatchEvent;
            } catch {
              return finish({ message: `undecodable watch event: ${line.slice(0, 200)}` });
            }
            if (ended) return;
            handlers.event(event);
          }
          buffered = buffered.slice(start);
        });
        res.on('end', () => finish());
        res.on('error', (err) => finish({ message: err.message }));
      },
      failed: (message) => finish({ message }),
    },
  );
  return { close: () => finish() };
}
