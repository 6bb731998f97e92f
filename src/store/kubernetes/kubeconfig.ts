// The API endpoint and credentials of `kubernetes.kubeconfig`, through @kubernetes/client-node's KubeConfig (auth
// providers, exec plugins, client certificates, proxies). KubeConfig is the only name src/ takes from the client:
// the executable's client bundle keeps just what it needs (build/bundle.mjs), and the requests themselves go
// through node:https (api.ts). This module is reached only through the lazy import in src/store/open.ts.
import { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { dirname, isAbsolute, resolve } from 'node:path';
import { CniCode, CniError } from '../../cni/errors.ts';
import { messageOf } from '../local/fs-errors.ts';

/** Whereabouts' default when the current context names no namespace. */
export const DEFAULT_NAMESPACE = 'kube-system';

export interface ApiEndpoint {
  /** Base URL of the API server, without a trailing slash. */
  readonly server: string;
  /** The current context's namespace: where the IPPools, reservations and NodeSlicePools live. */
  readonly namespace: string;
  /** TLS material and the Authorization header, computed once per process (token files are read now). */
  readonly requestOptions: RequestOptions;
  /** The agent the requests go through; close() destroys it so the process can exit at once. */
  readonly agent: Agent;
}

/** Reads the kubeconfig; every failure is a CniError that names the file. */
export async function loadEndpoint(path: string): Promise<ApiEndpoint> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CniError(CniCode.InvalidNetworkConfig, `cannot read kubernetes.kubeconfig ${path}: ${messageOf(err)}`, {
      cause: err,
    });
  }
  return endpointFromText(text, dirname(resolve(path)), path);
}

/** The same from kubeconfig text; relative paths in it are taken from `baseDir`, errors name `label`. */
export async function endpointFromText(text: string, baseDir: string, label: string): Promise<ApiEndpoint> {
  const path = label;
  const kc = new KubeConfig();
  try {
    kc.loadFromString(withTokenFiles(text, baseDir));
    kc.makePathsAbsolute(baseDir);
  } catch (err) {
    throw new CniError(CniCode.InvalidNetworkConfig, `kubernetes.kubeconfig ${path} is invalid: ${messageOf(err)}`, {
      cause: err,
    });
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null || typeof cluster.server !== 'string' || cluster.server === '') {
    throw new CniError(
      CniCode.InvalidNetworkConfig,
      `kubernetes.kubeconfig ${path}: current context ${JSON.stringify(kc.currentContext ?? '')} names no cluster with a server`,
    );
  }
  const context = kc.getContextObject(kc.currentContext);
  const namespace = context?.namespace !== undefined && context.namespace !== '' ? context.namespace : DEFAULT_NAMESPACE;
  const requestOptions: RequestOptions = { headers: {} };
  try {
    await kc.applyToHTTPSOptions(requestOptions);
  } catch (err) {
    throw new CniError(CniCode.InvalidNetworkConfig, `kubernetes.kubeconfig ${path}: cannot load credentials: ${messageOf(err)}`, {
      cause: err,
    });
  }
  // Token files usually end in a newline; client-go trims it, client-node does not.
  const headers = requestOptions.headers as Record<string, unknown>;
  if (typeof headers['Authorization'] === 'string') headers['Authorization'] = headers['Authorization'].trim();
  const server = cluster.server.replace(/\/+$/, '');
  const agent = keepAliveAgent(requestOptions, { plainHttp: server.startsWith('http:'), proxied: Boolean(cluster.proxyUrl) });
  return { server, namespace, requestOptions: { ...requestOptions, agent }, agent };
}

/**
 * client-go spells a user's token file `tokenFile`; client-node 1.4 only reads `token-file`, and relative to the
 * working directory. Rewriting the key (with the path made absolute against the kubeconfig's directory, as
 * client-go does) makes rotated service-account tokens work either way: the file is read on every run.
 */
export function withTokenFiles(text: string, baseDir: string): string {
  const key = /(["']?)(tokenFile|token-file)\1(\s*:\s*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,}#]+)/g;
  return text.replace(key, (_match, quote: string, _name: string, colon: string, value: string) => {
    const raw = value.startsWith('"') ? String(JSON.parse(value)) : value.startsWith("'") ? value.slice(1, -1) : value;
    const absolute = isAbsolute(raw) ? raw : resolve(baseDir, raw);
    return `${quote}token-file${quote}${colon}${JSON.stringify(absolute)}`;
  });
}

/**
 * One keep-alive agent per process: an ADD with reservations makes two requests, and the second one then skips the
 * TLS handshake. Proxied and plain-HTTP clusters keep the agent client-node built for them.
 */
function keepAliveAgent(options: RequestOptions, how: { plainHttp: boolean; proxied: boolean }): Agent {
  if ((how.plainHttp || how.proxied) && typeof options.agent === 'object') return options.agent;
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
  return new HttpsAgent({
    keepAlive: true,
    maxSockets: 4,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(pfx === undefined ? {} : { pfx }),
    ...(passphrase === undefined ? {} : { passphrase }),
    ...(rejectUnauthorized === undefined ? {} : { rejectUnauthorized }),
    ...(servername === undefined ? {} : { servername }),
  });
}
