// One simulated process of a node: a hereabouts CNI invocation (a KubernetesStore of its own, on the node's cache
// directory, behind a FaultyApi), or a Whereabouts plugin call (whereabouts.ts). A process killed at a request did
// nothing to its files afterwards: the node's cache directory is restored as it was at the kill.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { handOutsTo, SETTLE_ONLY } from '../../src/agent/settle-del.ts';
import { WARM_POLICY } from '../../src/agent/warm-setting.ts';
import { readPending } from '../../src/store/kubernetes/warm/journal.ts';
import { ApiClient, type ApiRequest, type ApiResponse } from '../../src/kube/api.ts';
import { WarmSets } from '../../src/store/kubernetes/warm/warm-sets.ts';
import { DEFAULT_WARM_BOUNDS } from '../../src/store/warm-target.ts';
import type { Logger } from '../../src/log/logger.ts';
import { WriteMemory } from '../../src/store/kubernetes/contention.ts';
import { KubernetesStore } from '../../src/store/kubernetes/kubernetes-store.ts';
import { FaultyApi, Killed, type FaultCounts, type FaultSpec, type RequestHooks } from './faults.ts';
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

/**
 * A node's agent with warm sets (DESIGN §11): the hereabouts calls of its node run in it. Its grouped writes go on
 * after the calls that caused them, through `background` (faults, no kills); a call killed in it kills the agent:
 * nothing of it runs any more, and the node's next call starts a new agent on the same journal.
 */
export interface NodeAgent {
  readonly warm: WarmSets;
  dead: boolean;
  background: FaultyApi;
}

/** A call's API in an agent: the call's process until it ends, then the agent's background writes; none once dead. */
class AgentApi extends ApiClient {
  readonly #agent: NodeAgent;
  readonly #call: FaultyApi;
  finished = false;

  constructor(agent: NodeAgent, call: FaultyApi) {
    super(call.endpoint, { timeoutMs: 10_000 });
    this.#agent = agent;
    this.#call = call;
  }

  override async send(req: ApiRequest, options: { timeoutMs?: number } = {}): Promise<ApiResponse> {
    if (this.#agent.dead) throw new Killed(`${req.method} ${req.path} (its agent was killed)`);
    const target = this.finished ? this.#agent.background : this.#call;
    try {
      return await target.send(req, options);
    } finally {
      if (target.dead) this.#agent.dead = true;
    }
  }
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
  /** Set: every node's hereabouts calls run in its agent, with warm sets; the fault rate of its background writes. */
  #warmRate: number | undefined;
  readonly #agents = new Map<string, NodeAgent>();
  /**
   * Nodes whose agent was SIGKILLed before an answer (FaultSpec.agentDies) and has not started again: a DEL there runs
   * in the plugin, which settles the journal's hand-outs of its container first (agent/settle-del.ts); the node's
   * next ADD starts the agent again.
   */
  readonly #down = new Set<string>();

  constructor(options: ProcessesOptions) {
    this.#o = options;
  }

  /** From now on the nodes' hereabouts calls run in node agents with warm sets. */
  useAgents(backgroundFaultRate: number): void {
    this.#warmRate = backgroundFaultRate;
    this.#o.counts.warm.sequences++;
  }

  /** The end of the sequence: every agent stops (its figures counted). */
  async closeAgents(): Promise<void> {
    for (const short of [...this.#agents.keys()]) this.killAgent(short, false);
  }

  get agents(): boolean {
    return this.#warmRate !== undefined;
  }

  /** The agents' journal directory of a node (its disk: it survives the agent, not a wiped machine). */
  journalDir(short: string): string {
    return join(this.#o.workDir, 'agents', short);
  }

  /** The node's agent is gone (its node left, or its machine was wiped): the next call starts another. */
  killAgent(short: string, killed = true): void {
    const agent = this.#agents.get(short);
    if (agent === undefined) return;
    agent.dead = true;
    this.#agents.delete(short);
    const stats = agent.warm.stats();
    const counts = this.#o.counts.warm;
    counts.handedOut += stats.handedOut;
    counts.released += stats.released;
    counts.groupWrites += stats.groupWrites;
    if (killed) counts.agentsKilled++;
    void agent.warm.close();
  }

  /** Until the live agents' grouped writes are done (each pool tried a few times; what fails stays pending). */
  async settleAgents(backgroundFaultRate?: number): Promise<void> {
    for (const agent of this.#agents.values()) {
      if (backgroundFaultRate !== undefined) agent.background = this.#background(backgroundFaultRate);
      if (!agent.dead) await agent.warm.settle();
    }
  }

  /** The agent's own requests: faults, but no kill and no interleaving hooks (no step waits on them). */
  #background(rate: number): FaultyApi {
    return new FaultyApi(this.#o.api, { seed: this.#seq++, rate }, { counts: this.#o.counts });
  }

  #agent(short: string): NodeAgent {
    const known = this.#agents.get(short);
    if (known !== undefined && !known.dead) return known;
    if (known !== undefined) this.killAgent(short); // killed in a background write
    const agent = this.#newAgent(short, DEFAULT_WARM_BOUNDS);
    this.#agents.set(short, agent);
    return agent;
  }

  /**
   * The host a DEL of `del` runs in on `short`: the node's agent; while it is down, the plugin with the journal's
   * hand-outs of that container to settle first (a host of its own, closed after the call), or without any.
   */
  #host(short: string, del: { readonly containerId: string; readonly ifname: string } | undefined) {
    if (this.#warmRate === undefined) return undefined;
    if (!this.#down.has(short) || del === undefined) {
      this.#down.delete(short);
      return { agent: this.#agent(short), settling: false };
    }
    let pending;
    try {
      pending = readPending(this.journalDir(short)) ?? [];
    } catch {
      return undefined; // a damaged journal: no agent replays it either
    }
    if (handOutsTo(pending, del.containerId, del.ifname).length === 0) return undefined;
    return { agent: this.#newAgent(short, SETTLE_ONLY), settling: true };
  }

  #newAgent(short: string, bounds: typeof DEFAULT_WARM_BOUNDS): NodeAgent {
    return {
      warm: new WarmSets({
        dir: this.journalDir(short),
        bounds,
        policy: WARM_POLICY,
        log:
          process.env['HEREABOUTS_MODEL_AGENT_LOG'] === '1'
            ? (msg) => console.error(`agent ${short}: ${msg}`)
            : () => undefined,
        // Every agent of the model runs in this one process: the journal's lock, judged by pid, would keep a node's
        // next agent off while its killed one is still referenced here.
        exclusive: false,
      }),
      dead: false,
      background: this.#background(this.#warmRate ?? 0),
    };
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
    options: {
      readonly reservations: boolean;
      readonly log?: Logger;
      /** The attachment a DEL is for (a plugin DEL while the node's agent is down settles its hand-outs first). */
      readonly del?: { readonly containerId: string; readonly ifname: string };
    },
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
    const host = this.#host(where.short, options.del);
    const agent = host?.agent;
    const callApi = agent === undefined ? api : new AgentApi(agent, api);
    const store = new KubernetesStore({
      api: callApi,
      node: where.node,
      cacheDir: dir,
      reservations: options.reservations,
      log: options.log ?? quiet,
      budgetMs: 5_000,
      cleanupTimeoutMs: 2_000,
      memory: new WriteMemory(),
      // The leader_* keys of the networks' configs, the same as the model's Whereabouts plugins run with.
      whereaboutsLease: HEREABOUTS_LEASE_TIMING,
      ...(agent === undefined ? {} : { warm: agent.warm }),
    });
    try {
      const value = await fn(store);
      if (faults.agentDies === true && host?.settling === false && !host.agent.dead) {
        // SIGKILLed before the answer, and before the grouped write the call scheduled (setImmediate) ran.
        this.killAgent(where.short);
        this.#down.add(where.short);
        this.#o.counts.warm.killedBeforeAnswer++;
        return { ok: false, error: new Killed('its node agent, before the answer went out'), killed: true };
      }
      // A process killed at a request whose failure it then put up with (a best-effort follow-up) never answered.
      if (api.dead || agent?.dead === true)
        return { ok: false, error: new Killed('an earlier request (no answer went out)'), killed: true };
      return { ok: true, value };
    } catch (error) {
      // A call in an agent another call's kill took down was killed with it.
      return { ok: false, error, killed: api.dead || agent?.dead === true };
    } finally {
      if (callApi instanceof AgentApi) callApi.finished = true;
      // The plugin's settling host goes with the plugin (its writes done, the warm addresses it took over given back).
      if (host?.settling === true) {
        if (api.dead) host.agent.dead = true; // killed: nothing more of it runs
        await host.agent.warm.close();
      } else if (api.dead && agent !== undefined) this.killAgent(where.short); // the agent was the process killed
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
