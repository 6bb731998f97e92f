// A real kube-apiserver + etcd for integration tests (scripts/control-plane/). One control plane serves a whole
// test run when scripts/test.sh exported HEREABOUTS_CONTROL_PLANE=<dir> (started there with start.sh <dir>);
// otherwise each test file starts its own and stops it when the file is done. Every suite works in a fresh
// namespace through a kubeconfig whose context names it, so suites sharing a control plane never see each other.
// Tests that stop or freeze the API server ask for a private control plane.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

export interface ControlPlane {
  readonly dir: string;
  readonly url: string;
  readonly token: string;
  readonly ca: string;
  /** The admin kubeconfig (context namespace kube-system). */
  readonly kubeconfig: string;
  /** True when this process started it (and stops it); false when shared through HEREABOUTS_CONTROL_PLANE. */
  readonly owned: boolean;
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
}

const scripts = join(repoRoot, 'scripts', 'control-plane');
let shared: Promise<ControlPlane> | undefined;
const owned: ControlPlane[] = [];

/** The run's shared control plane (HEREABOUTS_CONTROL_PLANE), else one started for this test file. */
export function controlPlane(): Promise<ControlPlane> {
  shared ??= Promise.resolve().then(() => {
    const dir = process.env['HEREABOUTS_CONTROL_PLANE'];
    return dir !== undefined && dir !== '' ? attach(dir, false) : start();
  });
  return shared;
}

export interface PrivateOptions {
  readonly auditLog?: string;
  /** kube-apiserver --emulated-version ("1.31"): an API server that behaves as that older minor. */
  readonly emulatedVersion?: string;
}

/** A control plane of its own, for tests that stop, restart or freeze the API server, or need it older. */
export function privateControlPlane(options: PrivateOptions = {}): Promise<ControlPlane> {
  return Promise.resolve().then(() => start(options));
}

function start(options: PrivateOptions = {}): ControlPlane {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-cp-'));
  const env = {
    ...process.env,
    ...(options.auditLog === undefined ? {} : { HEREABOUTS_AUDIT_LOG: options.auditLog }),
    ...(options.emulatedVersion === undefined ? {} : { HEREABOUTS_CP_EMULATED_VERSION: options.emulatedVersion }),
  };
  try {
    execFileSync(join(scripts, 'start.sh'), [dir], { env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`scripts/control-plane/start.sh ${dir} failed:\n${stderr}`, { cause: err });
  }
  const cp = attach(dir, true);
  owned.push(cp);
  return cp;
}

function attach(dir: string, isOwned: boolean): ControlPlane {
  const env = readEnvFile(join(dir, 'env'));
  const need = (key: string): string => {
    const value = env.get(key);
    if (value === undefined || value === '')
      throw new Error(`${dir}/env has no ${key}: is a control plane running there?`);
    return value;
  };
  return {
    dir,
    url: need('APISERVER_URL'),
    token: need('APISERVER_TOKEN'),
    ca: need('APISERVER_CA'),
    kubeconfig: need('KUBECONFIG'),
    owned: isOwned,
  };
}

export function stopControlPlane(cp: ControlPlane): void {
  if (!cp.owned) return;
  execFileSync(join(scripts, 'stop.sh'), [cp.dir], { stdio: 'ignore' });
  const i = owned.indexOf(cp);
  if (i >= 0) owned.splice(i, 1);
}

// A test file that started control planes must not leave them running, whatever way it ends.
process.on('exit', () => {
  for (const cp of [...owned]) stopControlPlane(cp);
});

function readEnvFile(file: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^export ([A-Z_]+)=(?:'([^']*)'|(\S*))$/.exec(line);
    if (m?.[1] !== undefined) out.set(m[1], m[2] ?? m[3] ?? '');
  }
  return out;
}

/** One admin request (static token, the control plane's CA); independent of the code under test. */
export function apiRequest(
  cp: ControlPlane,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<ApiAnswer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(cp.url + path),
      {
        method,
        ca: readFileSync(cp.ca),
        headers: {
          Authorization: `Bearer ${cp.token}`,
          Accept: 'application/json',
          ...(payload === undefined ? {} : { 'Content-Type': contentType, 'Content-Length': payload.length }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: parseBody(text) });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text; // /readyz and friends answer plain text
  }
}

/** Like apiRequest, but a non-2xx answer is an error that says what failed. */
export async function api(
  cp: ControlPlane,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<unknown> {
  const res = await apiRequest(cp, method, path, body, contentType);
  if (res.status < 200 || res.status >= 300) {
    throw new Error(
      `${method} ${path}: HTTP ${res.status} ${res.body === undefined ? '(no body)' : JSON.stringify(res.body).slice(0, 500)}`,
    );
  }
  return res.body;
}

/**
 * Returns once the API server's watch cache holds `resourceVersion` of the object at `path` (a GET not older than
 * it waits for that): a read the plugin serves from the cache then sees the write that made it.
 */
export async function cacheHolds(cp: ControlPlane, path: string, resourceVersion: string): Promise<void> {
  await api(cp, 'GET', `${path}?resourceVersion=${encodeURIComponent(resourceVersion)}`);
}

/**
 * Creates the object and returns once the API server's watch cache holds it. The plugin reads a NodeSlicePool from
 * that cache, and a node's first read (`?resourceVersion=0`) takes whatever the cache has: within the watch's delay
 * after the create, nothing yet.
 */
export async function createCached(
  ns: Namespace,
  plural: WhereaboutsPlural,
  object: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const created = await ns.create(plural, object);
  const { name, resourceVersion } = created['metadata'] as { name: string; resourceVersion: string };
  await cacheHolds(ns.cp, ns.path(plural, name), resourceVersion);
  return created;
}

export const WHEREABOUTS = '/apis/whereabouts.cni.cncf.io/v1alpha1';
export const PLURALS = ['ippools', 'overlappingrangeipreservations', 'nodeslicepools'] as const;
export type WhereaboutsPlural = (typeof PLURALS)[number];

export interface Namespace {
  readonly cp: ControlPlane;
  readonly name: string;
  /** A kubeconfig for the admin user whose current context's namespace is this one. */
  readonly kubeconfig: string;
  /** A scratch directory removed by cleanup() (cache dirs, logs). */
  readonly dir: string;
  path(plural: WhereaboutsPlural, name?: string): string;
  list(plural: WhereaboutsPlural): Promise<Array<Record<string, unknown>>>;
  get(plural: WhereaboutsPlural, name: string): Promise<Record<string, unknown> | undefined>;
  create(plural: WhereaboutsPlural, object: Record<string, unknown>): Promise<Record<string, unknown>>;
  cleanup(): Promise<void>;
}

/** A fresh namespace with its own kubeconfig; cleanup() deletes our objects in it and the namespace. */
export async function createNamespace(cp: ControlPlane, prefix = 'ht'): Promise<Namespace> {
  const name = `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  await api(cp, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const dir = mkdtempSync(join(tmpdir(), `hereabouts-${name}-`));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(cp, name), { mode: 0o600 });
  const path = (plural: WhereaboutsPlural, object?: string) =>
    `${WHEREABOUTS}/namespaces/${name}/${plural}${object === undefined ? '' : `/${encodeURIComponent(object)}`}`;
  return {
    cp,
    name,
    kubeconfig,
    dir,
    path,
    async list(plural) {
      const body = (await api(cp, 'GET', path(plural))) as { items: Array<Record<string, unknown>> };
      return body.items;
    },
    async get(plural, object) {
      const res = await apiRequest(cp, 'GET', path(plural, object));
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw new Error(`GET ${plural}/${object}: HTTP ${res.status}`);
      return res.body as Record<string, unknown>;
    },
    async create(plural, object) {
      return (await api(cp, 'POST', path(plural), object)) as Record<string, unknown>;
    },
    async cleanup() {
      for (const plural of PLURALS) await api(cp, 'DELETE', path(plural));
      // Without a controller-manager the namespace stays Terminating; it is empty, which is what matters.
      await api(cp, 'DELETE', `/api/v1/namespaces/${name}`);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function kubeconfigFor(
  cp: ControlPlane,
  namespace: string,
  user: { token?: string; tokenFile?: string } = {},
): string {
  const credential = user.tokenFile !== undefined ? `tokenFile: ${user.tokenFile}` : `token: ${user.token ?? cp.token}`;
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: test',
    '    cluster:',
    `      server: ${cp.url}`,
    `      certificate-authority: ${cp.ca}`,
    'users:',
    '  - name: test',
    '    user:',
    `      ${credential}`,
    'contexts:',
    '  - name: test',
    '    context:',
    '      cluster: test',
    '      user: test',
    `      namespace: ${namespace}`,
    'current-context: test',
    '',
  ].join('\n');
}
