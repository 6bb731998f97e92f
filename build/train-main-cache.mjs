// Run by the embedded Node at build time (a code cache is only valid for the V8 build and flags that made it):
//   node build/train-main-cache.mjs dist/hereabouts.cjs dist/hereabouts.cache
// Compiles the bundle exactly as build/main-loader.cjs does, runs the CNI verbs the plugin serves on every pod start
// (VERSION, ADD, a repeated ADD, CHECK, DEL, GC, STATUS, a config error) against a temporary local store, and saves
// the code cache of everything that ran.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { compileMain, runMain } = createRequire(import.meta.url)('./main-loader.cjs');
const [bundleFile, cacheFile] = process.argv.slice(2);
if (bundleFile === undefined || cacheFile === undefined)
  throw new Error('usage: train-main-cache.mjs <bundle> <cache>');

const work = mkdtempSync(join(tmpdir(), 'hereabouts-train-'));
const conf = (cniVersion, extra = {}) => ({
  cniVersion,
  name: 'train',
  type: 'bridge',
  ipam: {
    type: 'hereabouts',
    datastore: 'local',
    data_dir: join(work, 'data'),
    range: '10.250.0.0/24',
    gateway: '10.250.0.1',
  },
  ...extra,
});
const runs = [
  ['VERSION', { cniVersion: '1.0.0' }],
  ['ADD', conf('1.0.0')],
  ['ADD', conf('1.0.0')],
  ['CHECK', conf('1.0.0', { prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.250.0.2/24' }] } })],
  ['DEL', conf('1.0.0')],
  ['GC', conf('1.1.0', { 'cni.dev/valid-attachments': [] })],
  ['STATUS', conf('1.1.0')],
  ['ADD', { cniVersion: '1.0.0', name: 'train', ipam: { type: 'hereabouts', range: 'not-a-cidr' } }],
];

const script = compileMain(readFileSync(bundleFile, 'utf8'), undefined);
// The config-error run logs to stderr on purpose; the build treats any stderr as a failure, so fd 2 goes nowhere.
closeSync(2);
if (openSync('/dev/null', 'w') !== 2) throw new Error('could not silence fd 2');
try {
  for (const [verb, request] of runs) {
    // The plugin reads fd 0 and writes fd 1: point fd 0 at this request (the lowest free descriptor is reused).
    const input = join(work, 'request.json');
    writeFileSync(input, JSON.stringify(request));
    closeSync(0);
    if (openSync(input, 'r') !== 0) throw new Error('could not put the request on fd 0');
    // HEREABOUTS_ALLOWED_DIRS: the runtime's trust policy admits the temporary data_dir (it allows only /var/lib/cni).
    // HEREABOUTS_AGENT_SOCKET '': in-process, even on a build machine whose own node agent listens on the default socket.
    Object.assign(process.env, {
      HEREABOUTS_AGENT_SOCKET: '',
      HEREABOUTS_ALLOWED_DIRS: work,
      CNI_COMMAND: verb,
      CNI_CONTAINERID: 'training',
      CNI_NETNS: '/proc/self/ns/net',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/opt/cni/bin',
      CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=train;K8S_POD_NAME=pod',
    });
    process.argv = [process.execPath];
    runMain(script, bundleFile);
    await new Promise((resolve) => setTimeout(resolve, 150)); // each verb finishes in a few ms
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = 0; // the config-error run set 1 on purpose
writeFileSync(cacheFile, script.createCachedData());
