// On a connection-cache miss (endpoint-cache.ts): where each piece of a resolved endpoint came from, so that later
// processes can rebuild it without the Kubernetes client. Undefined for whatever a recipe must not or cannot
// express: exec plugins and auth providers (their credentials are minted at run time), basic auth, impersonation,
// proxies, or a current context without a cluster or user. The caller checks that the recipe rebuilds exactly the
// endpoint kubeconfig.ts resolved, so a mistake here costs a cache miss, never a different connection.
import { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Material, Recipe } from './endpoint-cache.ts';
import { withTokenFiles, type ApiEndpoint } from './kubeconfig.ts';

export function recipeOf(text: string, path: string, endpoint: ApiEndpoint): Recipe | undefined {
  const baseDir = dirname(resolve(path));
  const kc = new KubeConfig();
  try {
    kc.loadFromString(withTokenFiles(text, baseDir));
    kc.makePathsAbsolute(baseDir);
  } catch {
    return undefined;
  }
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (cluster === null || user === null || cluster.proxyUrl !== undefined) return undefined;
  // Parsed YAML: a field may be null whatever the client's types say.
  if (isSet(user.exec) || isSet(user.authProvider) || isSet(user.impersonateUser)) return undefined;
  if (user.username !== undefined || user.password !== undefined) return undefined;
  const material = (file: string | undefined, data: string | undefined): Material | undefined =>
    file !== undefined && file !== '' ? { file } : data !== undefined && data !== '' ? { data } : undefined;
  const ca = material(cluster.caFile, cluster.caData);
  const cert = material(user.certFile, user.certData);
  const key = material(user.keyFile, user.keyData);
  let auth: Recipe['auth'];
  if (user.token !== undefined && user.token !== '') {
    // client-node inlines a token file's content into `token`: find which file it was, so the file is read anew.
    const files = tokenFiles(withTokenFiles(text, baseDir));
    const from = files.filter((f) => readQuietly(f) === user.token);
    if (from.length > 1 || (from.length === 0 && files.length > 0 && !inlineToken(text))) return undefined;
    auth = from[0] !== undefined ? { tokenFile: from[0] } : { token: user.token };
  }
  return {
    server: endpoint.server,
    namespace: endpoint.namespace,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(cluster.skipTLSVerify ? { insecure: true as const } : {}),
    ...(cluster.tlsServerName === undefined || cluster.tlsServerName === ''
      ? {}
      : { servername: cluster.tlsServerName }),
    ...(auth === undefined ? {} : { auth }),
  };
}

/** The absolute `token-file` paths of a kubeconfig already passed through withTokenFiles(). */
function tokenFiles(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/token-file["']?\s*:\s*("(?:[^"\\\n]|\\.)*")/g))
    out.push(String(JSON.parse(m[1] ?? '""')));
  return out;
}

function inlineToken(text: string): boolean {
  return /(^|[\s{,])["']?token["']?\s*:/m.test(text);
}

function readQuietly(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}
