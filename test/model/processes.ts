// One simulated process of a node: a hereabouts CNI invocation (a KubernetesStore of its own, on the node's cache
// directory, behind a FaultyApi), or a Whereabouts plugin call (whereabouts.ts). A process killed at a request did
// nothing to its files afterwards: the node's cache directory is restored as it was at the kill.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from '../../src/kube/api.ts';
import type { Logger } from '../../src/log/logger.ts';
import { WriteMemory } from '../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../src/store/kubernetes/kubernetes-store.ts';
import { FaultyApi, type FaultCounts, type FaultSpec, type RequestHooks } from './faults.ts';
import { HEREABOUTS_LEASE_TIMING } from './whereabouts-lease.ts';

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown; killed: boolean };

export const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warning: () => undefined,
  error: () => undefined,
};

/** A logger that keeps the warnings (the lock's takeovers are logged there). */
export function warningsTo(lines: string[]): Logger {
  return { ...quiet, warning: (msg: string) => void lines.push(msg) };
}

export interface ProcessesOptions {
  readonly api: ApiClient;
  readonly workDir: string;
  readonly counts: FaultCounts;
  /** The model's hooks for the process started now (an interleaving under way), if any. */
  readonly hooks: () => RequestHooks | undefined;
}

export class Processes {
  readonly #o: ProcessesOptions;
  #seq = 0;

  constructor(options: ProcessesOptions) {
    this.#o = options;
  }

  cacheDir(node: string): string {
    return join(this.#o.workDir, 'nodes', node);
  }

  /** A process with faults and kills, for `fn` (the controller's pass, a Whereabouts call). */
  faulty(faults: FaultSpec, onKill?: () => void): FaultyApi {
    const hooks = this.#o.hooks();
    return new FaultyApi(this.#o.api, faults, {
      counts: this.#o.counts,
      ...(onKill === undefined ? {} : { onKill }),
      ...(hooks === undefined ? {} : { hooks }),
    });
  }

  /** One hereabouts CNI invocation on `short` (node name `node`). */
  async hereabouts<T>(
    where: { readonly short: string; readonly node: string },
    faults: FaultSpec,
    options: { readonly reservations: boolean; readonly log?: Logger },
    fn: (store: KubernetesStore) => Promise<T>,
  ): Promise<Outcome<T>> {
    const dir = this.cacheDir(where.short);
    mkdirSync(dir, { recursive: true });
    const frozen = join(this.#o.workDir, `frozen-${where.short}-${this.#seq++}`);
    const api = this.faulty(faults, () =>
      cpSync(dir, frozen, {
        recursive: true,
        filter: (src) => !src.endsWith('.lock') && !src.includes('.lock/') && !src.endsWith('.reclaim'),
      }),
    );
    const store = new KubernetesStore({
      api,
      node: where.node,
      cacheDir: dir,
      reservations: options.reservations,
      log: options.log ?? quiet,
      budgetMs: 5_000,
      cleanupTimeoutMs: 2_000,
      memory: new WriteMemory(),
      // The leader_* keys of the networks' configs, the same as the model's Whereabouts plugins run with.
      whereaboutsLease: HEREABOUTS_LEASE_TIMING,
    });
    try {
      return { ok: true, value: await fn(store) };
    } catch (error) {
      return { ok: false, error, killed: api.dead };
    } finally {
      if (api.dead) {
        // The process died at the kill: whatever it did to its files afterwards never happened.
        rmSync(dir, { recursive: true, force: true });
        cpSync(frozen, dir, { recursive: true });
        rmSync(frozen, { recursive: true, force: true });
      }
    }
  }

  /** One Whereabouts plugin call: no injected faults (its own handling of them is not what the model checks). */
  async whereabouts<T>(faults: FaultSpec, fn: (api: ApiClient) => Promise<T>): Promise<Outcome<T>> {
    const api = this.faulty({
      seed: faults.seed,
      rate: 0,
      ...(faults.kill === undefined ? {} : { kill: faults.kill }),
    });
    try {
      return { ok: true, value: await fn(api) };
    } catch (error) {
      return { ok: false, error, killed: api.dead };
    }
  }
}

export function errorLine(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.split('\n')[0]!.slice(0, 200);
}
