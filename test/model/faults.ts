// Faults at every API call of one simulated process: 409s, 5xx (applied or not), timeouts before and after the
// server applied the request, and a process kill at a chosen call (the request is lost or applied, then every later
// call of that process fails: nothing it does afterwards reaches the server).
import { ApiClient, ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../src/kube/api.ts';
import { Prng } from './prng.ts';
import type { FaultKind } from '../support/memory-apiserver.ts';

/** Thrown by every call of a killed process. Not an API error: no code path may treat it as an answer. */
export class Killed extends Error {
  constructor(where: string) {
    super(`process killed at ${where}`);
    this.name = 'Killed';
  }
}

export interface FaultSpec {
  /** Seeds the per-request draws of this operation. */
  readonly seed: number;
  /** Probability of a fault per request. */
  readonly rate: number;
  /** Kill the process at its n-th request (0-based), before or after the server applied it. */
  readonly kill?: { readonly at: number; readonly after: boolean };
  /** A stalled process: its first two requests wait this long before they are sent (it holds its locks meanwhile). */
  readonly stallMs?: number;
  /**
   * In a node agent: the agent is SIGKILLed once the call's work is done, before its answer goes out and before any
   * grouped write it caused (a hand-out only in the journal): the call fails, and the runtime DELs the attachment.
   */
  readonly agentDies?: boolean;
}

export const NO_FAULTS: FaultSpec = { seed: 0, rate: 0 };

export interface FaultCounts {
  injected: number;
  kills: number;
  byKind: Record<string, number>;
  /** Sequences whose nodes ran node agents with warm sets, and what their agents did. */
  warm: {
    sequences: number;
    handedOut: number;
    released: number;
    groupWrites: number;
    agentsKilled: number;
    /** Agents killed right after a call's work, before its answer (FaultSpec.agentDies). */
    killedBeforeAnswer: number;
  };
  /** Claims' reconciles (claims.ts) and how they ended: an address or block held, one given back. */
  claims: { reconciles: number; ready: number; released: number };
  /** Sticky addresses (sticky.ts): what the sequences did with them. */
  sticky: StickyCounts;
}

export interface StickyCounts {
  /** Steps of StatefulSets, VMs and controller restarts that ran. */
  steps: number;
  /** Bindings seen given an address (once each per sequence). */
  bindings: number;
  /** ADDs of a sticky pod that found its binding's address (a re-created replica, a VM's next pod). */
  found: number;
  /** ... of those, on another node than the one that held it before. */
  elsewhere: number;
  /** Bound addresses the controller released. */
  released: number;
  /** Live migrations: a second virt-launcher pod's ADD while the first one ran. */
  migrations: number;
  restarts: number;
}

export function newFaultCounts(): FaultCounts {
  return {
    injected: 0,
    kills: 0,
    byKind: {},
    warm: { sequences: 0, handedOut: 0, released: 0, groupWrites: 0, agentsKilled: 0, killedBeforeAnswer: 0 },
    claims: { reconciles: 0, ready: 0, released: 0 },
    sticky: { steps: 0, bindings: 0, found: 0, elsewhere: 0, released: 0, migrations: 0, restarts: 0 },
  };
}

const status = (code: number, reason: string, message: string): ApiResponse => ({
  status: code,
  body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, message, code },
});

/** Hooks of the model around one process's requests (interleavings, lock views); both may be absent. */
export interface RequestHooks {
  /** Awaited before the request is sent (before any fault or kill): another step may run inside this one. */
  readonly before?: (req: ApiRequest) => Promise<void> | void;
  /** Told every answer this process receives. */
  readonly observe?: (req: ApiRequest, res: ApiResponse) => void;
}

/** Wraps a real or in-memory client; one instance per simulated process and operation. */
export class FaultyApi extends ApiClient {
  readonly #inner: ApiClient;
  readonly #spec: FaultSpec;
  readonly #prng: Prng;
  readonly #counts: FaultCounts;
  /** Called once, synchronously, at the moment of the kill (the caller snapshots the node's files). */
  readonly #onKill: () => void;
  readonly #hooks: RequestHooks;
  #index = 0;
  dead = false;
  /** Requests this process sent, for the failure report. */
  readonly trace: string[] = [];

  constructor(
    inner: ApiClient,
    spec: FaultSpec,
    options: { counts: FaultCounts; onKill?: () => void; hooks?: RequestHooks },
  ) {
    super(inner.endpoint, { timeoutMs: 10_000 });
    this.#inner = inner;
    this.#spec = spec;
    this.#prng = new Prng(spec.seed);
    this.#counts = options.counts;
    this.#onKill = options.onKill ?? (() => undefined);
    this.#hooks = options.hooks ?? {};
  }

  override async send(req: ApiRequest, options: { timeoutMs?: number } = {}): Promise<ApiResponse> {
    const where = `${req.method} ${req.path.replace(/^\/apis?\/[^]*?\/namespaces\/[^/]+\//, '')}`;
    if (this.dead) throw new Killed(`${where} (already dead)`);
    await this.#hooks.before?.(req);
    const res = await this.#send(req, options, where);
    this.#hooks.observe?.(req, res);
    return res;
  }

  async #send(req: ApiRequest, options: { timeoutMs?: number }, where: string): Promise<ApiResponse> {
    const n = this.#index++;
    this.requests++;
    if (this.#spec.stallMs !== undefined && n < 2) await new Promise((r) => setTimeout(r, this.#spec.stallMs));
    const kill = this.#spec.kill;
    if (kill !== undefined && kill.at === n) {
      if (kill.after) await this.#inner.send(req, options);
      this.dead = true;
      this.#counts.kills++;
      this.trace.push(`${where} -> KILLED${kill.after ? ' after apply' : ''}`);
      this.#onKill();
      throw new Killed(where);
    }
    const fault = this.#draw(req);
    if (fault !== 'pass') {
      this.#counts.injected++;
      this.#counts.byKind[fault] = (this.#counts.byKind[fault] ?? 0) + 1;
    }
    const write = req.method !== 'GET';
    switch (fault) {
      case 'pass': {
        const res = await this.#inner.send(req, options);
        this.trace.push(`${where} -> ${res.status}`);
        return res;
      }
      case 'conflict':
        this.trace.push(`${where} -> injected 409`);
        return status(
          409,
          'Conflict',
          'injected conflict: the object has been modified; please apply your changes to the latest version and try again',
        );
      case 'unavailable':
        this.trace.push(`${where} -> injected 503`);
        return status(503, 'ServiceUnavailable', 'injected: the server is currently unable to handle the request');
      case 'gateway-timeout':
        await this.#inner.send(req, options);
        this.trace.push(`${where} -> applied, injected 504`);
        return status(504, 'Timeout', 'injected: the server was unable to return a response in the time allotted');
      case 'timeout-before':
        this.trace.push(`${where} -> injected timeout (not applied)`);
        throw new ApiUnreachableError(`${where}: injected timeout before the server applied it`, { ambiguous: false });
      case 'timeout-after':
        await this.#inner.send(req, options);
        this.trace.push(`${where} -> applied, injected timeout`);
        throw new ApiUnreachableError(`${where}: injected timeout after the server applied it`, { ambiguous: write });
    }
  }

  #draw(req: ApiRequest): FaultKind {
    if (this.#spec.rate <= 0 || !this.#prng.chance(this.#spec.rate)) return 'pass';
    const write = req.method !== 'GET';
    // A 409 is only realistic where a precondition can fail: conditional updates and deletes with preconditions.
    const conditional =
      req.method === 'PUT' || req.method === 'PATCH' || (req.method === 'DELETE' && req.body !== undefined);
    const kinds: FaultKind[] = write
      ? [
          ...(conditional ? (['conflict'] as const) : []),
          'unavailable',
          'gateway-timeout',
          'timeout-before',
          'timeout-after',
        ]
      : ['unavailable', 'timeout-before'];
    return this.#prng.pick(kinds);
  }

  override close(): void {
    // The transport is shared by every simulated process: nothing to close per process.
  }
}
