// A fake node for `hereabouts install`: the host's CNI dirs and the pod's service-account volume in a temp dir, and
// the packaged executable run as the DaemonSet runs it.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../../support/paths.ts';

export interface ServiceAccountFiles {
  readonly token: string;
  readonly ca: string;
  readonly namespace: string;
}

export interface FakeNode {
  readonly root: string;
  readonly binDir: string;
  readonly confDir: string;
  readonly saDir: string;
  /** hereabouts.d under confDir. */
  readonly filesDir: string;
}

export function fakeNode(sa: ServiceAccountFiles): FakeNode {
  const root = mkdtempSync(join(tmpdir(), 'hab-install-'));
  const node = {
    root,
    binDir: join(root, 'opt/cni/bin'),
    confDir: join(root, 'etc/cni/net.d'),
    saDir: join(root, 'sa'),
    filesDir: join(root, 'etc/cni/net.d/hereabouts.d'),
  };
  for (const dir of [node.binDir, node.confDir, node.saDir]) mkdirSync(dir, { recursive: true });
  writeServiceAccount(node, sa);
  return node;
}

export function writeServiceAccount(node: FakeNode, sa: Partial<ServiceAccountFiles>): void {
  if (sa.token !== undefined) writeFileSync(join(node.saDir, 'token'), sa.token);
  if (sa.ca !== undefined) writeFileSync(join(node.saDir, 'ca.crt'), sa.ca);
  if (sa.namespace !== undefined) writeFileSync(join(node.saDir, 'namespace'), sa.namespace);
}

/**
 * `install` with the node's dirs; the host sees the config dir at `hostConfDir` (default: where it really is). The node
 * agent listens in the fake node too (never at the host's default socket, which real plugin calls would find).
 */
export function installArgs(
  node: FakeNode,
  options: { hostConfDir?: string; extra?: readonly string[] } = {},
): string[] {
  return [
    'install',
    '--cni-bin-dir',
    node.binDir,
    '--cni-conf-dir',
    node.confDir,
    '--host-cni-conf-dir',
    options.hostConfDir ?? node.confDir,
    '--service-account-dir',
    node.saDir,
    ...(options.extra?.includes('--agent-socket') === true
      ? []
      : ['--agent-socket', join(node.root, 'run', 'agent.sock')]),
    // The agent's journal in the node's root, never the host's default directory.
    ...(options.extra?.some((a) => a.startsWith('--warm-dir')) === true
      ? []
      : ['--warm-dir', join(node.root, 'var', 'lib', 'cni', 'hereabouts', 'agent')]),
    ...(options.extra ?? []),
  ];
}

export interface PodEnv {
  readonly KUBERNETES_SERVICE_HOST?: string;
  readonly KUBERNETES_SERVICE_PORT?: string;
  readonly NODENAME?: string;
}

export function installOnce(args: readonly string[], env: PodEnv): { code: number | null; stderr: string } {
  const run = spawnSync(requireBinary(), [...args, '--once'], { env: { ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stderr: run.stderr };
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** A long-running installer and what it has said on stderr so far. */
export interface RunningInstaller {
  readonly child: ChildProcessWithoutNullStreams;
  stderr(): string;
  exit(): Promise<number | null>;
}

export function startInstaller(args: readonly string[], env: PodEnv): RunningInstaller {
  const child = spawn(requireBinary(), [...args], { env: { ...env } });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  // 'close', not 'exit': the last lines of stderr may still be in the pipe when the process has exited.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stderr: () => stderr, exit: () => exited };
}

/** Waits up to 10 s for `check`; the failure message carries the installer's log. */
export async function waitFor(check: () => boolean, what: string, installer: RunningInstaller): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(check(), `${what}; the installer said:\n${installer.stderr()}`);
}
