// Helm (built from its Go module by scripts/tools/helm.sh into a cache outside the repo) and the chart's renderings.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { repoRoot } from '../../support/paths.ts';
import type { Manifest } from './kubectl.ts';

export const chartDir = join(repoRoot, 'deploy', 'helm', 'hereabouts');

/** The helm binary: built on first use (minutes), then found at once. */
export function helmBinary(): string {
  return execFileSync('bash', [join(repoRoot, 'scripts', 'tools', 'helm.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

// Helm's config, cache and data dirs in a scratch dir, never the user's.
const home = mkdtempSync(join(tmpdir(), 'hereabouts-helm-'));
const helmEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HELM_CONFIG_HOME: join(home, 'config'), HELM_CACHE_HOME: join(home, 'cache'), HELM_DATA_HOME: join(home, 'data') };

export interface HelmRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function helm(bin: string, ...args: string[]): HelmRun {
  const out = spawnSync(bin, args, { encoding: 'utf8', env: helmEnv, maxBuffer: 64 << 20 });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** The YAML of `helm template hereabouts <chart> --include-crds` with these values (a values file, so no --set quoting). */
export function templateYaml(bin: string, values: Record<string, unknown> = {}, ...extra: string[]): string {
  const file = join(home, `values-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(values));
  const out = helm(bin, 'template', 'hereabouts', chartDir, '--include-crds', '-f', file, ...extra);
  if (out.status !== 0) throw new Error(`helm template failed (${out.status}):\n${out.stderr}`);
  return out.stdout;
}

export function template(bin: string, values: Record<string, unknown> = {}, ...extra: string[]): Manifest[] {
  return (loadAll(templateYaml(bin, values, ...extra)) as Array<Manifest | null>).filter((o): o is Manifest => o !== null);
}

/** Labels Helm adds for its own bookkeeping (on object metadata only, never in selectors or pod templates). */
export const HELM_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/version', 'helm.sh/chart'];

/** An object without Helm's bookkeeping labels, for comparison with deploy/'s. */
export function withoutHelmLabels(o: Manifest): Manifest {
  const copy = structuredClone(o) as Manifest & { metadata: { labels?: Record<string, string> } };
  const labels = copy.metadata.labels;
  if (labels !== undefined) copy.metadata.labels = Object.fromEntries(Object.entries(labels).filter(([key]) => !HELM_LABELS.includes(key)));
  return copy;
}

export const keyOf = (o: Manifest): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
