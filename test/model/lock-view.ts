// The node agent and a plain plugin process of one node judge each other's pool locks (src/fs/lock.ts). The
// model's processes all run in this one process, so the judge would see a holder alive in its own pid namespace;
// when the shipped DaemonSet leaves the agent in a pid namespace of its own (no hostPID), the lock records of the
// holder are rewritten to say so, as they would read from the other side, and dated on the model's wall clock.
// The waiter's judgement is then what it would be on a node: liveness it cannot see, and the lock's age.
import { readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../src/log/logger.ts';
import type { Violation } from './invariants.ts';
import { warningsTo } from './processes.ts';

/** A pid namespace none of the model's processes is in: the agent's, seen from the host (or the reverse). */
const OTHER_NAMESPACE = 'pid:[4026599999]';

const DAEMONSETS = ['../../deploy/daemonset.yaml', '../../deploy/helm/hereabouts/templates/daemonset.yaml'].map((p) =>
  fileURLToPath(new URL(p, import.meta.url)),
);

/** Whether every shipped DaemonSet runs the agent in the host's pid namespace (hostPID: true). */
export function agentSharesHostPids(): boolean {
  return DAEMONSETS.every((path) => /^\s*hostPID:\s*true\b/m.test(readFileSync(path, 'utf8')));
}

function lockFiles(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...lockFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.lock')) out.push(path);
  }
  return out;
}

/**
 * The locks held under `dir` now, as a process in the other pid namespace reads them: the holder's pid namespace
 * is not its own, and the lock was last refreshed at the model's wall-clock now. Returns how many were rewritten.
 */
export function viewFromOtherNamespace(dir: string): number {
  let n = 0;
  for (const path of lockFiles(dir)) {
    let owner: Record<string, unknown>;
    try {
      owner = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    } catch {
      continue; // not an owner record this model knows: left as it is
    }
    if (typeof owner['pidns'] !== 'string') continue;
    writeFileSync(path, `${JSON.stringify({ ...owner, pidns: OTHER_NAMESPACE })}\n`);
    const now = new Date();
    utimesSync(path, now, now);
    n++;
  }
  return n;
}

export interface StallScenario {
  /** The node, and the pods of the two ADDs. */
  readonly where: string;
  readonly holder: string;
  readonly waiter: string;
  /** The node's cache directory (where its pool locks are). */
  readonly cacheDir: string;
  /** Holder and waiter in different pid namespaces (the agent and a plain plugin process). */
  readonly split: boolean;
  /** The holder's ADD, its process stalled while it holds the pool's lock. */
  readonly hold: () => Promise<string>;
  /** The waiter's ADD, logging to `log`. */
  readonly wait: (log: Logger) => Promise<string>;
  /** Moves the wall clock on by the stall's length, as the waiter starts. */
  readonly age: () => void;
}

/**
 * Two ADDs of one node's pool at once, the first stalled holding the lock; across pid namespaces when `split` (and
 * the shipped DaemonSet does not share the host's), as the waiter would judge it there. A lock taken from a holder
 * that still runs is a violation: the lock must never have two holders.
 */
export async function stallHoldingLock(s: StallScenario): Promise<{ outcome: string; violation?: Violation }> {
  let holderRunning = true;
  const warnings: string[] = [];
  const split = s.split && !agentSharesHostPids();
  const holder = s.hold().finally(() => (holderRunning = false));
  const waiter = new Promise<string>((resolve) =>
    setTimeout(() => {
      if (split) viewFromOtherNamespace(s.cacheDir);
      s.age();
      const log = warningsTo(warnings);
      resolve(s.wait({ ...log, warning: (msg) => log.warning(holderRunning ? `[holder running] ${msg}` : msg) }));
    }, 5),
  );
  const outcome = (await Promise.all([holder, waiter])).join(' | ');
  const takeover = warnings.find((w) => w.startsWith('[holder running]') && /taking it over/.test(w));
  if (takeover === undefined) return { outcome };
  const across = split ? ' (another pid namespace)' : '';
  const message = `on ${s.where}, the ADD of ${s.waiter} took a pool lock held by the running ADD of ${s.holder}${across}: ${takeover.replace('[holder running] ', '')}`;
  return { outcome, violation: { invariant: 'lock', message } };
}
