// The tenant's view of a node: a scratch "host" with a directory the operator allowed (HEREABOUTS_ALLOWED_DIRS, as a
// runtime's environment would set it) and host files outside it that a NetworkAttachmentDefinition must never reach.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniCall, type CniOutcome } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

export interface TenantNode {
  readonly root: string;
  /** Allowed for every use (config, data, log). */
  readonly allowed: string;
  /** Host files the tenant aims at. */
  readonly host: string;
  readonly dataDir: string;
  readonly env: Record<string, string>;
}

export const SECRET = 'S3CRET-HOST-CONTENT';

export function tenantNode(): TenantNode {
  const root = mkdtempSync(join(tmpdir(), 'hab-tenant-'));
  const allowed = join(root, 'allowed');
  const host = join(root, 'host');
  mkdirSync(allowed, { mode: 0o700 });
  mkdirSync(host, { mode: 0o700 });
  writeFileSync(join(host, 'shadow'), `root:$6$${SECRET}:19000:0:99999:7:::\n`);
  writeFileSync(join(host, 'authorized_keys'), 'ssh-ed25519 AAAA operator\n');
  return { root, allowed, host, dataDir: join(allowed, 'data'), env: { HEREABOUTS_ALLOWED_DIRS: allowed } };
}

export function conf(
  node: TenantNode,
  ipam: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'tenant-net',
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: node.dataDir, range: '10.77.0.0/24', ...ipam },
    ...extra,
  };
}

let seq = 0;
export function add(
  node: TenantNode,
  stdin: unknown,
  call: Partial<CniCall> = {},
  timeoutMs = 10_000,
): Promise<CniOutcome> {
  seq++;
  return runCni(
    requireBinary(),
    {
      command: 'ADD',
      containerId: `tenant${process.pid}x${seq}`,
      netns: '/var/run/netns/none',
      ifname: 'eth0',
      args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=t;K8S_POD_NAME=p',
      ...call,
    },
    stdin,
    { extraEnv: node.env, timeoutMs },
  );
}

/** Everything the plugin printed, to look for leaks. */
export function everything(out: CniOutcome): string {
  return `${out.stdout}\n${out.stderr}`;
}
