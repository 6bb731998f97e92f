// Watches pods so that cleanup follows a pod deletion within seconds instead of at the next full pass. Only the
// event type matters here (the pass re-reads what it needs), so nothing of the pods is kept in memory.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ApiEndpoint } from '../store/kubernetes/kubeconfig.ts';

export interface PodWatch {
  stop(): void;
}

export function watchPodDeletions(endpoint: ApiEndpoint, onDeleted: () => void, log: (msg: string) => void): PodWatch {
  let stopped = false;
  let current: { destroy(): void } | undefined;
  let resourceVersion = '';

  const get = (path: string, onResponse: (res: IncomingMessage) => void, onFailure: (why: string) => void): void => {
    const url = new URL(endpoint.server + path);
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const base = endpoint.requestOptions;
    const req = send(url, { ...base, method: 'GET', headers: { ...(base.headers as Record<string, string>), Accept: 'application/json' } }, onResponse);
    req.on('error', (err) => onFailure(err.message));
    req.end();
    current = req;
  };

  const retry = (why: string): void => {
    if (stopped) return;
    log(`pod watch: ${why}; restarting`);
    setTimeout(start, 1000).unref();
  };

  const watch = (): void => {
    get(`/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=${encodeURIComponent(resourceVersion)}`, (res) => {
      if (res.statusCode !== 200) return retry(`HTTP ${res.statusCode}`);
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (line.trim() === '') continue;
          const event = JSON.parse(line) as { type?: string; object?: { metadata?: { resourceVersion?: string }; code?: number } };
          if (event.type === 'ERROR') {
            resourceVersion = ''; // 410 Gone: the version is too old; start from a fresh list
            continue;
          }
          resourceVersion = event.object?.metadata?.resourceVersion ?? resourceVersion;
          if (event.type === 'DELETED') onDeleted();
        }
      });
      res.on('end', () => (resourceVersion === '' ? retry('watch expired') : stopped || watch()));
      res.on('error', (err) => retry(err.message));
    }, retry);
  };

  const start = (): void => {
    if (stopped) return;
    // The current version from a one-item list: the watch then reports only what happens from now on.
    get('/api/v1/pods?limit=1', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) return retry(`list HTTP ${res.statusCode}`);
        resourceVersion = (JSON.parse(body) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion ?? '';
        watch();
      });
    }, retry);
  };

  start();
  return {
    stop() {
      stopped = true;
      current?.destroy();
    },
  };
}
