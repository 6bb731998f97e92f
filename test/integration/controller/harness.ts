// Helpers of the controller suites: the packaged `hereabouts controller` run once or in the background against a
// test namespace of the real control plane, and the pods, pools, reservations and NADs it judges. There is no
// kubelet or controller-manager: tests create pods and set their status themselves.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { api, apiRequest, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';

export const bin = requireBinary();
export const GROUP = 'whereabouts.cni.cncf.io/v1alpha1';
const QUIET = ['--metrics-addr', '', '--health-addr', ''];
/**
 * Claims are served cluster-wide by default: a controller of one suite would serve another suite's IPAddressClaims
 * (in its own namespace's IPPools). Suites opt in with their own --claims <namespace>.
 */
const claimsOf = (flags: readonly string[]): string[] => [
  ...(flags.includes('--claims') ? [] : ['--claims', 'none']),
  // Sticky addresses likewise: a controller would pre-bind another suite's StatefulSets' declared addresses.
  ...(flags.includes('--sticky') ? [] : ['--sticky', 'none']),
];

export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export function parseLines(stderr: string): LogLine[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** `hereabouts controller --once` in the namespace; reservations are judged without the grace period by default. */
export function runOnce(ns: Namespace, ...flags: string[]): { code: number | null; stderr: string; lines: LogLine[] } {
  const args = [
    'controller',
    '--kubeconfig',
    ns.kubeconfig,
    '--once',
    ...QUIET,
    ...claimsOf(flags),
    '--reservation-grace',
    '0s',
    ...flags,
  ];
  const run = spawnSync(bin, args, { encoding: 'utf8', env: {}, timeout: 90_000 });
  return { code: run.status, stderr: run.stderr, lines: parseLines(run.stderr) };
}

export interface Running {
  readonly child: ChildProcess;
  readonly log: () => string;
  readonly lines: () => LogLine[];
  /** Waits until a log line satisfies `pred`; fails with the log after `timeoutMs`. */
  waitForLine(pred: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
  /** Waits until `count` log lines satisfy `pred` (the timeout only turns a hang into a failure with the log). */
  waitForLines(pred: (line: LogLine) => boolean, count: number, timeoutMs: number): Promise<LogLine[]>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Waits for `count` slice-reconciling passes that began after this call (passes are numbered when they begin: the one
 * after the highest number logged so far may have begun before).
 */
export async function slicePasses(controller: Running, count: number): Promise<void> {
  const from = Math.max(0, ...controller.lines().map((l) => (typeof l['n'] === 'number' ? l['n'] : 0)));
  await controller.waitForLines(
    (l) => / pass done/.test(l.msg) && l['pass'] !== 'cleanup' && typeof l['n'] === 'number' && l['n'] > from + 1,
    count,
    30_000,
  );
}

export function startController(ns: Namespace, ...flags: string[]): Running {
  const child = spawn(bin, ['controller', '--kubeconfig', ns.kubeconfig, ...QUIET, ...claimsOf(flags), ...flags], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {},
  });
  let text = '';
  child.stderr.on('data', (b: Buffer) => (text += b.toString()));
  // 'close', not 'exit': the last lines of stderr may still be in the pipe when the process has exited.
  let closed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      closed = true;
      resolve(code);
    }),
  );
  return {
    child,
    log: () => text,
    lines: () => parseLines(text),
    async waitForLine(pred, timeoutMs) {
      return (await this.waitForLines(pred, 1, timeoutMs))[0]!;
    },
    async waitForLines(pred, count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = parseLines(text).filter(pred);
        if (found.length >= count) return found;
        if (Date.now() > deadline || closed)
          assert.fail(`${found.length} of ${count} matching log lines within ${timeoutMs} ms:\n${text}`);
        await sleep(50);
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns true or `timeoutMs` passes; returns whether it did. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return check();
}

export interface PodOptions {
  readonly phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  readonly finalizer?: boolean;
  /** DisruptionTarget=True with this reason (true: DeletionByTaintManager, as the taint manager writes it). */
  readonly disrupted?: boolean | string;
  /** The state of the pod's one container in status.containerStatuses (none when absent). */
  readonly container?: 'running' | 'terminated';
  /** Extra status conditions, e.g. PodReadyToStartContainers=False once the sandbox is gone. */
  readonly conditions?: ReadonlyArray<Record<string, string>>;
  readonly networkStatus?: readonly string[];
  /** spec.nodeName: a bound pod is deleted gracefully (deletionTimestamp in the future), an unbound one at once. */
  readonly node?: string;
}

/** Creates a pod (and sets its status through the status subresource when asked); returns its UID. */
export async function createPod(ns: Namespace, name: string, opts: PodOptions = {}): Promise<string> {
  const annotations =
    opts.networkStatus === undefined
      ? undefined
      : {
          'k8s.v1.cni.cncf.io/network-status': JSON.stringify([
            { name: 'default/net1', interface: 'net1', ips: opts.networkStatus },
          ]),
        };
  const created = (await api(ns.cp, 'POST', `/api/v1/namespaces/${ns.name}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      ...(opts.finalizer === true ? { finalizers: ['hereabouts.test/hold'] } : {}),
      ...(annotations === undefined ? {} : { annotations }),
    },
    spec: {
      containers: [{ name: 'c', image: 'busybox' }],
      ...(opts.node === undefined ? {} : { nodeName: opts.node }),
    },
  })) as { metadata: { uid: string } };
  if (
    opts.phase !== undefined ||
    opts.disrupted !== undefined ||
    opts.container !== undefined ||
    opts.conditions !== undefined
  ) {
    await setPodStatus(ns, name, opts);
  }
  return created.metadata.uid;
}

/** Writes the pod's status as a kubelet (or the taint manager, or the Eviction API) would. */
export async function setPodStatus(ns: Namespace, name: string, opts: PodOptions): Promise<void> {
  const reason =
    opts.disrupted === true
      ? 'DeletionByTaintManager'
      : typeof opts.disrupted === 'string'
        ? opts.disrupted
        : undefined;
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const conditions = [
    ...(reason === undefined
      ? []
      : [{ type: 'DisruptionTarget', status: 'True', reason, message: `test: ${reason}`, lastTransitionTime: now }]),
    ...(opts.conditions ?? []),
  ];
  const state =
    opts.container === 'running'
      ? { running: { startedAt: now } }
      : opts.container === 'terminated'
        ? { terminated: { exitCode: 0, reason: 'Completed', finishedAt: now } }
        : undefined;
  const containerStatuses =
    state === undefined
      ? undefined
      : [{ name: 'c', image: 'busybox', imageID: '', ready: opts.container === 'running', restartCount: 0, state }];
  await api(
    ns.cp,
    'PATCH',
    `/api/v1/namespaces/${ns.name}/pods/${name}/status`,
    {
      status: {
        phase: opts.phase ?? 'Running',
        conditions,
        ...(containerStatuses === undefined ? {} : { containerStatuses }),
      },
    },
    'application/merge-patch+json',
  );
}

/** Deletes a pod with its default grace period (30 s when bound to a node); with a finalizer it stays Terminating. */
export async function terminatePod(ns: Namespace, name: string): Promise<void> {
  await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/${name}`);
}

export async function deletePod(ns: Namespace, name: string): Promise<void> {
  await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods/${name}?gracePeriodSeconds=0`);
}

/** Removes test finalizers and deletes every pod of the namespace. */
export async function deleteAllPods(ns: Namespace): Promise<void> {
  const list = (await api(ns.cp, 'GET', `/api/v1/namespaces/${ns.name}/pods`)) as {
    items: Array<{ metadata: { name: string; finalizers?: string[] } }>;
  };
  for (const pod of list.items) {
    if (pod.metadata.finalizers !== undefined)
      await apiRequest(
        ns.cp,
        'PATCH',
        `/api/v1/namespaces/${ns.name}/pods/${pod.metadata.name}`,
        { metadata: { finalizers: null } },
        'application/merge-patch+json',
      );
  }
  await api(ns.cp, 'DELETE', `/api/v1/namespaces/${ns.name}/pods?gracePeriodSeconds=0`);
}

export interface Allocation {
  readonly id: string;
  readonly podref: string;
  readonly ifname: string;
  readonly podUid?: string;
  /** When hereabouts made it (Whereabouts' records have none). */
  readonly createdAt?: string;
}

/** A createdAt this long ago. */
export const ago = (ms: number): string => new Date(Date.now() - ms).toISOString();

export function allocation(ns: Namespace, pod: string, podUid?: string): Allocation {
  return { id: `ctr-${pod}`, podref: `${ns.name}/${pod}`, ifname: 'net1', ...(podUid === undefined ? {} : { podUid }) };
}

export async function createPool(
  ns: Namespace,
  name: string,
  range: string,
  allocations: Record<string, Allocation>,
): Promise<void> {
  await ns.create('ippools', { apiVersion: GROUP, kind: 'IPPool', metadata: { name }, spec: { range, allocations } });
}

/**
 * Sets the pool's allocations, creating it when it does not exist: a node-slice pool is created by the controller
 * when it hands the slice out, before any node allocates there.
 */
export async function writePool(
  ns: Namespace,
  name: string,
  range: string,
  allocations: Record<string, Allocation>,
): Promise<void> {
  // As every writer of a pool does: write conditionally on what was read, and read again when another writer (here
  // the controller, which creates the slice's pool and writes its status) wrote in between.
  for (let attempt = 0; attempt < 20; attempt++) {
    const current = await ns.get('ippools', name);
    const res =
      current === undefined
        ? await apiRequest(ns.cp, 'POST', ns.path('ippools'), {
            apiVersion: GROUP,
            kind: 'IPPool',
            metadata: { name },
            spec: { range, allocations },
          })
        : await apiRequest(ns.cp, 'PUT', ns.path('ippools', name), { ...current, spec: { range, allocations } });
    if (res.status === 409) continue;
    assert.ok(res.status >= 200 && res.status < 300, `write of IPPool ${name}: HTTP ${res.status}`);
    return;
  }
  assert.fail(`IPPool ${name} kept changing under 20 conditional writes`);
}

/** The offsets allocated in the pool, sorted. */
export async function offsets(ns: Namespace, pool: string): Promise<string[]> {
  const object = await ns.get('ippools', pool);
  const allocations = (object?.['spec'] as { allocations?: Record<string, unknown> } | undefined)?.allocations ?? {};
  return Object.keys(allocations).sort((a, b) => Number(a) - Number(b));
}

export async function createReservation(ns: Namespace, name: string, podref: string): Promise<void> {
  await ns.create('overlappingrangeipreservations', {
    apiVersion: GROUP,
    kind: 'OverlappingRangeIPReservation',
    metadata: { name },
    spec: { podref, ifname: 'net1', containerid: 'x' },
  });
}

export interface ReservationSeen {
  readonly name: string;
  readonly spec: { podref?: string; ifname?: string; containerid?: string };
}

export async function reservations(ns: Namespace): Promise<ReservationSeen[]> {
  return (await ns.list('overlappingrangeipreservations')).map((o) => ({
    name: (o['metadata'] as { name: string }).name,
    spec: o['spec'] as ReservationSeen['spec'],
  }));
}

export async function reservationNames(ns: Namespace): Promise<string[]> {
  return (await ns.list('overlappingrangeipreservations')).map((o) => (o['metadata'] as { name: string }).name).sort();
}

export interface EventSeen {
  readonly reason: string;
  readonly type: string;
  readonly message: string;
  readonly involvedObject: { kind: string; name: string; namespace?: string };
  readonly count?: number;
  /** The controller's --identity. */
  readonly reportingInstance?: string;
}

export async function events(ns: Namespace, namespace = ns.name): Promise<EventSeen[]> {
  return ((await api(ns.cp, 'GET', `/api/v1/namespaces/${namespace}/events`)) as { items: EventSeen[] }).items;
}

export async function createNad(
  ns: Namespace,
  name: string,
  ipam: Record<string, unknown>,
  namespace = ns.name,
): Promise<{ uid: string }> {
  const config = JSON.stringify({ cniVersion: '1.0.0', name, type: 'macvlan', master: 'eth0', ipam });
  const created = (await api(
    ns.cp,
    'POST',
    `/apis/k8s.cni.cncf.io/v1/namespaces/${namespace}/network-attachment-definitions`,
    {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name },
      spec: { config },
    },
  )) as { metadata: { uid: string } };
  return { uid: created.metadata.uid };
}
