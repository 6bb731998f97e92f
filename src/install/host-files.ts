// What the installer keeps in the host's CNI config dir: hereabouts.d/ with the service-account token, a kubeconfig
// that reads it, the flat config and the nodename file (and, on request, Whereabouts' kubeconfig path). Pure: the
// desired files are computed here (tested through the installer), written by config-files.ts.
import { join } from 'node:path';

export interface ServiceAccount {
  readonly token: string;
  readonly ca: Buffer;
  readonly namespace: string;
}

export const FILES = {
  token: 'token',
  kubeconfig: 'hereabouts.kubeconfig',
  flat: 'hereabouts.conf',
  nodename: 'nodename',
} as const;

/** Whereabouts' kubeconfig, named inline by many NetworkAttachmentDefinitions (`kubernetes.kubeconfig`). */
export const WHEREABOUTS_KUBECONFIG = join('whereabouts.d', 'whereabouts.kubeconfig');

export interface HostFilesOptions {
  /** The CNI config dir as mounted in this container (where files are written). */
  readonly confDir: string;
  /** The same dir as the host, and so the plugin, sees it (the paths written inside the files). */
  readonly hostConfDir: string;
  /** https://host:port of the API server. */
  readonly server: string;
  readonly nodeName?: string;
  /** The kubeconfig context's namespace, where the plugin keeps its pools (default: the service account's). */
  readonly namespace?: string;
  /** Keys added to the flat file (log_level, log_file). */
  readonly flatExtra: Readonly<Record<string, string>>;
  /** Also keep whereabouts.d/whereabouts.kubeconfig (same content): see docs/migration.md. */
  readonly whereaboutsKubeconfig: boolean;
}

export interface DesiredFile {
  /** Where it is written (under confDir). */
  readonly path: string;
  readonly content: string;
}

/** https://host:port, IPv6 hosts in brackets (as a URL needs them; KUBERNETES_SERVICE_HOST has none). */
export function desiredFiles(sa: ServiceAccount, options: HostFilesOptions): DesiredFile[] {
  const dir = join(options.confDir, 'hereabouts.d');
  const hostDir = join(options.hostConfDir, 'hereabouts.d');
  const context = { ...sa, namespace: options.namespace ?? sa.namespace };
  const kubeconfig = renderKubeconfig(options.server, context, join(hostDir, FILES.token));
  const files: DesiredFile[] = [
    { path: join(dir, FILES.token), content: sa.token },
    { path: join(dir, FILES.kubeconfig), content: kubeconfig },
    { path: join(dir, FILES.flat), content: renderFlatConfig(join(hostDir, FILES.kubeconfig), options.flatExtra) },
  ];
  if (options.nodeName !== undefined) files.push({ path: join(dir, FILES.nodename), content: `${options.nodeName}\n` });
  if (options.whereaboutsKubeconfig)
    files.push({ path: join(options.confDir, WHEREABOUTS_KUBECONFIG), content: kubeconfig });
  return files;
}

/**
 * The kubeconfig refers to the token file instead of embedding the token: projected service-account tokens rotate
 * (kubelet renews them at 80 % of their lifetime, hourly by default) and the plugin reads the file on every call, so
 * a rotation replaces one small file. The CA is embedded: it changes rarely, and the installer rewrites the
 * kubeconfig when it does. The context's namespace (--namespace, else the installer pod's) is where the plugin keeps
 * its pools.
 */
export function renderKubeconfig(server: string, sa: ServiceAccount, tokenFile: string): string {
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': sa.ca.toString('base64') } }],
      users: [{ name: 'hereabouts', user: { tokenFile } }],
      contexts: [{ name: 'hereabouts', context: { cluster: 'local', user: 'hereabouts', namespace: sa.namespace } }],
      'current-context': 'hereabouts',
    },
    null,
    2,
  )}\n`;
}

/** The flat file: fills what a NetworkAttachmentDefinition leaves unset (whereabouts.conf keys). */
export function renderFlatConfig(kubeconfig: string, extra: Readonly<Record<string, string>> = {}): string {
  return `${JSON.stringify({ datastore: 'kubernetes', kubernetes: { kubeconfig }, ...extra }, null, 2)}\n`;
}
