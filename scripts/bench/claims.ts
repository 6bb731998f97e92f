// `npm run bench:claims`: hereabouts' Cluster API IPAM provider (`hereabouts controller --claims <ns>`, the packaged
// executable) against the upstream in-cluster provider v1.1.0 (sigs.k8s.io/cluster-api-ipam-provider-in-cluster, built
// from its Go module by scripts/tools/capi-in-cluster.sh, cached outside the repo) on one real kube-apiserver, in one
// run; the upstream provider is the baseline every ratio is taken against. For each provider, in a namespace of its
// own, with the same addresses, prefix and gateway (an AddressPool, an InClusterIPPool):
//   1. allocation: N IPAddressClaims created in parallel batches (as a MachineDeployment scale-up makes them), timed
//      until every claim is served (status.addressRef, and for hereabouts Ready=True) and has its IPAddress; every
//      address must be distinct and inside the pool;
//   2. release: the N claims deleted in the same batches, timed until every claim and IPAddress is gone and the pool
//      holds nothing (hereabouts: no record in its IPPool, no reservation; upstream: its pool is its IPAddresses).
// Claims/s, API requests per claim made by the provider (kube-apiserver's audit log, by User-Agent: `hereabouts/…`,
// `capi-in-cluster/…`), the provider's CPU per claim and kube-apiserver + etcd CPU per claim (/proc/<pid>/stat; the
// bench's own creates, deletes and watches are in the latter, alike for both). Each provider first serves one warm-up
// claim on a pool of its own, so the clock starts with a provider that is up and watching.
// Not part of `npm test`. Usage: node scripts/bench/claims.ts [--no-build] [--count N] [--batch B] [--timeout S]
//   [--machine NAME] (the machine's name in the "measured at" line; default from the processor, e.g. xeon-2vcpu)
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { request } from 'node:https';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { load } from 'js-yaml';
import {
  api,
  apiRequest,
  controlPlane,
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../test/support/control-plane.ts';
import { hereaboutsBin, repoRoot } from '../../test/support/paths.ts';
import { controlPlaneCpuMs, processCpuMs } from './proc-cpu.ts';

const { values: flags } = parseArgs({
  options: {
    'no-build': { type: 'boolean', default: false },
    count: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '20' },
    timeout: { type: 'string' },
    machine: { type: 'string' },
  },
});
const positive = (name: 'count' | 'batch' | 'timeout', value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} ${value}: need a positive integer`);
  return n;
};
const count = positive('count', flags.count);
const batch = positive('batch', flags.batch);
if (count > 65_000) throw new RangeError(`--count ${count}: at most 65000 (one /16)`);
/** Per phase: ~1 s a claim, at least 2 minutes (a failing provider ends the run, a slow one does not). */
const phaseTimeoutMs = positive('timeout', flags.timeout ?? String(Math.max(120, count))) * 1000;

const CAPI = '/apis/ipam.cluster.x-k8s.io/v1beta2';
const HB = '/apis/hereabouts.cni.cncf.io/v1alpha1';
const INCLUSTER = '/apis/ipam.cluster.x-k8s.io/v1alpha2';
const UPSTREAM_MODULE = 'sigs.k8s.io/cluster-api-ipam-provider-in-cluster';
const POOL = 'machines';
const WARM_POOL = 'warm-up';
/** The pool: N addresses (and a few spare) from 10.200.0.10 in 10.200.0.0/16, gateway .1, as both providers read it. */
const FIRST = (10 << 24) | (200 << 16) | 10;
const LAST = FIRST + count - 1 + 10;
const dotted = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const POOL_SPEC = { addresses: [`${dotted(FIRST)}-${dotted(LAST)}`], prefix: 16, gateway: '10.200.0.1' };
const WARM_SPEC = { addresses: ['10.201.0.10'], prefix: 24, gateway: '10.201.0.1' };

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});
const nameOf = (o: unknown): string => String(rec(rec(o)['metadata'])['name']);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const f = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const work = mkdtempSync(join(tmpdir(), 'hereabouts-bench-claims-'));

function table(head: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

async function inBatches<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}

// --- a namespaced collection kept by list + watch (no polling: 1000 claims listed every few ms would load the API
// server that is being measured)
class Collection {
  readonly items = new Map<string, Obj>();
  readonly #cp: ControlPlane;
  readonly #path: string;
  readonly #ca: Buffer;
  #resourceVersion = '';
  #closed = false;
  #abort: (() => void) | undefined;
  #listeners = new Set<() => void>();

  constructor(cp: ControlPlane, path: string) {
    this.#cp = cp;
    this.#path = path;
    this.#ca = readFileSync(cp.ca);
  }

  async start(): Promise<void> {
    await this.#list();
    this.#watch();
  }

  close(): void {
    this.#closed = true;
    this.#abort?.();
  }

  /** Calls `listener` after each change (a list, or a chunk of watch events); returns how to stop. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #list(): Promise<void> {
    const body = rec(await api(this.#cp, 'GET', this.#path));
    this.items.clear();
    for (const item of (body['items'] as Obj[] | undefined) ?? []) this.items.set(nameOf(item), item);
    this.#resourceVersion = String(rec(body['metadata'])['resourceVersion']);
    this.#notify();
  }

  #watch(): void {
    if (this.#closed) return;
    const query = `watch=1&allowWatchBookmarks=true&timeoutSeconds=1800&resourceVersion=${this.#resourceVersion}`;
    const req = request(
      new URL(`${this.#cp.url}${this.#path}?${query}`),
      { ca: this.#ca, headers: { Authorization: `Bearer ${this.#cp.token}`, Accept: 'application/json' } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          this.#again(true);
          return;
        }
        let buffer = '';
        let relist = false;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
            const line = buffer.slice(0, i);
            buffer = buffer.slice(i + 1);
            if (line !== '') relist ||= this.#event(JSON.parse(line) as { type: string; object: Obj });
          }
          this.#notify();
        });
        res.on('end', () => this.#again(relist));
        res.on('error', () => this.#again(relist));
      },
    );
    req.on('error', () => this.#again(true));
    this.#abort = () => req.destroy();
    req.end();
  }

  /** Applies one watch event; true when the watch must start again from a fresh list (410 Gone). */
  #event(e: { type: string; object: Obj }): boolean {
    if (e.type === 'ERROR') return true;
    const rv = rec(e.object['metadata'])['resourceVersion'];
    if (typeof rv === 'string') this.#resourceVersion = rv;
    if (e.type === 'ADDED' || e.type === 'MODIFIED') this.items.set(nameOf(e.object), e.object);
    else if (e.type === 'DELETED') this.items.delete(nameOf(e.object));
    return false;
  }

  #again(relist: boolean): void {
    if (this.#closed) return;
    setTimeout(() => {
      if (this.#closed) return;
      (relist ? this.#list() : Promise.resolve()).then(
        () => this.#watch(),
        () => this.#again(true),
      );
    }, 100);
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/** The time (performance.now()) at which `done` first held, checked after each change of any of the collections. */
function until(
  collections: readonly Collection[],
  done: () => boolean,
  timeoutMs: number,
  what: () => string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const stops: Array<() => void> = [];
    const finish = (): void => {
      clearTimeout(timer);
      for (const s of stops) s();
    };
    const check = (): void => {
      if (!done()) return;
      const at = performance.now();
      finish();
      resolve(at);
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`not within ${timeoutMs / 1000} s: ${what()}`));
    }, timeoutMs);
    for (const c of collections) stops.push(c.onChange(check));
    check();
  });
}

// --- the audit log: requests by User-Agent
interface AuditEvent {
  auditID?: string;
  userAgent?: string;
  verb?: string;
  objectRef?: { resource?: string; subresource?: string };
  responseStatus?: { code?: number };
}

class Audit {
  readonly #file: string;
  #offset = 0;
  /** A watch is logged when its response starts and again when it ends: one request, counted once. */
  readonly #seen = new Set<string>();

  constructor(file: string) {
    this.#file = file;
  }

  /** The events appended since the last call (only complete lines). */
  read(): AuditEvent[] {
    if (!existsSync(this.#file)) return [];
    const fd = openSync(this.#file, 'r');
    let text: string;
    try {
      const buffer = Buffer.alloc(fstatSync(fd).size - this.#offset);
      readSync(fd, buffer, 0, buffer.length, this.#offset);
      const complete = buffer.lastIndexOf(0x0a) + 1;
      text = buffer.subarray(0, complete).toString('utf8');
      this.#offset += complete;
    } finally {
      closeSync(fd);
    }
    const out: AuditEvent[] = [];
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const event = JSON.parse(line) as AuditEvent;
      if (event.auditID !== undefined) {
        if (this.#seen.has(event.auditID)) continue;
        this.#seen.add(event.auditID);
      }
      out.push(event);
    }
    return out;
  }
}

/** The audit log a control plane was started with (HEREABOUTS_AUDIT_LOG in its env file), if any. */
function auditLogOf(cp: ControlPlane): string | undefined {
  const m = /^export HEREABOUTS_AUDIT_LOG='([^']*)'$/m.exec(readFileSync(join(cp.dir, 'env'), 'utf8'));
  return m?.[1] === undefined || m[1] === '' ? undefined : m[1];
}

// --- the two providers
interface Provider {
  readonly label: string;
  /** The start of the User-Agent its requests carry. */
  readonly agent: string;
  readonly poolGroup: string;
  readonly poolKind: string;
  readonly poolPlural: string;
  readonly poolApiVersion: string;
  /** The status field of the pool that holds total / used / free. */
  readonly statusField: string;
  start(ns: Namespace, log: number): ChildProcess;
  /** Whether the claim is served as the provider serves it (its IPAddress is checked besides). */
  served(claim: Obj): boolean;
  /** What the pool still holds besides IPAddresses (records, reservations), described; '' when nothing. */
  leftovers(ns: Namespace): Promise<string>;
}

const readyTrue = (claim: Obj): boolean =>
  ((rec(claim['status'])['conditions'] as Obj[] | undefined) ?? []).some(
    (c) => c['type'] === 'Ready' && c['status'] === 'True',
  );
const addressRefOf = (claim: Obj): unknown => rec(rec(claim['status'])['addressRef'])['name'];

const hereabouts: Provider = {
  label: 'hereabouts',
  agent: 'hereabouts/',
  poolGroup: 'hereabouts.cni.cncf.io',
  poolKind: 'AddressPool',
  poolPlural: `${HB}/namespaces/NS/addresspools`,
  poolApiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
  statusField: 'addresses',
  start: (ns, log) =>
    spawn(
      hereaboutsBin,
      [
        'controller',
        '--kubeconfig',
        ns.kubeconfig,
        '--metrics-addr',
        '',
        '--health-addr',
        '',
        '--claims',
        ns.name,
        '--sticky',
        ns.name,
      ],
      { stdio: ['ignore', 'ignore', log], env: {} },
    ),
  served: (claim) => addressRefOf(claim) === nameOf(claim) && readyTrue(claim),
  async leftovers(ns) {
    let records = 0;
    for (const pool of await ns.list('ippools'))
      if (nameOf(pool).startsWith(`hereabouts-claims.ns.${ns.name}.`))
        records += Object.keys(rec(rec(pool['spec'])['allocations'])).length;
    const reservations = (await ns.list('overlappingrangeipreservations')).filter((r) =>
      nameOf(r).startsWith('hereabouts-claims-'),
    ).length;
    return records === 0 && reservations === 0 ? '' : `${records} IPPool records, ${reservations} reservations`;
  },
};

function upstream(bin: string): Provider {
  return {
    label: 'in-cluster v1.1.0 (upstream)',
    agent: 'capi-in-cluster/',
    poolGroup: 'ipam.cluster.x-k8s.io',
    poolKind: 'InClusterIPPool',
    poolPlural: `${INCLUSTER}/namespaces/NS/inclusterippools`,
    poolApiVersion: 'ipam.cluster.x-k8s.io/v1alpha2',
    statusField: 'ipAddresses',
    start: (ns, log) =>
      spawn(
        bin,
        [
          '--kubeconfig',
          ns.kubeconfig,
          '--webhook-port=0',
          '--diagnostics-address=0',
          '--health-probe-bind-address=0',
          '--namespace',
          ns.name,
        ],
        { stdio: ['ignore', 'ignore', log], env: { HOME: work } },
      ),
    // It sets no condition on a claim: an addressRef is all it says.
    served: (claim) => addressRefOf(claim) === nameOf(claim),
    // Its pool is the set of IPAddresses naming it: nothing else to hold.
    leftovers: async () => '',
  };
}

/** The upstream provider's binary (built once), or why it cannot run. */
function upstreamBinary(): { bin: string } | { skip: string } {
  const built = spawnSync('bash', [join(repoRoot, 'scripts', 'tools', 'capi-in-cluster.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const bin = built.stdout.trim().split('\n').at(-1) ?? '';
  if (built.status === 0 && existsSync(bin)) return { bin };
  return {
    skip: `scripts/tools/capi-in-cluster.sh failed (exit ${String(built.status)}): ${built.stderr.trim().split('\n').slice(-3).join(' / ')}`,
  };
}

/** Its Go module in the module cache (its CRDs are in config/crd/bases/), as the build script left it. */
function upstreamModuleDir(bin: string): string {
  const env = {
    ...process.env,
    PATH: `${process.env['PATH'] ?? ''}:/usr/local/go/bin`,
    GOFLAGS: '-mod=mod',
    GOTOOLCHAIN: 'local',
    GOWORK: 'off',
  };
  return execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', UPSTREAM_MODULE], {
    cwd: join(dirname(bin), 'src'),
    env,
    encoding: 'utf8',
  }).trim();
}

/** Server-side applies the upstream provider's CRDs (as `kubectl apply --server-side`) and waits until Established. */
async function installUpstreamCrds(cp: ControlPlane, moduleDir: string): Promise<void> {
  const dir = join(moduleDir, 'config', 'crd', 'bases');
  const names: string[] = [];
  for (const file of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    const crd = rec(load(readFileSync(join(dir, file), 'utf8')));
    const name = nameOf(crd);
    names.push(name);
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}?fieldManager=hereabouts-bench&force=true`;
    await api(cp, 'PATCH', path, crd, 'application/apply-patch+yaml');
  }
  const deadline = Date.now() + 60_000;
  for (const name of names) {
    for (;;) {
      const crd = rec(await api(cp, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`));
      const conditions = (rec(crd['status'])['conditions'] as Obj[] | undefined) ?? [];
      if (conditions.some((c) => c['type'] === 'Established' && c['status'] === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within 60 s`);
      await sleep(100);
    }
  }
}

// --- one provider's run
interface Phase {
  readonly seconds: number;
  /** API requests the provider made (undefined: no audit log), and by verb and resource. */
  readonly requests: number | undefined;
  readonly byKind: ReadonlyMap<string, number>;
  readonly providerCpuMs: number;
  readonly controlPlaneCpuMs: number;
}

interface Result {
  readonly provider: Provider;
  readonly alloc: Phase;
  readonly release: Phase;
  readonly peakRssMiB: number;
  readonly problems: readonly string[];
}

function peakRssMiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] === undefined ? Number.NaN : Number(m[1]) / 1024;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function run(cp: ControlPlane, audit: Audit | undefined, provider: Provider): Promise<Result> {
  const ns = await createNamespace(cp, `bench-claims-${provider === hereabouts ? 'h' : 'u'}`);
  const poolPath = provider.poolPlural.replace('NS', ns.name);
  const claimsPath = `${CAPI}/namespaces/${ns.name}/ipaddressclaims`;
  const addressesPath = `${CAPI}/namespaces/${ns.name}/ipaddresses`;
  const problems: string[] = [];
  const claims = new Collection(cp, claimsPath);
  const addresses = new Collection(cp, addressesPath);
  const both = [claims, addresses];
  const logFile = join(work, `${provider === hereabouts ? 'hereabouts' : 'upstream'}.log`);
  const log = openSync(logFile, 'w');
  let child: ChildProcess | undefined;
  try {
    for (const [name, spec] of [
      [WARM_POOL, WARM_SPEC],
      [POOL, POOL_SPEC],
    ] as const)
      await api(cp, 'POST', poolPath, {
        apiVersion: provider.poolApiVersion,
        kind: provider.poolKind,
        metadata: { name },
        spec,
      });
    await claims.start();
    await addresses.start();
    const claimObject = (name: string, pool: string): Obj => ({
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddressClaim',
      metadata: { name },
      spec: { poolRef: { apiGroup: provider.poolGroup, kind: provider.poolKind, name: pool } },
    });
    const served = (name: string): boolean => {
      const claim = claims.items.get(name);
      return claim !== undefined && provider.served(claim) && addresses.items.has(name);
    };
    const tail = (): string => readFileSync(logFile, 'utf8').slice(-2000);

    child = provider.start(ns, log);
    const pid = child.pid;
    if (pid === undefined) throw new Error(`${provider.label}: did not start`);
    // The warm-up claim: the clock starts with a provider that is up, watching and serving.
    await api(cp, 'POST', claimsPath, claimObject('warm-up', WARM_POOL));
    await until(
      both,
      () => served('warm-up'),
      120_000,
      () => `warm-up claim not served\n${tail()}`,
    );
    await api(cp, 'DELETE', `${claimsPath}/warm-up`);
    await until(
      both,
      () => claims.items.size === 0 && addresses.items.size === 0,
      60_000,
      () => `warm-up claim not released\n${tail()}`,
    );

    const names = Array.from({ length: count }, (_, i) => `m-${String(i).padStart(5, '0')}`);
    const phase = async (act: () => Promise<void>, done: () => Promise<void>): Promise<Phase> => {
      audit?.read();
      const cpu0 = processCpuMs(pid);
      const api0 = controlPlaneCpuMs(cp.dir);
      const t0 = performance.now();
      await act();
      await done();
      const seconds = (performance.now() - t0) / 1000;
      // Writes that follow the last one observed (pool status) belong to the phase too.
      await sleep(2000);
      const providerCpuMs = processCpuMs(pid) - cpu0;
      const controlPlaneCpu = controlPlaneCpuMs(cp.dir) - api0;
      const events = audit?.read().filter((e) => (e.userAgent ?? '').startsWith(provider.agent));
      const byKind = new Map<string, number>();
      for (const e of events ?? []) {
        const code = e.responseStatus?.code ?? 0;
        const sub = e.objectRef?.subresource === undefined ? '' : `/${e.objectRef.subresource}`;
        const kind = `${e.verb ?? '?'} ${e.objectRef?.resource ?? '(none)'}${sub}${code >= 400 ? ` (${code})` : ''}`;
        byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
      }
      return {
        seconds,
        requests: events?.length,
        byKind,
        providerCpuMs,
        controlPlaneCpuMs: controlPlaneCpu,
      };
    };

    const servedCount = (): number => names.filter(served).length;
    const alloc = await phase(
      () => inBatches(names, batch, (name) => api(cp, 'POST', claimsPath, claimObject(name, POOL))),
      async () => {
        await until(
          both,
          () => addresses.items.size >= count && servedCount() === count,
          phaseTimeoutMs,
          () => `${servedCount()} of ${count} claims served\n${tail()}`,
        );
      },
    );
    // Every address distinct, inside the pool, and the IPAddress's claimRef its claim.
    const held = new Set<number>();
    for (const [name, address] of addresses.items) {
      const spec = rec(address['spec']);
      const ip = String(spec['address']);
      const n = ip.split('.').reduce((a, b) => a * 256 + Number(b), 0);
      if (n < FIRST || n > LAST) problems.push(`${name}: ${ip} is outside the pool`);
      if (held.has(n)) problems.push(`${name}: ${ip} is held twice`);
      held.add(n);
      if (rec(spec['claimRef'])['name'] !== name)
        problems.push(`${name}: claimRef ${JSON.stringify(spec['claimRef'])}`);
    }
    if (held.size !== count) problems.push(`${held.size} distinct addresses for ${count} claims`);

    const release = await phase(
      () => inBatches(names, batch, (name) => api(cp, 'DELETE', `${claimsPath}/${name}`)),
      async () => {
        await until(
          both,
          () => claims.items.size === 0 && addresses.items.size === 0,
          phaseTimeoutMs,
          () => `${claims.items.size} claims and ${addresses.items.size} IPAddresses left\n${tail()}`,
        );
        const deadline = Date.now() + 30_000;
        let left = await provider.leftovers(ns);
        while (left !== '' && Date.now() < deadline) {
          await sleep(100);
          left = await provider.leftovers(ns);
        }
        if (left !== '') problems.push(`the pool still holds ${left} 30 s after the last IPAddress went`);
      },
    );
    // The pool's own status: eventually nothing used (not timed: a status, not the allocation).
    const status = async (): Promise<Obj> =>
      rec(rec(rec(await api(cp, 'GET', `${poolPath}/${POOL}`))['status'])[provider.statusField]);
    const deadline = Date.now() + 30_000;
    while (rec(await status())['used'] !== 0 && Date.now() < deadline) await sleep(200);
    const counts = await status();
    if (counts['used'] !== 0) problems.push(`pool status ${JSON.stringify(counts)} 30 s after the release`);
    const rss = peakRssMiB(pid);
    return { provider, alloc, release, peakRssMiB: rss, problems };
  } finally {
    if (child !== undefined) await stop(child);
    closeSync(log);
    claims.close();
    addresses.close();
    await cleanup(cp, ns, poolPath);
  }
}

/** Leaves a shared control plane as it was: finalizers cleared (the provider is stopped), objects and namespace gone. */
async function cleanup(cp: ControlPlane, ns: Namespace, poolPath: string): Promise<void> {
  const paths = [
    `${CAPI}/namespaces/${ns.name}/ipaddressclaims`,
    `${CAPI}/namespaces/${ns.name}/ipaddresses`,
    poolPath,
  ];
  for (const path of paths)
    for (const item of (rec(await api(cp, 'GET', path))['items'] as Obj[] | undefined) ?? []) {
      const object = `${path}/${nameOf(item)}`;
      await apiRequest(cp, 'PATCH', object, { metadata: { finalizers: null } }, 'application/merge-patch+json');
      await apiRequest(cp, 'DELETE', object);
    }
  await ns.cleanup();
}

// --- the report
function machineName(): string {
  if (flags.machine !== undefined) return flags.machine;
  const model = cpus()[0]?.model ?? '';
  const kind = /EPYC/i.test(model) ? 'epyc' : /Xeon/i.test(model) ? 'xeon' : 'dev';
  return `${kind}-${cpus().length}vcpu`;
}

function commitLine(): string {
  const version = spawnSync(hereaboutsBin, ['version'], { encoding: 'utf8' }).stdout.trim();
  const built = /commit (\w+)/.exec(version)?.[1] ?? '?';
  const git = (...args: string[]): string => spawnSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).stdout.trim();
  const head = git('rev-parse', '--short', 'HEAD');
  const notes = head !== '' && !head.startsWith(built) && !built.startsWith(head) ? [`HEAD is ${head}`] : [];
  // What went into dist/: uncommitted changes of the code are in it when it was built after them.
  const changed = git('status', '--porcelain', '--untracked-files=all', '--', 'src', 'build')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => join(repoRoot, l.slice(3)))
    .filter((file) => existsSync(file))
    .map((file) => statSync(file).mtimeMs);
  if (changed.length > 0) {
    const builtAt = statSync(hereaboutsBin).mtimeMs;
    if (builtAt < Math.min(...changed)) notes.push('dist/hereabouts predates the uncommitted changes in src/');
    else notes.push('dist/hereabouts was built from a working tree with uncommitted changes in src/ or build/');
  }
  return `measured at \`${built}\` on \`${machineName()}\`${notes.length === 0 ? '' : ` (${notes.join('; ')})`}`;
}

const perClaim = (n: number | undefined): string => (n === undefined ? 'n/a' : f(n / count));
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || b === 0 ? '-' : `${f(a / b, 2)}×`;

function report(results: readonly Result[]): void {
  const rows = results.map((r) => [
    r.provider.label,
    `${f(count / r.alloc.seconds)} (${f(r.alloc.seconds)} s)`,
    `${f(count / r.release.seconds)} (${f(r.release.seconds)} s)`,
    `${perClaim(r.alloc.requests)} / ${perClaim(r.release.requests)}`,
    `${f(r.alloc.providerCpuMs / count, 2)} / ${f(r.release.providerCpuMs / count, 2)}`,
    `${f(r.alloc.controlPlaneCpuMs / count, 2)} / ${f(r.release.controlPlaneCpuMs / count, 2)}`,
    f(r.peakRssMiB, 0),
  ]);
  const [ours, base] = results;
  if (ours !== undefined && base !== undefined) {
    const rate = (r: Result, p: 'alloc' | 'release'): number => count / r[p].seconds;
    rows.push([
      '**hereabouts / upstream**',
      ratio(rate(ours, 'alloc'), rate(base, 'alloc')),
      ratio(rate(ours, 'release'), rate(base, 'release')),
      `${ratio(ours.alloc.requests, base.alloc.requests)} / ${ratio(ours.release.requests, base.release.requests)}`,
      `${ratio(ours.alloc.providerCpuMs, base.alloc.providerCpuMs)} / ${ratio(ours.release.providerCpuMs, base.release.providerCpuMs)}`,
      `${ratio(ours.alloc.controlPlaneCpuMs, base.alloc.controlPlaneCpuMs)} / ${ratio(ours.release.controlPlaneCpuMs, base.release.controlPlaneCpuMs)}`,
      ratio(ours.peakRssMiB, base.peakRssMiB),
    ]);
  }
  table(
    [
      '',
      'allocation: claims/s',
      'release: claims/s',
      'API requests per claim (alloc / release)',
      'provider CPU ms per claim (alloc / release)',
      'apiserver+etcd CPU ms per claim (alloc / release)',
      'provider peak RSS MiB',
    ],
    rows,
  );
  for (const r of results) {
    if (r.alloc.requests === undefined) continue;
    for (const [name, p] of [
      ['allocation', r.alloc],
      ['release', r.release],
    ] as const) {
      const kinds = [...p.byKind]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => (n * 100 < count ? `${k} (${n} in all)` : `${k} ${f(n / count, 2)}`))
        .join(', ');
      console.log(`\n${r.provider.label}, ${name}, requests per claim: ${kinds}`);
    }
  }
}

async function main(): Promise<void> {
  if (!flags['no-build']) {
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  if (!existsSync(hereaboutsBin)) throw new Error(`${hereaboutsBin} is missing: run "npm run build"`);
  const tool = upstreamBinary();
  const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`## bench:claims — ${new Date().toISOString()}\n`);
  console.log(commitLine());
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}; load average at start ${loadAverage()}`);
  console.log(spawnSync(hereaboutsBin, ['version'], { encoding: 'utf8' }).stdout.trim());
  console.log(
    'skip' in tool
      ? `upstream in-cluster provider: SKIPPED, no baseline in this run (${tool.skip})`
      : `baseline: the upstream in-cluster provider v1.1.0 in the same run (${tool.bin})`,
  );
  const shared = process.env['HEREABOUTS_CONTROL_PLANE'];
  const cp =
    shared !== undefined && shared !== ''
      ? await controlPlane()
      : await privateControlPlane({ auditLog: join(work, 'audit.log') });
  const auditFile = auditLogOf(cp);
  console.log(
    auditFile === undefined
      ? `control plane ${cp.dir}: no audit log, so no request counts (start it with HEREABOUTS_AUDIT_LOG set)`
      : `control plane ${cp.dir}${cp.owned ? ' (private)' : ' (shared)'}; requests counted from its audit log by User-Agent`,
  );
  console.log(
    `${count} IPAddressClaims on one pool of ${LAST - FIRST + 1} addresses (${POOL_SPEC.addresses[0]}, prefix ${POOL_SPEC.prefix}, gateway ${POOL_SPEC.gateway}), created and deleted ${batch} at a time\n`,
  );
  try {
    const audit = auditFile === undefined ? undefined : new Audit(auditFile);
    const results: Result[] = [await run(cp, audit, hereabouts)];
    if (!('skip' in tool)) {
      await installUpstreamCrds(cp, upstreamModuleDir(tool.bin));
      results.push(await run(cp, audit, upstream(tool.bin)));
    }
    report(results);
    console.log(`\nload average at end ${loadAverage()}`);
    for (const r of results)
      for (const p of r.problems) {
        console.log(`PROBLEM (${r.provider.label}): ${p}`);
        process.exitCode = 1;
      }
  } finally {
    stopControlPlane(cp);
  }
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
