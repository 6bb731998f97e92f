// Entry of `hereabouts install` (the DaemonSet container): install once, then re-write the config whenever the
// service-account token or CA changes, until SIGTERM.
import { parseArgs } from 'node:util';
import { fingerprint, installBinary, readServiceAccount, writeConfig, type InstallOptions } from './install.ts';

const usage = `Usage: hereabouts install [flags]
  --cni-bin-dir DIR        host CNI bin dir as mounted here (default /host/opt/cni/bin)
  --cni-conf-dir DIR       host CNI config dir as mounted here (default /host/etc/cni/net.d)
  --host-cni-conf-dir DIR  the same dir as the host sees it (default /etc/cni/net.d)
  --service-account-dir D  (default /var/run/secrets/kubernetes.io/serviceaccount)
  --whereabouts-name       also install the executable as "whereabouts"
  --poll-interval SECONDS  how often to look for a rotated token or CA (default 10)
  --once                   install and exit (init-container style)
  Environment: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, NODENAME (downward API spec.nodeName).
`;

export async function runInstall(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'cni-bin-dir': { type: 'string', default: '/host/opt/cni/bin' },
      'cni-conf-dir': { type: 'string', default: '/host/etc/cni/net.d' },
      'host-cni-conf-dir': { type: 'string', default: '/etc/cni/net.d' },
      'service-account-dir': { type: 'string', default: '/var/run/secrets/kubernetes.io/serviceaccount' },
      'whereabouts-name': { type: 'boolean', default: false },
      'poll-interval': { type: 'string', default: '10' },
      once: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const intervalMs = Number(values['poll-interval']) * 1000;
  const apiHost = process.env['KUBERNETES_SERVICE_HOST'];
  if (!(intervalMs > 0) || apiHost === undefined || apiHost === '') {
    process.stderr.write(`hereabouts install: ${apiHost ? `--poll-interval ${values['poll-interval']} must be a positive number` : 'KUBERNETES_SERVICE_HOST is not set (run in a pod)'}\n`);
    return 2;
  }
  const log = (msg: string): void => void process.stderr.write(`${new Date().toISOString()} install: ${msg}\n`);
  const options: InstallOptions = {
    binary: process.execPath,
    cniBinDir: values['cni-bin-dir'],
    cniConfDir: values['cni-conf-dir'],
    hostCniConfDir: values['host-cni-conf-dir'],
    serviceAccountDir: values['service-account-dir'],
    apiHost,
    apiPort: process.env['KUBERNETES_SERVICE_PORT'] ?? '443',
    ...(process.env['NODENAME'] === undefined ? {} : { nodeName: process.env['NODENAME'] }),
    whereaboutsName: values['whereabouts-name'],
    log,
  };
  installBinary(options);
  let written = writeConfig(options);
  log('wrote hereabouts.d (token, kubeconfig, flat config, nodename)');
  if (values.once) return 0;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      try {
        if (fingerprint(readServiceAccount(options.serviceAccountDir)) === written) return;
        written = writeConfig(options);
        log('service-account token or CA changed: rewrote hereabouts.d');
      } catch (err) {
        log(`cannot refresh hereabouts.d: ${(err as Error).message}`); // kept trying: a projected volume may be mid-update
      }
    }, intervalMs);
    process.once('SIGTERM', () => {
      clearInterval(timer);
      log('SIGTERM: exiting');
      resolve(0);
    });
  });
}
