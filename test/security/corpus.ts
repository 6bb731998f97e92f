// A generated corpus of hostile network configurations: a valid base config with one to three mutations drawn from
// what a tenant controls (paths, names, ranges, nesting, sizes, control characters, devices, FIFOs, symlinks), for
// every verb. Seeded: the same seed gives the same corpus, so a failure names a reproducible case.
import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Sandbox {
  readonly root: string;
  /** The one directory the operator allowed (HEREABOUTS_ALLOWED_DIRS). */
  readonly allowed: string;
  /** Host files outside it: nothing here may change. */
  readonly host: string;
  readonly dataDir: string;
}

export interface HostileCase {
  readonly id: number;
  readonly verb: 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'STATUS';
  /** What was mutated, for failure messages. */
  readonly what: string[];
  /** stdin text (some cases are not JSON-serialisable objects: deep nesting is spliced in as text). */
  readonly stdin: string;
  readonly args: string;
}

export function makeSandbox(): Sandbox {
  const root = mkdtempSync(join(tmpdir(), 'hab-corpus-'));
  const allowed = join(root, 'allowed');
  const host = join(root, 'host');
  for (const dir of [allowed, host, join(allowed, 'dir')]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const secret = 'root:$6$CORPUS-SECRET:19000:0:99999:7:::\n';
  writeFileSync(join(host, 'shadow'), secret);
  writeFileSync(join(host, 'authorized_keys'), 'ssh-ed25519 AAAA operator\n');
  execFileSync('mkfifo', ['-m', '0600', join(host, 'fifo')]);
  execFileSync('mkfifo', ['-m', '0600', join(allowed, 'fifo')]);
  writeFileSync(join(allowed, 'secret'), secret);
  writeFileSync(join(allowed, 'flat.conf'), JSON.stringify({ datastore: 'local', log_level: 'debug' }));
  writeFileSync(join(allowed, 'deep.json'), `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
  writeFileSync(join(allowed, 'exec.kubeconfig'), execKubeconfig(join(host, 'pwned')));
  writeFileSync(join(allowed, 'noserver.kubeconfig'), 'apiVersion: v1\nkind: Config\ncurrent-context: x\n');
  const huge = openSync(join(allowed, 'huge'), 'w', 0o600);
  ftruncateSync(huge, 300 * 1024 * 1024);
  closeSync(huge);
  symlinkSync('/dev/zero', join(allowed, 'zero'));
  symlinkSync(join(host, 'shadow'), join(allowed, 'shadow-link'));
  symlinkSync(join(host), join(allowed, 'host-link'));
  return { root, allowed, host, dataDir: join(allowed, 'data') };
}

export function execKubeconfig(marker: string): string {
  return `{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://127.0.0.1:1"}}],"users":[{"name":"u","user":{"exec":{"apiVersion":"client.authentication.k8s.io/v1","command":"/usr/bin/touch","args":["${marker}"],"interactiveMode":"Never"}}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"}`;
}

// mulberry32: small, fast, good enough to spread mutations.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const CONTROL = ['\n', '\r', '\u0000', '\u001b[31m', '\u2028', '\u0085', '\t', '\u007f'];
const DEEP = '__HOSTILE_DEEP__';

function pathValues(s: Sandbox): unknown[] {
  const a = s.allowed;
  return [
    '/etc/passwd',
    '/etc/shadow',
    '/dev/zero',
    '/dev/urandom',
    '/dev/null',
    '/proc/self/mem',
    '/proc/self/environ',
    '/',
    '/root/.ssh/authorized_keys',
    join(s.host, 'shadow'),
    join(s.host, 'fifo'),
    join(s.host, 'authorized_keys'),
    s.host,
    join(a, 'fifo'),
    join(a, 'zero'),
    join(a, 'shadow-link'),
    join(a, 'host-link', 'shadow'),
    join(a, 'huge'),
    join(a, 'dir'),
    join(a, 'secret'),
    join(a, 'flat.conf'),
    join(a, 'deep.json'),
    join(a, 'exec.kubeconfig'),
    join(a, 'noserver.kubeconfig'),
    join(a, 'missing'),
    join(a, 'logs', 'x.log'),
    `${a}/../host/shadow`,
    `${a}/./secret`,
    `${a}//secret`,
    a,
    'relative/path',
    '',
    ' ',
    `${a}/a\nb`,
    `${a}/\u0000x`,
    `/${'x'.repeat(5000)}`,
    `${a}/${'y'.repeat(300)}`,
    `${a}/data`,
    `${a}/data/tenant`,
    5,
    true,
    null,
    {},
    [a],
  ];
}

export const NAMES: unknown[] = [
  'a..b',
  'a.-b',
  '-a',
  'a-',
  'A',
  'Net',
  'a_b',
  'a/b',
  '../../etc',
  '.',
  '..',
  'x'.repeat(64),
  'x'.repeat(300),
  'é',
  'a\nb',
  '',
  'ok',
  'a.b',
  'kube-system',
  '0',
  5,
  null,
  {},
  ['x'],
];

export const RANGES: unknown[] = [
  '::/0',
  '::/128',
  '::1/128',
  '::1/120',
  '::/96',
  '::ffff:10.0.0.0/120',
  '1::/120',
  '0.0.0.0/0',
  '255.255.255.255/32',
  '10.0.0.0/8',
  'fd00::/64',
  'fd00::/127',
  '10.0.0.0/31',
  '10.0.0.0/32',
  'banana',
  '10.0.0.0/33',
  '10.0.0.1-10.0.0.0/24',
  '10.0.0.0/99999999999999999999',
  '10.0.0.5-10.0.0.9/24',
  '',
  5,
  null,
  ['10.0.0.0/24'],
  { range: '10.0.0.0/24' },
];

type Mutation = (conf: Record<string, unknown>, ipam: Record<string, unknown>, r: () => number) => string;

function mutations(s: Sandbox): Mutation[] {
  const pick = <T>(list: readonly T[], r: () => number): T => list[Math.floor(r() * list.length)] as T;
  const withControl = (text: string, r: () => number): string => {
    const at = Math.floor(r() * (text.length + 1));
    return `${text.slice(0, at)}${pick(CONTROL, r)}${text.slice(at)}`;
  };
  const paths = pathValues(s);
  const deepIn =
    (_unused: () => void, key: string): Mutation =>
    (_c, i, r) => {
      i[key] = [DEEP];
      return `${key} nested ${pick([10, 1000, 20_000], r)}`;
    };
  const list: Mutation[] = [
    (_c, i, r) => ((i['log_file'] = pick(paths, r)), `log_file=${String(i['log_file'])}`),
    (_c, i, r) => ((i['data_dir'] = pick(paths, r)), `data_dir=${String(i['data_dir'])}`),
    (_c, i, r) => (
      (i['cache_dir'] = pick(paths, r)),
      (i['datastore'] = 'kubernetes'),
      (i['kubernetes'] = { kubeconfig: join(s.allowed, 'noserver.kubeconfig') }),
      'cache_dir'
    ),
    (_c, i, r) => ((i['configuration_path'] = pick(paths, r)), `configuration_path=${String(i['configuration_path'])}`),
    (_c, i, r) => (
      (i['datastore'] = 'kubernetes'),
      (i['kubernetes'] = { kubeconfig: pick(paths, r) }),
      'kubernetes.kubeconfig'
    ),
    (_c, i, r) => ((i['kubernetes'] = pick([5, 'x', [], null, { kubeconfig: 7 }], r)), 'kubernetes shape'),
    (_c, i, r) => ((i['network_name'] = pick(NAMES, r)), `network_name=${JSON.stringify(i['network_name'])}`),
    (c, _i, r) => ((c['name'] = pick(NAMES, r)), `name=${JSON.stringify(c['name'])}`),
    (_c, i, r) => ((i['range'] = pick(RANGES, r)), `range=${JSON.stringify(i['range'])}`),
    (_c, i, r) => (
      (i['range'] = undefined),
      (i['ipRanges'] = [{ range: 'fd00::/120' }, { range: pick(RANGES, r) }]),
      'ipRanges'
    ),
    (_c, i, r) => ((i['node_slice_size'] = pick(['/26', 200, -1, '1e9', 'x', {}, Infinity], r)), 'node_slice_size'),
    (_c, i, r) => ((i['allowed_data_dirs'] = ['/']), (i['allow_exec_credentials'] = r() < 2), 'inline policy keys'),
    (_c, i, r) => ((i['log_level'] = pick(['debug', 'DEBUG', 'x', 5, withControl('info', r)], r)), 'log_level'),
    (_c, i, r) => {
      const key = pick(
        ['range', 'network_name', 'log_file', 'data_dir', 'configuration_path', 'gateway', 'range_start', 'type'],
        r,
      );
      i[key] = withControl(typeof i[key] === 'string' ? i[key] : `${s.allowed}/x`, r);
      return `control character in ${key}`;
    },
    (c, _i, r) => ((c['name'] = withControl('tenant-net', r)), 'control character in name'),
    (_c, i, r) => (
      (i['exclude'] = Array.from({ length: pick([10, 10_000], r) }, (_, k) => `10.77.${k % 256}.${k % 250}/32`)),
      'many excludes'
    ),
    (_c, i, r) => (
      (i['range'] = undefined),
      (i['ipRanges'] = Array.from({ length: pick([8, 40], r) }, (_, k) => ({
        range: `10.${k % 256}.${Math.floor(k / 256)}.0/24`,
      }))),
      'many ipRanges'
    ),
    (_c, i, r) => (
      (i['routes'] = Array.from({ length: pick([10, 10_000], r) }, () => ({ dst: '0.0.0.0/0' }))),
      'many routes'
    ),
    (_c, i, r) => ((i['network_name'] = 'n'.repeat(pick([100_000, 800_000], r))), 'huge network_name'),
    (c, _i, r) => ((c['pad'] = 'p'.repeat(pick([100_000, 900_000, 1_100_000], r))), 'huge stdin'),
    (_c, i, r) => ((i['dns'] = { nameservers: [withControl('8.8.8.8', r)], search: ['x'.repeat(100_000)] }), 'dns'),
    deepIn(() => undefined, 'exclude'),
    (c, _i, r) => (
      (c['cni.dev/valid-attachments'] = [DEEP]),
      (c['cniVersion'] = '1.1.0'),
      `valid-attachments nested ${pick([1000, 20_000], r)}`
    ),
    (c) => ((c['prevResult'] = { ips: [DEEP] }), 'prevResult nested'),
    (c) => ((c['runtimeConfig'] = { ips: [DEEP] }), 'runtimeConfig.ips nested'),
    (c) => ((c['args'] = { cni: { ips: DEEP } }), 'args.cni.ips nested'),
    (_c, i) => ((i['routes'] = [DEEP]), 'routes nested'),
    (_c, i) => ((i['kubernetes'] = { kubeconfig: DEEP }), 'kubeconfig nested'),
    (c, _i, r) => (
      (c['runtimeConfig'] = { ips: [pick(['10.77.0.5', '::1', '10.77.0.0', 'x', withControl('10.77.0.9', r)], r)] }),
      'runtimeConfig.ips'
    ),
    (c, _i, r) => ((c['cniVersion'] = pick(['9.9.9', withControl('1.0.0', r), 5, '0.1.0'], r)), 'cniVersion'),
    (_c, i, r) => ((i['type'] = pick(['host-local', withControl('hereabouts', r), 5], r)), 'type'),
  ];
  return list;
}

/** `count` cases from `seed`, generated lazily (stdin may be a megabyte); each is a base config plus one to three mutations, under a random verb. */
export function* generate(s: Sandbox, count: number, seed = 0x7e4a47): Generator<HostileCase> {
  const r = rng(seed);
  const muts = mutations(s);
  const verbs: HostileCase['verb'][] = ['ADD', 'ADD', 'ADD', 'DEL', 'CHECK', 'GC', 'STATUS'];
  for (let id = 0; id < count; id++) {
    const verb = verbs[Math.floor(r() * verbs.length)] as HostileCase['verb'];
    const ipam: Record<string, unknown> = {
      type: 'hereabouts',
      datastore: 'local',
      data_dir: s.dataDir,
      range: '10.77.0.0/24',
    };
    const conf: Record<string, unknown> = {
      cniVersion: verb === 'GC' || verb === 'STATUS' ? '1.1.0' : '1.0.0',
      name: 'tenant-net',
      type: 'bridge',
      ipam,
    };
    if (verb === 'CHECK') conf['prevResult'] = { cniVersion: '1.0.0', ips: [{ address: '10.77.0.1/24' }] };
    if (verb === 'GC') conf['cni.dev/valid-attachments'] = [];
    const what: string[] = [];
    const n = 1 + Math.floor(r() * 3);
    for (let k = 0; k < n; k++) what.push((muts[Math.floor(r() * muts.length)] as Mutation)(conf, ipam, r));
    const depth = Number(/nested (\d+)/.exec(what.join(' '))?.[1] ?? 1000);
    const deep = `${'['.repeat(depth)}${'{"a":'.repeat(3)}1${'}'.repeat(3)}${']'.repeat(depth)}`;
    const stdin = JSON.stringify(conf).replaceAll(`"${DEEP}"`, deep);
    const pod = r() < 0.2 ? withControlArgs(r) : `p${id}`;
    yield { id, verb, what, stdin, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=t;K8S_POD_NAME=${pod}` };
  }
}

function withControlArgs(r: () => number): string {
  return `p${CONTROL[Math.floor(r() * CONTROL.length)]?.replace('\u0000', '') ?? ''}x`;
}

/** The runtime's environment of one case's call (a node's, with the sandbox's dirs allowed). */
export function envOf(s: Sandbox, c: HostileCase): Record<string, string> {
  return {
    CNI_COMMAND: c.verb,
    CNI_CONTAINERID: `corpus${c.id}`,
    CNI_NETNS: '/var/run/netns/corpus',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/usr/lib/cni',
    CNI_ARGS: c.args,
    HEREABOUTS_ALLOWED_DIRS: s.allowed,
    NODENAME: 'corpus-node',
    HEREABOUTS_AGENT_SOCKET: '', // in the spawned process, whatever this host has in /run/hereabouts
  };
}
