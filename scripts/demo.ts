// Walks through ADD, CHECK, idempotent re-ADD and DEL on the local store and prints what happened.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../test/support/cni.ts';
import { readForwarding, restoreForwarding } from '../test/support/host-sysctls.ts';
import { debianCniDir, requireBinary } from '../test/support/paths.ts';

const bin = requireBinary();
const work = mkdtempSync(join(tmpdir(), 'hereabouts-demo-'));
const dataDir = join(work, 'data');
const binDir = join(work, 'bin');
mkdirSync(binDir);
symlinkSync(bin, join(binDir, 'hereabouts'));
const asRoot = process.getuid?.() === 0 && existsSync(join(debianCniDir, 'bridge'));
const namespaces: string[] = [];
// The bridge plugin runs in hab-demo-host, a namespace of ours: `isGateway` turns forwarding on there, not on this
// machine. Should that ever change, what this machine had is put back on the way out (and the demo says so).
const forwarding = asRoot ? readForwarding() : undefined;
/** Set by Ctrl-C (or SIGTERM, SIGHUP): the demo stops after the plugin call under way, then cleans up. */
let interrupted: NodeJS.Signals | undefined;
class Interrupted extends Error {}

const ipam = {
  type: 'hereabouts',
  datastore: 'local',
  data_dir: dataDir,
  range: '10.123.0.0/24',
  exclude: ['10.123.0.0/28'],
  gateway: '10.123.0.1',
};
const conf = asRoot
  ? { cniVersion: '1.0.0', name: 'demo', type: 'bridge', bridge: 'habdemo0', isGateway: true, ipMasq: false, ipam }
  : { cniVersion: '1.0.0', name: 'demo', type: 'bridge', ipam };

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

function netns(name: string): string {
  ip('netns', 'add', name);
  namespaces.push(name);
  return `/var/run/netns/${name}`;
}

async function cni(
  command: 'ADD' | 'CHECK' | 'DEL',
  containerId: string,
  pod: string,
  ns: string,
  extra: object = {},
): Promise<CniOutcome> {
  const call = {
    command,
    containerId,
    netns: ns,
    ifname: 'eth0',
    path: `${binDir}:${debianCniDir}`,
    args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=${pod}`,
  };
  const out = asRoot
    ? await runCni(join(debianCniDir, 'bridge'), call, { ...conf, ...extra }, { inNetns: 'hab-demo-host' })
    : await runCni(bin, call, { ...conf, ...extra });
  if (interrupted !== undefined) throw new Interrupted();
  const status = out.code === 0 ? 'ok' : `FAILED (exit ${out.code})`;
  console.log(`${command.padEnd(5)} ${pod.padEnd(6)} container ${containerId.padEnd(10)} ${status} ${summarise(out)}`);
  if (out.code !== 0) throw new Error(out.stdout + out.stderr);
  return out;
}

function summarise(out: CniOutcome): string {
  const ips = out.json?.['ips'] as Array<{ address: string }> | undefined;
  return ips === undefined ? '' : `-> ${ips.map((i) => i.address).join(', ')}`;
}

function showStore(): void {
  for (const network of readdirSync(dataDir)) {
    for (const file of readdirSync(join(dataDir, network))) {
      if (!file.endsWith('.json')) continue;
      const pool = JSON.parse(readFileSync(join(dataDir, network, file), 'utf8')) as {
        range: string;
        allocations: Record<string, { podref: string; id: string }>;
      };
      const rows = Object.entries(pool.allocations).map(([off, a]) => `offset ${off} -> ${a.podref} (${a.id})`);
      console.log(
        `      store ${network}/${file}: ${pool.range}, ${rows.length} allocation(s)${rows.length ? ': ' + rows.join('; ') : ''}`,
      );
    }
  }
}

async function main(): Promise<void> {
  console.log(`hereabouts demo: ${execFileSync(bin, ['version'], { encoding: 'utf8' }).trim()}`);
  console.log(
    asRoot
      ? 'mode: root, Debian bridge plugin in network namespaces\n'
      : 'mode: not root, calling the plugin directly\n',
  );
  if (asRoot) {
    netns('hab-demo-host');
    ip('-n', 'hab-demo-host', 'link', 'set', 'lo', 'up');
  }
  const nsA = asRoot ? netns('hab-demo-a') : '/var/run/netns/demo-a';
  const nsB = asRoot ? netns('hab-demo-b') : '/var/run/netns/demo-b';
  const a = await cni('ADD', 'ctr-a1', 'web-a', nsA);
  await cni('ADD', 'ctr-b1', 'web-b', nsB);
  showStore();
  if (asRoot) {
    console.log(`      inside hab-demo-a: ${ip('-n', 'hab-demo-a', '-br', 'addr', 'show', 'dev', 'eth0').trim()}`);
    const target = (readFirstIp(a) ?? '').split('/')[0] ?? '';
    execFileSync('ip', ['netns', 'exec', 'hab-demo-b', 'ping', '-c', '1', '-W', '2', target], { stdio: 'ignore' });
    console.log(`      ping from hab-demo-b to ${target}: ok`);
  }
  await cni('CHECK', 'ctr-a1', 'web-a', nsA, { prevResult: a.json });
  if (!asRoot) await cni('ADD', 'ctr-a2', 'web-a', nsA); // a re-created sandbox of the same pod: same address
  await cni('DEL', 'ctr-a1', 'web-a', nsA);
  await cni('DEL', 'ctr-b1', 'web-b', nsB);
  if (!asRoot) await cni('DEL', 'ctr-a2', 'web-a', nsA);
  showStore();
  console.log('\ndemo finished: addresses allocated, checked and released');
}

function readFirstIp(out: CniOutcome): string | undefined {
  return (out.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;
}

let cleanedUp = false;
/** Leaves the machine as the demo found it: on success, on failure and on Ctrl-C alike. */
function cleanUp(): void {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const name of namespaces.reverse()) {
    try {
      ip('netns', 'delete', name);
    } catch {
      // already gone
    }
  }
  rmSync(work, { recursive: true, force: true });
  const changed = forwarding === undefined ? [] : restoreForwarding(forwarding);
  if (changed.length > 0) console.error(`demo: put back this machine's forwarding sysctls: ${changed.join(', ')}`);
}

// A plugin call under way finishes first (a runtime's Ctrl-C reaches it too), so that nothing writes into what
// cleanUp() removes; a second signal stops at once.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (interrupted === undefined) {
      interrupted = signal;
      return;
    }
    cleanUp();
    process.exit(128 + constants.signals[signal]);
  });
}

try {
  await main();
} catch (err) {
  // A Ctrl-C during a synchronous step (ip, the version call) kills that child before our handler runs.
  const signal = (err as { signal?: unknown }).signal;
  if (interrupted === undefined && (signal === 'SIGINT' || signal === 'SIGTERM' || signal === 'SIGHUP'))
    interrupted = signal;
  if (!(err instanceof Interrupted) && interrupted === undefined) throw err;
} finally {
  cleanUp();
}
if (interrupted !== undefined) {
  console.error(`demo interrupted (${interrupted}): network namespaces and files removed`);
  process.exit(128 + constants.signals[interrupted]);
}
