// What the installer puts on the host: the executable in the CNI bin dir, and in the CNI config dir's
// hereabouts.d/ the service-account token, a kubeconfig that reads it, the flat config and the nodename file.
// Pure rendering here (tested), the writing in install.ts.

export interface ServiceAccount {
  readonly token: string;
  readonly ca: Buffer;
  readonly namespace: string;
}

export interface HostLayout {
  /** hereabouts.d as the host (and so the plugin) sees it, e.g. /etc/cni/net.d/hereabouts.d. */
  readonly hostConfigDir: string;
}

export const FILES = {
  token: 'token',
  kubeconfig: 'hereabouts.kubeconfig',
  flat: 'hereabouts.conf',
  nodename: 'nodename',
} as const;

/** https://host:port, IPv6 hosts in brackets (as a URL needs them). */
export function apiServerUrl(host: string, port: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  return `https://${bare.includes(':') ? `[${bare}]` : bare}:${port}`;
}

/**
 * The kubeconfig refers to the token file instead of embedding the token: projected service-account tokens rotate
 * (hourly by default) and the plugin re-reads the file on every call, so a rotation rewrites one small file and
 * never a kubeconfig that a CNI call might be reading.
 */
export function renderKubeconfig(server: string, sa: ServiceAccount, layout: HostLayout): string {
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': sa.ca.toString('base64') } }],
      users: [{ name: 'hereabouts', user: { tokenFile: `${layout.hostConfigDir}/${FILES.token}` } }],
      contexts: [{ name: 'hereabouts', context: { cluster: 'local', user: 'hereabouts', namespace: sa.namespace } }],
      'current-context': 'hereabouts',
    },
    null,
    2,
  )}\n`;
}

/** The flat file: fills what a NetworkAttachmentDefinition leaves unset (whereabouts.conf-compatible keys). */
export function renderFlatConfig(layout: HostLayout, extra: Readonly<Record<string, unknown>> = {}): string {
  return `${JSON.stringify({ datastore: 'kubernetes', kubernetes: { kubeconfig: `${layout.hostConfigDir}/${FILES.kubeconfig}` }, ...extra }, null, 2)}\n`;
}
