// The controller's API endpoint (from a kubeconfig, or in a cluster from the pod's service account). Its agent
// has no socket limit: six watches stay open for the life of the process, and the store's agent (four sockets,
// sized for a CNI call) would leave no socket for a single request.
import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions } from 'node:https';
import { endpointFromText, type ApiEndpoint, type KubeconfigOptions } from './kubeconfig.ts';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** https://host:port of the API server, from KUBERNETES_SERVICE_HOST/PORT (an IPv6 host in brackets). */
export function apiServerUrl(host: string, port: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  return `https://${bare.includes(':') ? `[${bare}]` : bare}:${port}`;
}

export interface ControllerEndpoint {
  readonly endpoint: ApiEndpoint;
  /** Reads the credentials again (a rotated service-account token, an exec plugin's fresh token). */
  readonly refreshCredentials: () => Promise<void>;
}

/** The endpoint `load` reads (a kubeconfig, or inClusterEndpoint()), and what reads its credentials again. */
export async function controllerEndpoint(load: () => Promise<ApiEndpoint>): Promise<ControllerEndpoint> {
  const endpoint = withOwnAgent(await load());
  // Every request takes its headers from this object, so replacing the Authorization in it reaches them all.
  const headers = (endpoint.requestOptions.headers ?? {}) as OutgoingHttpHeaders;
  return {
    endpoint: { ...endpoint, requestOptions: { ...endpoint.requestOptions, headers } },
    async refreshCredentials() {
      const fresh = await load();
      fresh.agent.destroy();
      const authorization = (fresh.requestOptions.headers as OutgoingHttpHeaders | undefined)?.['Authorization'];
      if (typeof authorization === 'string') headers['Authorization'] = authorization;
    },
  };
}

function withOwnAgent(endpoint: ApiEndpoint): ApiEndpoint {
  // A proxied or plain-HTTP cluster keeps the agent the client built for it (it has no socket limit of ours).
  if (!(endpoint.agent instanceof HttpsAgent) || !endpoint.server.startsWith('https:')) return endpoint;
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = endpoint.requestOptions;
  const tls: AgentOptions = { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername };
  const set = Object.fromEntries(Object.entries(tls).filter(([, value]) => value !== undefined)) as AgentOptions;
  const agent = new HttpsAgent({ keepAlive: true, ...set });
  endpoint.agent.destroy();
  return { ...endpoint, requestOptions: { ...endpoint.requestOptions, agent }, agent };
}

/** The in-cluster configuration client-go uses: service host and port from the environment, the mounted token. */
export async function inClusterEndpoint(
  options: KubeconfigOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<ApiEndpoint> {
  const host = env['KUBERNETES_SERVICE_HOST'];
  if (host === undefined || host === '') {
    throw new TypeError('not running in a cluster (KUBERNETES_SERVICE_HOST is unset)');
  }
  const namespace = readFileSync(`${SA_DIR}/namespace`, 'utf8').trim();
  const server = apiServerUrl(host, env['KUBERNETES_SERVICE_PORT'] ?? '443');
  // tokenFile: the kubelet rotates the projected token; the file is read again whenever the endpoint is.
  const text = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'in-cluster', cluster: { server, 'certificate-authority': `${SA_DIR}/ca.crt` } }],
    users: [{ name: 'sa', user: { tokenFile: `${SA_DIR}/token` } }],
    contexts: [{ name: 'in-cluster', context: { cluster: 'in-cluster', user: 'sa', namespace } }],
    'current-context': 'in-cluster',
  });
  return endpointFromText(text, SA_DIR, 'in-cluster service account', options);
}
