// `hereabouts install`: the DaemonSet's job on each node. Copies this executable into the host's CNI bin dir and
// writes hereabouts.d/ (token, kubeconfig, flat config, nodename), then keeps the token and CA fresh until SIGTERM.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../store/local/atomic-write.ts';
import { apiServerUrl, FILES, renderFlatConfig, renderKubeconfig, type ServiceAccount } from './host-files.ts';

export interface InstallOptions {
  /** The executable to install (process.execPath of the packaged binary). */
  readonly binary: string;
  /** Host CNI bin dir as mounted in the pod, e.g. /host/opt/cni/bin. */
  readonly cniBinDir: string;
  /** Host CNI config dir as mounted in the pod, e.g. /host/etc/cni/net.d. */
  readonly cniConfDir: string;
  /** The same config dir as the host sees it (paths inside the kubeconfig and flat file). */
  readonly hostCniConfDir: string;
  readonly serviceAccountDir: string;
  readonly apiHost: string;
  readonly apiPort: string;
  readonly nodeName?: string;
  /** Also install the executable as `whereabouts` (drop-in for NADs that keep "type": "whereabouts"). */
  readonly whereaboutsName: boolean;
  readonly log: (msg: string) => void;
}

const SECRET_MODE = 0o600;

export function installBinary(options: InstallOptions): void {
  for (const name of ['hereabouts', ...(options.whereaboutsName ? ['whereabouts'] : [])]) {
    const target = join(options.cniBinDir, name);
    const temp = join(options.cniBinDir, `.${name}.tmp-${process.pid}`);
    copyFileSync(options.binary, temp);
    chmodSync(temp, 0o755);
    renameSync(temp, target); // kubelet never execs a half-copied plugin
    options.log(`installed ${target}`);
  }
}

export function readServiceAccount(dir: string): ServiceAccount {
  return {
    token: readFileSync(join(dir, 'token'), 'utf8').trim(),
    ca: readFileSync(join(dir, 'ca.crt')),
    namespace: readFileSync(join(dir, 'namespace'), 'utf8').trim(),
  };
}

/** Writes every config file; returns a fingerprint of what the service account held, to notice rotations. */
export function writeConfig(options: InstallOptions): string {
  const sa = readServiceAccount(options.serviceAccountDir);
  const dir = join(options.cniConfDir, 'hereabouts.d');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const layout = { hostConfigDir: join(options.hostCniConfDir, 'hereabouts.d') };
  writeFileAtomic(join(dir, FILES.token), `${sa.token}\n`, { mode: SECRET_MODE });
  writeFileAtomic(join(dir, FILES.kubeconfig), renderKubeconfig(apiServerUrl(options.apiHost, options.apiPort), sa, layout), { mode: SECRET_MODE });
  writeFileAtomic(join(dir, FILES.flat), renderFlatConfig(layout), { mode: SECRET_MODE });
  if (options.nodeName !== undefined && options.nodeName !== '') {
    writeFileAtomic(join(dir, FILES.nodename), `${options.nodeName}\n`, { mode: SECRET_MODE });
  } else {
    options.log('warning: NODENAME is not set; the plugin falls back to the host name');
  }
  return fingerprint(sa);
}

export function fingerprint(sa: ServiceAccount): string {
  return `${sa.token}\u0000${sa.ca.toString('base64')}\u0000${sa.namespace}`;
}
