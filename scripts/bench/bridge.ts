// `npm run bench`: what a pod pays for hereabouts. Measured side by side in one run (cases interleaved):
//   - ADD+DEL through Debian's bridge plugin (in namespaces of ours) with hereabouts vs with host-local (as root);
//   - hereabouts ADD+DEL called directly vs two bare starts of the same Node runtime (`node -e 0`), which gives
//     our time per call above the runtime's own start-up (target <= 5 ms).
// Usage: node scripts/bench/bridge.ts [--runs N] [--warmup N]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { debianCniDir, embeddedNode, requireBinary } from '../../test/support/paths.ts';
import { measure, type Case, type Command, type Summary } from './measure.ts';

const { values: flags } = parseArgs({
  options: { runs: { type: 'string', default: '40' }, warmup: { type: 'string', default: '3' } },
});
const runs = Number(flags.runs);
const warmup = Number(flags.warmup);
if (!Number.isInteger(runs) || runs < 10) throw new RangeError(`--runs ${flags.runs}: need an integer >= 10`);

const bin = requireBinary();
const work = mkdtempSync(join(tmpdir(), 'hereabouts-bench-'));
const binDir = join(work, 'bin');
mkdirSync(binDir);
symlinkSync(bin, join(binDir, 'hereabouts'));
const namespaces: string[] = [];
const asRoot = process.getuid?.() === 0;

function netns(name: string): string {
  execFileSync('ip', ['netns', 'add', name]);
  namespaces.push(name);
  return `/var/run/netns/${name}`;
}

function cniEnv(command: string, netnsPath: string): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'bench',
    CNI_NETNS: netnsPath,
    CNI_IFNAME: 'eth0',
    CNI_PATH: `${binDir}:${debianCniDir}`,
    CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=pod',
  };
}

/** One sample = ADD then DEL of the same attachment, so the pool never grows. */
function addDel(label: string, file: string, args: string[], netnsPath: string, conf: object): Case {
  const input = JSON.stringify(conf);
  return {
    label,
    sample: (): Command[] => ['ADD', 'DEL'].map((command) => ({ file, args, env: cniEnv(command, netnsPath), input })),
  };
}

function row(s: Summary, base?: Summary): string {
  const ratio = base === undefined ? '' : `  ${(s.median / base.median).toFixed(2)}x`;
  return `${s.label.padEnd(46)} median ${s.median.toFixed(2).padStart(7)} ms  (p10 ${s.p10.toFixed(2)}, p90 ${s.p90.toFixed(2)})${ratio}`;
}

function main(): void {
  const dataDir = join(work, 'data');
  const cases: Case[] = [];
  const nodeTwice: Case = {
    label: 'node -e 0, twice (embedded Node)',
    sample: () => [0, 1].map(() => ({ file: embeddedNode, args: ['-e', '0'] })),
  };
  const direct = addDel('hereabouts ADD+DEL, direct', bin, [], '/var/run/netns/none', {
    cniVersion: '1.0.0',
    name: 'bench-direct',
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.77.0.0/16' },
  });
  const hostLocalDirect = addDel(
    'host-local ADD+DEL, direct',
    join(debianCniDir, 'host-local'),
    [],
    '/var/run/netns/none',
    {
      cniVersion: '1.0.0',
      name: 'bench-hl',
      type: 'bridge',
      ipam: { type: 'host-local', ranges: [[{ subnet: '10.78.0.0/16' }]], dataDir: join(work, 'hl') },
    },
  );
  cases.push(nodeTwice, direct, hostLocalDirect);

  if (asRoot) {
    netns('hab-bench-host');
    const podA = netns('hab-bench-a');
    const podB = netns('hab-bench-b');
    const bridge = (name: string, br: string, ipam: object): object => ({
      cniVersion: '1.0.0',
      name,
      type: 'bridge',
      bridge: br,
      ipMasq: false,
      ipam,
    });
    cases.push(
      addDel(
        'bridge + hereabouts ADD+DEL',
        'ip',
        ['netns', 'exec', 'hab-bench-host', join(debianCniDir, 'bridge')],
        podA,
        bridge('bench-br-hab', 'habbench0', {
          type: 'hereabouts',
          datastore: 'local',
          data_dir: dataDir,
          range: '10.79.0.0/16',
        }),
      ),
      addDel(
        'bridge + host-local ADD+DEL',
        'ip',
        ['netns', 'exec', 'hab-bench-host', join(debianCniDir, 'bridge')],
        podB,
        bridge('bench-br-hl', 'habbench1', {
          type: 'host-local',
          ranges: [[{ subnet: '10.80.0.0/16' }]],
          dataDir: join(work, 'hl2'),
        }),
      ),
    );
  } else {
    console.log('not root: bridge cases skipped (they need network namespaces)');
  }

  console.log(`${runs} samples per case (after ${warmup} warm-up), cases interleaved\n`);
  const results = measure(cases, { runs, warmup });
  const [node2, ours, hostLocal, brOurs, brHostLocal] = results;
  console.log(row(node2!));
  console.log(row(ours!, node2));
  console.log(row(hostLocal!, node2));
  if (brOurs !== undefined && brHostLocal !== undefined) {
    console.log(row(brOurs, brHostLocal));
    console.log(row(brHostLocal));
    console.log(`\nbridge ADD+DEL, hereabouts / host-local: ${(brOurs.median / brHostLocal.median).toFixed(2)}x`);
  }
  const overhead = (ours!.median - node2!.median) / 2;
  console.log(`hereabouts per call above the bare Node start: ${overhead.toFixed(2)} ms (target <= 5 ms)`);
  console.log(`host-local per call: ${(hostLocal!.median / 2).toFixed(2)} ms`);
}

try {
  main();
} finally {
  for (const name of namespaces.reverse()) execFileSync('ip', ['netns', 'delete', name]);
  rmSync(work, { recursive: true, force: true });
}
