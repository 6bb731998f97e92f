// Every malformed request or config: a CNI error JSON on stdout with the right code, a non-zero exit, no stack
// trace anywhere, and nothing written to disk. Runs the packaged executable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniCall } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

interface Case {
  readonly name: string;
  readonly code: number;
  /** A fragment the message must contain (names the key or value at fault). */
  readonly msg?: RegExp;
  readonly env?: (base: Record<string, string>) => Record<string, string>;
  /** Receives the default config (and a scratch dir) and returns stdin (object or raw text). */
  readonly stdin?: (conf: Conf, scratch: string) => unknown;
}

type Conf = { cniVersion?: unknown; name?: unknown; type: string; ipam: Record<string, unknown>; [k: string]: unknown };

const ipam = (conf: Conf, patch: Record<string, unknown>): Conf => ({ ...conf, ipam: { ...conf.ipam, ...patch } });
const without = <T extends Record<string, unknown>>(obj: T, key: string): T =>
  Object.fromEntries(Object.entries(obj).filter(([k]) => k !== key)) as T;
const verb = (command: string) => (base: Record<string, string>) => ({ ...base, CNI_COMMAND: command });

const cases: Case[] = [
  { name: 'invalid JSON', code: 6, stdin: () => '{"cniVersion": "1.0.0",' },
  { name: 'empty stdin', code: 6, stdin: () => '' },
  { name: 'a JSON array instead of an object', code: 6, stdin: () => '[1,2,3]' },
  { name: 'stdin larger than 1 MiB', code: 6, stdin: (c) => JSON.stringify({ ...c, pad: 'x'.repeat(1_100_000) }) },
  { name: 'unknown CNI_COMMAND', code: 4, msg: /CNI_COMMAND/, env: verb('FROB') },
  { name: 'ADD without CNI_CONTAINERID', code: 4, msg: /CNI_CONTAINERID/, env: (b) => without(b, 'CNI_CONTAINERID') },
  { name: 'ADD without CNI_NETNS', code: 4, msg: /CNI_NETNS/, env: (b) => without(b, 'CNI_NETNS') },
  { name: 'ADD without CNI_IFNAME', code: 4, msg: /CNI_IFNAME/, env: (b) => without(b, 'CNI_IFNAME') },
  { name: 'CHECK without CNI_NETNS', code: 4, msg: /CNI_NETNS/, env: (b) => without(verb('CHECK')(b), 'CNI_NETNS') },
  {
    name: 'DEL without CNI_CONTAINERID',
    code: 4,
    msg: /CNI_CONTAINERID/,
    env: (b) => without(verb('DEL')(b), 'CNI_CONTAINERID'),
  },
  { name: 'DEL without CNI_IFNAME', code: 4, msg: /CNI_IFNAME/, env: (b) => without(verb('DEL')(b), 'CNI_IFNAME') },
  {
    name: 'GC without CNI_PATH',
    code: 4,
    msg: /CNI_PATH/,
    env: (b) => without(verb('GC')(b), 'CNI_PATH'),
    stdin: (c) => ({ ...c, cniVersion: '1.1.0' }),
  },
  {
    name: 'a container id with a slash',
    code: 4,
    msg: /CNI_CONTAINERID/,
    env: (b) => ({ ...b, CNI_CONTAINERID: 'abc/../../etc' }),
  },
  {
    name: 'an interface name longer than 15 characters',
    code: 4,
    msg: /CNI_IFNAME/,
    env: (b) => ({ ...b, CNI_IFNAME: 'averyveryverylongname' }),
  },
  { name: 'an interface name with a slash', code: 4, msg: /CNI_IFNAME/, env: (b) => ({ ...b, CNI_IFNAME: 'eth/0' }) },
  {
    name: 'a CNI_ARGS pair without "="',
    code: 4,
    msg: /CNI_ARGS/,
    env: (b) => ({ ...b, CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME' }),
  },
  {
    name: 'a bad IP in CNI_ARGS',
    code: 4,
    msg: /999\.1\.1\.1/,
    env: (b) => ({ ...b, CNI_ARGS: 'IgnoreUnknown=1;IP=999.1.1.1' }),
  },
  { name: 'an unknown cniVersion', code: 1, msg: /9\.9\.9/, stdin: (c) => ({ ...c, cniVersion: '9.9.9' }) },
  { name: 'no cniVersion', code: 1, stdin: (c) => without(c, 'cniVersion') },
  {
    name: 'CHECK below 0.4.0',
    code: 1,
    msg: /0\.3\.1/,
    env: verb('CHECK'),
    stdin: (c) => ({ ...c, cniVersion: '0.3.1' }),
  },
  { name: 'GC below 1.1.0', code: 1, env: verb('GC') },
  { name: 'STATUS below 1.1.0', code: 1, env: verb('STATUS') },
  { name: 'no ipam object', code: 7, msg: /ipam/, stdin: (c) => without(c, 'ipam') },
  { name: 'no network name', code: 7, msg: /name/, stdin: (c) => without(c, 'name') },
  { name: 'an ipam type that is not ours', code: 7, msg: /host-local/, stdin: (c) => ipam(c, { type: 'host-local' }) },
  {
    name: 'a prefix longer than the family allows',
    code: 7,
    msg: /10\.1\.0\.0\/33/,
    stdin: (c) => ipam(c, { range: '10.1.0.0/33' }),
  },
  { name: 'a range that is not a CIDR', code: 7, msg: /banana/, stdin: (c) => ipam(c, { range: 'banana' }) },
  { name: 'a range of the wrong type', code: 7, msg: /range/, stdin: (c) => ipam(c, { range: 5 }) },
  {
    name: 'a huge prefix number',
    code: 7,
    msg: /range/,
    stdin: (c) => ipam(c, { range: '10.1.0.0/99999999999999999999' }),
  },
  {
    name: 'an A-B/len range whose start is outside its CIDR',
    code: 7,
    msg: /range/,
    stdin: (c) => ipam(c, { range: '10.1.0.9-10.2.0.1/24' }),
  },
  {
    name: 'range_start that is not an IP',
    code: 7,
    msg: /range_start/,
    stdin: (c) => ipam(c, { range_start: '10.1.0.300' }),
  },
  {
    name: 'range_end before range_start',
    code: 7,
    msg: /range_end/,
    stdin: (c) => ipam(c, { range_start: '10.1.0.50', range_end: '10.1.0.10' }),
  },
  {
    name: 'a garbage exclude entry',
    code: 7,
    msg: /exclude/,
    stdin: (c) => ipam(c, { exclude: ['10.1.0.8/30', 'garbage'] }),
  },
  { name: 'exclude that is not a list', code: 7, msg: /exclude/, stdin: (c) => ipam(c, { exclude: '10.1.0.8/30' }) },
  { name: 'a malformed gateway', code: 7, msg: /gateway/, stdin: (c) => ipam(c, { gateway: '1.2.3' }) },
  { name: 'a route with a bad destination', code: 7, msg: /routes/, stdin: (c) => ipam(c, { routes: [{ dst: 'x' }] }) },
  {
    name: 'dns nameservers that are not a list',
    code: 7,
    msg: /dns/,
    stdin: (c) => ipam(c, { dns: { nameservers: '8.8.8.8' } }),
  },
  {
    name: 'a huge node_slice_size',
    code: 7,
    msg: /node_slice_size/,
    stdin: () =>
      '{"cniVersion":"1.0.0","name":"p","type":"bridge","ipam":{"type":"hereabouts","datastore":"local","range":"10.1.0.0/16","node_slice_size":1e309}}',
  },
  {
    name: 'a network_name that walks out of data_dir',
    code: 7,
    msg: /network_name/,
    stdin: (c) => ipam(c, { network_name: '../../etc' }),
  },
  { name: 'an unknown datastore', code: 7, msg: /datastore/, stdin: (c) => ipam(c, { datastore: 'postgres' }) },
  {
    name: 'the kubernetes datastore without a kubeconfig',
    code: 7,
    msg: /kubeconfig/,
    stdin: (c) => ({ ...c, ipam: without(c.ipam, 'datastore') }),
  },
  { name: 'a relative data_dir', code: 7, msg: /data_dir/, stdin: (c) => ipam(c, { data_dir: 'relative/dir' }) },
  {
    name: 'enable_overlapping_ranges that is not a boolean',
    code: 7,
    msg: /enable_overlapping_ranges/,
    stdin: (c) => ipam(c, { enable_overlapping_ranges: 'yes' }),
  },
  {
    name: 'a negative gc_grace_seconds',
    code: 7,
    msg: /gc_grace_seconds/,
    stdin: (c) => ipam(c, { gc_grace_seconds: -1 }),
  },
  { name: 'an unknown log_level', code: 7, msg: /log_level/, stdin: (c) => ipam(c, { log_level: 'loud' }) },
  {
    name: 'ipRanges that is not a list',
    code: 7,
    msg: /ipRanges/,
    stdin: (c) => ({ ...c, ipam: { ...without(c.ipam, 'range'), ipRanges: { range: '10.1.0.0/24' } } }),
  },
  {
    name: 'the same range twice in ipRanges',
    code: 7,
    msg: /ipRanges\[0\]\.range "10\.1\.0\.0\/24" overlaps ipam\.range/,
    stdin: (c) => ipam(c, { ipRanges: [{ range: '10.1.0.0/24' }] }),
  },
  {
    name: 'an A-B/len range mixing families',
    code: 7,
    msg: /range/,
    stdin: (c) => ipam(c, { range: '10.1.0.1-fd00::5/24' }),
  },
  {
    name: 'a runtimeConfig ip that is not an IP',
    code: 7,
    msg: /not-an-ip/,
    stdin: (c) => ({ ...c, runtimeConfig: { ips: ['not-an-ip'] } }),
  },
  {
    name: 'a missing configuration_path file',
    code: 7,
    msg: /configuration_path/,
    stdin: (c, s) => ipam(c, { configuration_path: join(s, 'nope.conf') }),
  },
  {
    name: 'a malformed prevResult on CHECK',
    code: 7,
    msg: /prevResult/,
    env: verb('CHECK'),
    stdin: (c) => ({ ...c, prevResult: { ips: [{ address: 'nope' }] } }),
  },
  {
    name: 'an unwritable data_dir',
    code: 5,
    msg: /data_dir|not a directory|ENOTDIR/i,
    stdin: (c, s) => {
      writeFileSync(join(s, 'file'), '');
      return ipam(c, { data_dir: join(s, 'file', 'data') });
    },
  },
];

const bin = requireBinary();

for (const c of cases) {
  test(`malformed: ${c.name} -> code ${c.code}, nothing written`, async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'hab-bad-'));
    try {
      const dataDir = join(scratch, 'data');
      const conf: Conf = {
        cniVersion: '1.0.0',
        name: 'proc-net',
        type: 'bridge',
        ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.1.0.0/24' },
      };
      const env: Record<string, string> = {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c-malformed',
        CNI_NETNS: '/var/run/netns/none',
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/usr/lib/cni',
      };
      const stdin = c.stdin === undefined ? conf : c.stdin(conf, scratch);
      const before = readdirSync(scratch).sort();
      const call: CniCall = { command: 'ADD', rawEnv: c.env === undefined ? env : c.env(env) };
      const out = await runCni(bin, call, stdin);
      assert.notEqual(out.code, 0, 'exit status must be non-zero');
      assert.ok(out.json !== undefined, `stdout must carry the error JSON, got ${JSON.stringify(out.stdout)}`);
      assert.equal(out.json['code'], c.code, JSON.stringify(out.json));
      assert.deepEqual(Object.keys(out.json).sort(), ['cniVersion', 'code', 'details', 'msg']);
      if (c.msg !== undefined) assert.match(String(out.json['msg']) + String(out.json['details']), c.msg);
      assert.doesNotMatch(out.stdout + out.stderr, /\n\s+at .+\(.+:\d+:\d+\)/, 'no stack trace');
      assert.deepEqual(readdirSync(scratch).sort(), before, 'nothing may be written');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
}
